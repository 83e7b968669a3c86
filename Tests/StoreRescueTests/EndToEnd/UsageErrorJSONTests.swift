import Foundation
import Testing

/// A command line argument-parser refuses (exit 64) still gives a `--json` job its one JSON
/// document on stdout, `{"error": {"message", "hint", "exitStatus"}, "staleTemporariesRemoved"}`,
/// as every other failure does; the usage text stays on stderr for people (review rv8 #2: these
/// printed nothing on stdout).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct UsageErrorJSONTests {
    static let journal = UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path
    static let catalog = UpgradeFixture.journal.appendingPathComponent("catalog.json").path

    /// Each refused the way the docs name them (BACKUP.md, SALVAGE.md, CLI.md).
    static let refusedCommandLines: [[String]] = [
        ["backup", journal, "--to", "BACKUPS", "--level", "12"],
        ["backup", journal, "--to", "BACKUPS", "--keep", "0"],
        ["salvage", journal, "--out", "OUT", "--version", "V1"],
        ["create", "--catalog", catalog, "OUT"],
        ["create", "--catalog", catalog, "--version", "V1", "--model", "x.mom", "OUT"],
        ["upgrade", journal, "--catalog", catalog, "--on-failure", "sometimes"],
        ["migrate", journal, "--catalog", catalog],
        ["inspect", journal, "--no-such-flag"],
        ["backup", journal, "--level", "abc"],
        // `--json` where a value belongs: argument-parser reads it as the flag (the value is
        // missing), so the job that asked for JSON gets it.
        ["migrate", journal, "--catalog", catalog, "--out"],
    ]

    @Test(arguments: refusedCommandLines)
    func aRefusedCommandLinePrintsOneJSONError(_ words: [String]) throws {
        let dir = try TemporaryDirectory()
        let arguments = words.map { $0 == "BACKUPS" ? dir.path("backups") : $0 == "OUT" ? dir.path("out.sqlite") : $0 } + ["--json"]
        let result = try CommandRunner.run(arguments)
        #expect(result.status == 64, "\(words): \(result.status) \(result.stderr)")
        let json = try result.json()
        #expect(Set(json.keys) == ["error", "staleTemporariesRemoved"], "\(words): \(json.keys.sorted())")
        let error = try #require(json["error"] as? [String: Any], "\(words): \(result.stdout)")
        #expect(error["exitStatus"] as? Int == 64)
        let message = try #require(error["message"] as? String)
        #expect(!message.isEmpty && !message.contains("\n") && !message.hasPrefix("Error:"), "\(words): \(message)")
        let hint = try #require(error["hint"] as? String)
        #expect(hint.contains("--help") && !hint.contains("\n"), "\(words): \(hint)")
        #expect(json["staleTemporariesRemoved"] as? [String] == [])
        #expect(result.stderr.contains("Error:") && result.stderr.contains("Usage:"), "the usage stays on stderr: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("out.sqlite")) && !FileManager.default.fileExists(atPath: dir.path("backups")))
    }

    @Test func theDocumentedMessagesAreTheErrors() throws {
        let level = try CommandRunner.run(["backup", Self.journal, "--level", "12", "--json"]).json()
        #expect((level["error"] as? [String: Any])?["message"] as? String == "--level must be between 1 and 9")
        let out = try CommandRunner.run(["migrate", Self.journal, "--catalog", Self.catalog, "--json"]).json()
        #expect((out["error"] as? [String: Any])?["message"] as? String == "Give --out NEW_STORE (or --dry-run to only plan).")
    }

    @Test func helpIsStillHelpAndTextModeStillText() throws {
        let help = try CommandRunner.run(["backup", "--help", "--json"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE:") && (try? help.json()) == nil, "help, not JSON: \(help.stdout.prefix(200))")
        let text = try CommandRunner.run(["backup", Self.journal, "--level", "12"])
        #expect(text.status == 64 && text.stdout.isEmpty && text.stderr.contains("--level must be between 1 and 9"))
    }

    /// After `--`, `--json` is an operand (a file of that name), not the flag: no JSON.
    @Test func jsonAfterTheTerminatorIsAnOperand() throws {
        let result = try CommandRunner.run(["backup", "--level", "12", "--", "--json"])
        #expect(result.status == 64 && result.stdout.isEmpty, "\(result.stdout)")
    }
}
