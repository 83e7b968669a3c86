import Foundation
import Testing
@testable import StoreRescue

/// The catalog's JSON reader: member order and number literals kept, strict grammar, errors with
/// line and column, and a writer whose output reads back to the same value.
struct JSONParserTests {
    static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try JSONParser.parse(Data(text.utf8))
    }

    static func failure(_ text: String) -> JSONParseError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func keepsOrderLiteralsAndEscapes() throws {
        let value = try Self.parse("\u{FEFF} {\"z\": 1, \"a\": [true, false, null, -0.5e+3, 10], \"s\": \"\\u00e9\\ud83d\\ude00\\n\\\"/\\/\"} ")
        guard case .object(let members) = value else {
            Issue.record("not an object: \(value)")
            return
        }
        #expect(members.map(\.key) == ["z", "a", "s"])
        #expect(value["z"] == .number("1"))
        #expect(value["a"] == .array([.bool(true), .bool(false), .null, .number("-0.5e+3"), .number("10")]))
        #expect(value["s"] == .string("é😀\n\"//"))
    }

    @Test(arguments: [
        ("{\"a\": 1,\n \"b\": 2,}", 2, 9, "expected a key in quotes, found \"}\""),
        ("{\"a\": 1\n \"b\": 2}", 2, 2, "expected \",\" or \"}\" after a member, found \"\"\""),
        ("{\"a\": 1, \"a\": 2}", 1, 10, "the key \"a\" appears twice in one object"),
        ("[1, 2", 1, 6, "expected \",\" or \"]\" after an element, found the end of the document"),
        ("\"abc", 1, 1, "a string is not closed"),
        ("\"a\\qb\"", 1, 3, "unknown escape \\\"q\""),
        ("[01]", 1, 2, "a number cannot start with 0 followed by digits"),
        ("[1.]", 1, 2, "a number needs digits after \".\""),
        ("{\"a\": tru}", 1, 7, "expected true"),
        ("\"\\ud800\"", 1, 8, "an unpaired UTF-16 surrogate in \\u escapes"),
        ("{} {}", 1, 4, "unexpected content after the end of the document"),
        ("  ", 1, 3, "the document is empty"),
        ("[\"a\tb\"]", 1, 4, "a control character (byte 0x09) inside a string must be escaped"),
    ])
    func errorsNameLineAndColumn(text: String, line: Int, column: Int, reason: String) {
        let error = Self.failure(text)
        #expect(error == JSONParseError(line: line, column: column, reason: reason), "\(text)")
    }

    @Test func invalidUTF8AndDeepNestingAreRefused() {
        let invalid = JSONParser.parseResult(Data([0x22, 0xC3, 0x28, 0x22]))
        #expect(invalid?.reason == "a string is not valid UTF-8")
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(Self.failure(deep)?.reason == "nested deeper than 128 levels")
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(Self.failure(fine) == nil)
    }

    @Test func writerOutputReadsBackUnchanged() throws {
        let long = JSONValue.array((0..<30).map { .string("element number \($0)") })
        let value = JSONValue.object([
            JSONMember("b", .string("quote \" backslash \\ newline \n tab \t bell \u{7} é")),
            JSONMember("a", .array([])), JSONMember("c", .object([])), JSONMember("long", long),
            JSONMember("short", .array([.number("1"), .bool(true), .null])),
        ])
        let text = JSONWriter.write(value)
        #expect(try Self.parse(text) == value)
        #expect(text.contains("\"b\": \"quote \\\" backslash \\\\ newline \\n tab \\t bell \\u0007 é\""))
        #expect(text.contains("  \"short\": [1, true, null]\n"))
        #expect(text.contains("  \"long\": [\n    \"element number 0\",\n"))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= JSONWriter.lineWidth })
    }
}

extension JSONParser {
    /// The error parsing `data` gives, or nil.
    static func parseResult(_ data: Data) -> JSONParseError? {
        do {
            _ = try parse(data)
            return nil
        } catch {
            return error
        }
    }
}
