/// The order people give numbered names: "Model", "Model 2", "Model 3", …, "Model 10".
///
/// Model versions carry no order of their own (format notes §5); by convention Xcode names them
/// "Model", "Model 2", … and a name that is a prefix of another (the unnumbered first version)
/// comes first. Runs of ASCII digits compare by value, everything else by Unicode code point;
/// names that still tie ("Model 02" and "Model 2") fall back to code-point order.
enum NaturalOrder {
    static func areInIncreasingOrder(_ lhs: String, _ rhs: String) -> Bool {
        let left = chunks(lhs), right = chunks(rhs)
        for (a, b) in zip(left, right) where a != b {
            if a.isNumber && b.isNumber {
                let x = a.text.drop { $0 == "0" }, y = b.text.drop { $0 == "0" }
                if x.count != y.count { return x.count < y.count }
                if !x.elementsEqual(y) { return x.lexicographicallyPrecedes(y) }
            } else {
                return a.text.lexicographicallyPrecedes(b.text)
            }
        }
        if left.count != right.count { return left.count < right.count }
        return lhs.unicodeScalars.lexicographicallyPrecedes(rhs.unicodeScalars)
    }

    private struct Chunk: Equatable {
        var text: Substring.UnicodeScalarView
        var isNumber: Bool

        static func == (a: Chunk, b: Chunk) -> Bool {
            a.isNumber == b.isNumber && a.text.elementsEqual(b.text)
        }
    }

    /// The name split into alternating runs of ASCII digits and of anything else.
    private static func chunks(_ name: String) -> [Chunk] {
        var result: [Chunk] = []
        let scalars = Substring(name).unicodeScalars
        var start = scalars.startIndex
        while start < scalars.endIndex {
            let isNumber = isDigit(scalars[start])
            var end = scalars.index(after: start)
            while end < scalars.endIndex, isDigit(scalars[end]) == isNumber { end = scalars.index(after: end) }
            result.append(Chunk(text: scalars[start..<end], isNumber: isNumber))
            start = end
        }
        return result
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value >= 0x30 && scalar.value <= 0x39
    }
}
