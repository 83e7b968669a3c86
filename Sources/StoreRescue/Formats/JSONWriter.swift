/// Writes a `JSONValue` for people to read and edit: two-space indentation, members in their
/// given order, and any array or object that fits on one line written on one line (so a catalog
/// shows one attribute per line).
enum JSONWriter {
    static let lineWidth = 100

    static func write(_ value: JSONValue) -> String {
        var out = ""
        write(value, indent: 0, into: &out)
        out += "\n"
        return out
    }

    /// - Parameter column: where on its line the value starts (after indentation and any key).
    private static func write(_ value: JSONValue, indent: Int, column: Int? = nil, into out: inout String) {
        let compact = compactForm(value)
        if (column ?? indent) + compact.count <= lineWidth || isScalar(value) {
            out += compact
            return
        }
        let padding = String(repeating: " ", count: indent + 2)
        switch value {
        case .array(let elements):
            out += "[\n"
            for (index, element) in elements.enumerated() {
                out += padding
                write(element, indent: indent + 2, into: &out)
                out += index == elements.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case .object(let members):
            out += "{\n"
            for (index, member) in members.enumerated() {
                let key = quoted(member.key) + ": "
                out += padding + key
                write(member.value, indent: indent + 2, column: indent + 2 + key.count, into: &out)
                out += index == members.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        default:
            out += compact
        }
    }

    private static func isScalar(_ value: JSONValue) -> Bool {
        switch value {
        case .array(let elements): return elements.isEmpty
        case .object(let members): return members.isEmpty
        default: return true
        }
    }

    /// The value on one line, with `", "` and `": "` separators.
    static func compactForm(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let literal): return literal
        case .string(let text): return quoted(text)
        case .array(let elements): return "[" + elements.map(compactForm).joined(separator: ", ") + "]"
        case .object(let members):
            return "{" + members.map { quoted($0.key) + ": " + compactForm($0.value) }.joined(separator: ", ") + "}"
        }
    }

    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped,
    /// everything else (including non-ASCII) written as is.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
