import Foundation
import Testing
@testable import StoreRescue

/// The reader of one catalog object: constant-time lookups (a custom stage's `map` of 100,000
/// attributes was read in quadratic time: over a minute in `catalog show`, `match`, `migrate`),
/// and the first of two duplicate keys wins, as it always did (the parser refuses duplicates in a
/// file; a value built in code may hold them).
@Suite struct JSONObjectReaderTests {
    @Test func aHundredThousandKeysAreReadAndLookedUp() throws {
        let members = (0..<100_000).map { JSONMember("a\($0)", .string("\($0)")) }
        let reader = try JSONObjectReader(.object(members), path: "stages[0].map.Post", file: "c.json", allowedKeys: members.map(\.key))
        #expect(reader.has("a99999") && !reader.has("a100000"))
        #expect(try reader.optionalString("a54321") == "54321")
        #expect(reader.childPath("a1") == "stages[0].map.Post.a1")
    }

    @Test func theFirstOfDuplicateKeysWinsAndNullIsAbsent() throws {
        let value = JSONValue.object([JSONMember("app", .string("First")), JSONMember("app", .string("Second")), JSONMember("notes", .null)])
        let reader = try JSONObjectReader(value, path: "", file: "c.json", allowedKeys: ["app", "notes"])
        #expect(try reader.string("app") == "First")
        #expect(reader.value("notes") == nil && reader.has("notes"))
    }

    @Test func anUnknownKeyIsStillNamedWithTheAllowedOnes() throws {
        let value = try JSONParser.parse(Data(#"{"ap": "A"}"#.utf8))
        #expect {
            try JSONObjectReader(value, path: "", file: "c.json", allowedKeys: ["app", "versions"])
        } throws: { error in
            "\(error)".contains("ap") && "\(error)".contains("did you mean \"app\"?") && "\(error)".contains("allowed here: app, versions")
        }
    }
}
