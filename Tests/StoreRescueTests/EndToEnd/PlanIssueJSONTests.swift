import Foundation
import Testing

/// `planIssues[].stage` is `null` when an issue is about no one stage, never a missing key
/// (`Docs/JSON-OUTPUT.md`: string | null), in each command that prints plan issues (review rv8 #3).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct PlanIssueJSONTests {
    @Test func anIssueWithoutAStageHasStageNull() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        // The Journal's catalog without its first stage: V1 is named by no stage.
        let original = try Data(contentsOf: UpgradeFixture.journal.appendingPathComponent("catalog.json"))
        var object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        object["stages"] = Array(try #require(object["stages"] as? [Any]).dropFirst())
        object["versions"] = try #require(object["versions"] as? [[String: Any]]).map { version in
            // Model paths relative to the sample's folder, made absolute for the copy.
            version.mapValues { value in
                guard let path = value as? String, path.hasPrefix("Journal.xcdatamodeld") else { return value }
                return UpgradeFixture.journal.appendingPathComponent(path).path
            }
        }
        let catalog = fixture.directory.path("without-v1.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: catalog))

        let show = try CommandRunner.run(["catalog", "show", catalog, "--json"])
        let migrate = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--dry-run", "--json"])
        let upgrade = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--dry-run", "--backup-dir", fixture.backups, "--json"])
        let issues: [(String, [[String: Any]])] = [
            ("catalog show", try show.json()["planIssues"] as? [[String: Any]] ?? []),
            ("migrate", try migrate.json()["planIssues"] as? [[String: Any]] ?? []),
            ("upgrade", (try upgrade.json()["migration"] as? [String: Any])?["planIssues"] as? [[String: Any]] ?? []),
        ]
        for (command, list) in issues {
            #expect(!list.isEmpty, "\(command) reports the plan issue")
            for issue in list {
                #expect(Set(issue.keys) == ["severity", "code", "stage", "message", "onDevice"], "\(command): \(issue.keys.sorted())")
            }
            #expect(list.contains { $0["stage"] is NSNull }, "\(command): \(list.map { $0["code"] ?? "" })")
        }
    }
}
