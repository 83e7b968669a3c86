import Foundation

extension ModelArchiveDecoder {
    /// An archived `NSDefaultValue` as the string an `.xcdatamodel` would hold
    /// (`defaultValueString`), or nil for a value with no simple string form (binary data,
    /// transformable objects).
    ///
    /// Booleans become `YES`/`NO`; numbers their decimal form; `NSString`, `NSUUID` (uppercase),
    /// `NSDecimalNumber`, `NSDate` (ISO 8601) and `NSURL` objects their text.
    ///
    /// - Throws: only for references that lead outside the archive; a value of an unexpected shape
    ///   gives nil, since default values do not affect the version hash.
    static func defaultValueString(_ node: KeyedArchiveNode, type: AttributeType) throws -> String? {
        switch node.value {
        case .string(let string): return string
        case .boolean(let flag): return flag ? "YES" : "NO"
        case .integer(let number): return type == .boolean ? (number != 0 ? "YES" : "NO") : String(number)
        case .real(let number): return String(number)
        case .date(let date): return PropertyListValue.iso8601(date)
        case .data, .array, .uid: return nil
        case .dictionary: break
        }
        guard case .dictionary(let fields) = node.value, fields["$class"] != nil else { return nil }
        if try node.isKind(of: "NSString") { return try node.string() }
        if try node.isKind(of: "NSUUID") {
            guard let bytes = try node.child("NS.uuidbytes")?.value.data, bytes.count == 16 else { return nil }
            let b = [UInt8](bytes)
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])).uuidString
        }
        if try node.isKind(of: "NSDecimalNumberPlaceholder") || node.isKind(of: "NSDecimalNumber") {
            return try decimalString(node)
        }
        if try node.isKind(of: "NSDate") {
            guard case .real(let seconds) = try node.child("NS.time")?.value else { return nil }
            return PropertyListValue.iso8601(Date(timeIntervalSinceReferenceDate: seconds))
        }
        if try node.isKind(of: "NSURL"), try node.child("NS.base") == nil {
            return try node.child("NS.relative")?.string()
        }
        return nil
    }

    /// The text of an archived `NSDecimalNumber`: mantissa (up to eight 16-bit words) × 10^exponent.
    static func decimalString(_ node: KeyedArchiveNode) throws -> String? {
        guard let mantissa = try node.child("NS.mantissa")?.value.data,
            let length = try node.child("NS.length")?.integer(),
            let exponent = try node.child("NS.exponent")?.integer(),
            (0...8).contains(length), (-128...127).contains(exponent), mantissa.count >= Int(length) * 2
        else { return nil }
        let isNegative = try node.child("NS.negative")?.bool() ?? false
        let littleEndian = (try node.child("NS.mantissa.bo")?.integer() ?? 1) == 1
        if length == 0 { return isNegative ? "NaN" : "0" }
        let bytes = [UInt8](mantissa)
        // Words, least significant first.
        var words: [UInt32] = (0..<Int(length)).map { index in
            let low = UInt32(bytes[2 * index]), high = UInt32(bytes[2 * index + 1])
            return littleEndian ? high << 8 | low : low << 8 | high
        }
        var digits: [UInt8] = []
        while words.contains(where: { $0 != 0 }) {
            var remainder: UInt32 = 0
            for index in words.indices.reversed() {
                let current = remainder << 16 | words[index]
                words[index] = current / 10
                remainder = current % 10
            }
            digits.append(UInt8(remainder))
        }
        var text = String(digits.reversed().map { Character(String($0)) })
        if text.isEmpty { return "0" }
        if exponent >= 0 {
            text += String(repeating: "0", count: Int(exponent))
        } else {
            let scale = Int(-exponent)
            if text.count <= scale { text = String(repeating: "0", count: scale - text.count + 1) + text }
            var fraction = String(text.suffix(scale))
            let whole = String(text.dropLast(scale))
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text = fraction.isEmpty ? whole : whole + "." + fraction
        }
        return (isNegative ? "-" : "") + text
    }
}
