import Foundation
import Testing
@testable import StoreRescue

/// `incident.txt` writes every line as one line (a line feed in a path as `\u{A}`), so a restore
/// command whose path holds one named no file (review rv11: `restore … --to 'app\u{A}x/…'`, exit
/// 73). The file then says so, and gives the way to run the exact command `incident.json` holds.
@Suite struct IncidentTextTests {
    private func report(store: String) -> IncidentReport {
        IncidentReport(
            state: "complete", store: store, createdAt: "2026-11-27T00:00:00Z", reasons: [], quarantine: "/q",
            quarantinedFiles: [], backup: "/bk/Notes.sqlite.gz", backupKind: "gzip", cleanStore: nil, salvageDatabase: nil,
            rowsUnreadable: 0, entities: [],
            restoreCommand: "storerescue restore /bk/Notes.sqlite.gz --to \(ShellQuote.quote(store)) --force --as-backed-up",
            restoreByHand: ["mv -- '/q/Notes.sqlite' \(ShellQuote.quote(store))"], notes: [])
    }

    @Test func aPathWithALineFeedPointsToTheExactCommand() throws {
        let incident = report(store: "/tmp/app\nx/Notes.sqlite")
        let text = incident.renderText()
        #expect(!text.contains("app\nx"), "one line each")
        let line = try #require(text.split(separator: "\n").first { $0.contains("incident.json has it, exactly: ") }, "\(text)")
        let snippet = try #require(line.components(separatedBy: "exactly: ").last?.components(separatedBy: " | sh").first)
        // What the line says to run prints the JSON's command, byte for byte.
        let dir = try TemporaryDirectory()
        try JSONEncoder().encode(incident).write(to: dir.url.appendingPathComponent("incident.json"))
        let result = try CommandRunner.run(program: "/bin/sh", ["-c", "cd \"$1\" && \(snippet)", "sh", dir.url.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == incident.restoreCommand + "\n", "\(result.stdout)")
    }

    @Test func anOrdinaryPathGetsNoSuchLine() {
        let text = report(store: "/tmp/app/Notes.sqlite").renderText()
        #expect(text.contains("  storerescue restore /bk/Notes.sqlite.gz --to ") && text.contains("/tmp/app/Notes.sqlite"), "\(text)")
        #expect(!text.contains("incident.json has it"))
    }
}
