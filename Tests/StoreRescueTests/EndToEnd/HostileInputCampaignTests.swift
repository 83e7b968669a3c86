import Foundation
import Testing
@testable import StoreRescue

/// A seeded slice of the hostile-input campaign (`Scripts/hostile-inputs.py`, Docs/SECURITY.md):
/// the whole corpus is rebuilt from the samples, and 60 (input, command) runs, spread over every
/// family, are checked against every invariant. The full campaign is the script run alone.
@Suite(.enabled(if: CommandRunner.isAvailable && Samples.available && BackupFixtures.pythonPath != nil,
                "needs the built executable, ../shared/samples and python3"))
struct HostileInputCampaignTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Scripts/hostile-inputs.py").path

    @Test func aSeededSliceKeepsEveryInvariant() throws {
        let dir = try TemporaryDirectory()
        let summaryPath = dir.path("summary.json")
        let result = try BackupFixtures.run(BackupFixtures.pythonPath ?? "/usr/bin/python3", [
            Self.script, "--bin", CommandRunner.executable.path, "--samples", Samples.root?.path ?? "", "--work", dir.path("work"),
            "--seed", "2026", "--slice", "60", "--jobs", "2", "--timeout", "30", "--summary-json", summaryPath,
        ])
        let written = FileManager.default.contents(atPath: summaryPath) ?? Data()
        let summary = try #require(try? JSONSerialization.jsonObject(with: written) as? [String: Any],
                                   "no summary; the campaign printed: \(result.standardOutput.suffix(2000)) \(result.standardError.suffix(3000))")
        let findings = summary["findings"] as? [[String: Any]] ?? [["missing": "findings"]]
        #expect(findings.isEmpty, "\(findings)")
        #expect(result.status == 0, "\(result.standardOutput.suffix(3000))")
        #expect((summary["inputs"] as? Int ?? 0) >= 600, "the corpus has at least 600 inputs")
        #expect((summary["families"] as? [String: Int])?.count == 10)
        #expect(summary["runs"] as? Int == 60)
        #expect((summary["commands"] as? [String])?.count ?? 0 >= 8, "the slice reaches most commands")
        #expect(result.standardOutput.contains("exit statuses: "), "the table was printed")
    }

    /// The in-place commands on a small slice of their own (a few seconds): each runs on a
    /// private copy, so the checks include that nothing but the store set appears beside it and,
    /// after a fallback, that the clean store, incident and quarantine are sound.
    @Test func upgradeAndAdoptKeepEveryInvariantOnASeededSlice() throws {
        let dir = try TemporaryDirectory()
        let summaryPath = dir.path("summary.json")
        let commands = ["upgrade", "upgrade --catalog", "adopt", "upgrade --on-failure clean"]
        let result = try BackupFixtures.run(BackupFixtures.pythonPath ?? "/usr/bin/python3", [
            Self.script, "--bin", CommandRunner.executable.path, "--samples", Samples.root?.path ?? "", "--work", dir.path("work"),
            "--seed", "2026", "--slice", "12", "--jobs", "2", "--timeout", "30", "--summary-json", summaryPath,
            "--families", "sqlite-pages,wal,model-files",
        ] + commands.flatMap { ["--command", $0] })
        let written = FileManager.default.contents(atPath: summaryPath) ?? Data()
        let summary = try #require(try? JSONSerialization.jsonObject(with: written) as? [String: Any],
                                   "no summary; the campaign printed: \(result.standardOutput.suffix(2000)) \(result.standardError.suffix(3000))")
        let findings = summary["findings"] as? [[String: Any]] ?? [["missing": "findings"]]
        #expect(findings.isEmpty, "\(findings)")
        #expect(result.status == 0, "\(result.standardOutput.suffix(3000))")
        #expect(summary["runs"] as? Int == 12)
        #expect((summary["skipped"] as? [String]) == [], "every in-place command is in this build")
        #expect(Set(summary["commands"] as? [String] ?? []) == Set(commands), "the slice reaches every in-place command")
    }
}
