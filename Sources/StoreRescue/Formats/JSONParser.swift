import Foundation

/// Where and why a JSON document is malformed (lines and columns count from 1; columns in bytes).
struct JSONParseError: Error, Equatable, Sendable {
    var line: Int
    var column: Int
    var reason: String
}

/// A strict RFC 8259 parser that keeps member order and number literals, reports the line and
/// column of the first error, refuses repeated keys (a catalog with two `"name"`s is a mistake,
/// not something to resolve silently) and bounds nesting so hostile input cannot exhaust the stack.
struct JSONParser {
    static let maximumDepth = 128

    private let bytes: [UInt8]
    private var offset = 0

    /// Parses one JSON value filling the whole input (an optional UTF-8 byte-order mark and
    /// surrounding white space allowed).
    static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: [UInt8](data))
        if parser.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.offset = 3 }
        parser.skipWhitespace()
        guard parser.offset < parser.bytes.count else { throw parser.error("the document is empty") }
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.offset == parser.bytes.count else { throw parser.error("unexpected content after the end of the document") }
        return value
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private func error(_ reason: String, at position: Int? = nil) -> JSONParseError {
        let end = min(position ?? offset, bytes.count)
        var line = 1, lineStart = 0
        for index in 0..<end where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        return JSONParseError(line: line, column: end - lineStart + 1, reason: reason)
    }

    private var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { offset += 1 }
    }

    private func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "the end of the document" }
        if byte >= 0x21 && byte < 0x7F { return "\"\(Character(Unicode.Scalar(byte)))\"" }
        return String(format: "byte 0x%02X", byte)
    }

    private mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        switch current {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case let byte? where byte == UInt8(ascii: "-") || (byte >= 0x30 && byte <= 0x39): return .number(try number())
        default: throw error("expected a value, found \(describe(current))")
        }
    }

    private mutating func literal(_ word: String) throws(JSONParseError) {
        let expected = Array(word.utf8)
        guard bytes[offset...].starts(with: expected) else { throw error("expected \(word)") }
        offset += expected.count
    }

    private mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        offset += 1
        var members: [JSONMember] = []
        // Repeated keys: a scan of the few members an object usually has, a set past 16.
        var keys: Set<String> = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            offset += 1
            return .object([])
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a key in quotes, found \(describe(current))") }
            let keyStart = offset
            let key = try string()
            let isRepeated: Bool
            if members.count < 16 {
                isRepeated = members.contains { $0.key == key }
            } else {
                if keys.isEmpty { keys = Set(members.map(\.key)) }
                isRepeated = !keys.insert(key).inserted
            }
            guard !isRepeated else { throw error("the key \"\(key)\" appears twice in one object", at: keyStart) }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected \":\" after the key \"\(key)\", found \(describe(current))") }
            offset += 1
            skipWhitespace()
            members.append(JSONMember(key, try value(depth: depth)))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"): offset += 1; return .object(members)
            default: throw error("expected \",\" or \"}\" after a member, found \(describe(current))")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            offset += 1
            return .array([])
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"): offset += 1; return .array(elements)
            default: throw error("expected \",\" or \"]\" after an element, found \(describe(current))")
            }
        }
    }

    private mutating func string() throws(JSONParseError) -> String {
        let start = offset
        offset += 1
        // Fast path: most strings have no escape; decode the whole run at once.
        var end = offset
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 {
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            guard let text = String(validating: bytes[offset..<end], as: UTF8.self) else {
                throw error("a string is not valid UTF-8", at: start)
            }
            offset = end + 1
            return text
        }
        var text = ""
        var runStart = offset
        func flush(_ runEnd: Int) throws(JSONParseError) {
            guard runEnd > runStart else { return }
            guard let run = String(validating: bytes[runStart..<runEnd], as: UTF8.self) else {
                throw error("a string is not valid UTF-8", at: start)
            }
            text += run
        }
        while true {
            guard let byte = current else { throw error("a string is not closed", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                try flush(offset)
                offset += 1
                return text
            case UInt8(ascii: "\\"):
                try flush(offset)
                offset += 1
                text.unicodeScalars.append(try escape())
                runStart = offset
            case 0..<0x20:
                throw error("a control character (\(describe(byte))) inside a string must be escaped")
            default:
                offset += 1
            }
        }
    }

    private mutating func escape() throws(JSONParseError) -> Unicode.Scalar {
        guard let byte = current else { throw error("a string is not closed") }
        offset += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let high = try hexQuad()
            if (0xD800..<0xDC00).contains(high) {
                guard bytes[offset...].starts(with: Array("\\u".utf8)) else { throw error("an unpaired UTF-16 surrogate in \\u escapes") }
                offset += 2
                let low = try hexQuad()
                guard (0xDC00..<0xE000).contains(low),
                    let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                else { throw error("an unpaired UTF-16 surrogate in \\u escapes") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(high) else { throw error("an unpaired UTF-16 surrogate in \\u escapes") }
            return scalar
        default:
            throw error("unknown escape \\\(describe(byte))", at: offset - 2)
        }
    }

    private mutating func hexQuad() throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Self.hexDigit(byte) else { throw error("\\u must be followed by four hexadecimal digits") }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: return UInt32(byte - 0x30)
        case 0x41...0x46: return UInt32(byte - 0x41 + 10)
        case 0x61...0x66: return UInt32(byte - 0x61 + 10)
        default: return nil
        }
    }

    private mutating func number() throws(JSONParseError) -> String {
        let start = offset
        func digits() -> Int {
            let from = offset
            while let byte = current, byte >= 0x30 && byte <= 0x39 { offset += 1 }
            return offset - from
        }
        if current == UInt8(ascii: "-") { offset += 1 }
        let integerStart = offset
        let integerDigits = digits()
        guard integerDigits > 0 else { throw error("a number needs digits after \"-\"", at: start) }
        if integerDigits > 1 && bytes[integerStart] == 0x30 { throw error("a number cannot start with 0 followed by digits", at: start) }
        if current == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw error("a number needs digits after \".\"", at: start) }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw error("a number needs digits in its exponent", at: start) }
        }
        return String(decoding: bytes[start..<offset], as: UTF8.self)
    }
}
