import Foundation
import Testing

/// The project's own examples in Samples/ keep doing what README.md says they do.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct ProjectSamplesTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")

    @Test func journalStoreIsAnUnversionedV1ThatStagedMigrationWouldRefuse() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("Journal.sqlite")
        try FileManager.default.copyItem(atPath: Self.samples.appendingPathComponent("Journal/Journal.sqlite").path, toPath: store)
        let catalog = Self.samples.appendingPathComponent("Journal/catalog.json").path
        let result = try CommandRunner.run(["match", store, "--catalog", catalog, "--json"])
        #expect(result.status == 0)
        let json = try result.json()
        #expect(json["outcome"] as? String == "exact")
        #expect(json["version"] as? String == "V1")
        let diagnosis = try #require(json["diagnosis"] as? [String: Any])
        #expect(diagnosis["errorCode"] as? Int == 134504)
        #expect(diagnosis["adoptAs"] as? String == "V1")
        #expect(diagnosis["stages"] as? [String] == [
            "V1 → V2 (lightweight, stages[0])", "V2 → V3 (lightweight, stages[1])", "V3 → V4 (custom, stages[2])",
        ])
        // The custom stage gives every entry its required id: after adoption, nothing stops the plan.
        #expect((diagnosis["mandatoryAttributes"] as? [Any])?.isEmpty == true)
        #expect((diagnosis["refusals"] as? [Any])?.isEmpty == true)

        let inspected = try CommandRunner.run(["inspect", "--json", "--counts", store])
        #expect(inspected.status == 0)
        let entities = try #require(try inspected.json()["entities"] as? [[String: Any]])
        #expect(entities.first { $0["name"] as? String == "Entry" }?["rowCount"] as? Int == 5)
    }
}
