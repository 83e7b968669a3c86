import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue verify BACKUP [--temp-dir DIR] [--json]`
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a backup: gzip integrity, both SHA-256 sums against its manifest, and PRAGMA integrity_check.",
        discussion: """
            The snapshot is decompressed into a private temporary folder, removed afterwards; the \
            backup itself is only read. Exits 0 when the backup is good, 1 when a check failed \
            (each failure is printed).
            """
    )

    @Argument(help: "The backup's .gz (or its .manifest.json).")
    var backup: String

    @Option(name: .customLong("temp-dir"), help: ArgumentHelp("Where to decompress the snapshot (default: $TMPDIR or /tmp).", valueName: "dir"))
    var temporaryDirectory: String?

    @Flag(help: "Print the result (or the error) as JSON on stdout.")
    var json = false

    /// The stable JSON output of `verify --json`.
    struct Report: Encodable {
        var backup: String
        var manifest: String
        var good: Bool
        var problems: [String]
        @NullEncoded var integrityCheck: String?
        var seconds: Double
    }

    func run() throws {
        let started = Date()
        let verification = try CommandOutput.withProgress(json: json) { progress, cancellation in
            try BackupVerifier.verify(backup: backup, temporaryDirectory: temporaryDirectory, progress: progress, cancellation: cancellation)
        }
        let status: ExitStatus = verification.isGood ? .success : .checkFailed
        if json {
            CommandOutput.printJSON(Report(
                backup: verification.backupPath, manifest: verification.manifestPath, good: verification.isGood,
                problems: verification.problems, integrityCheck: verification.integrityCheck,
                seconds: Date().timeIntervalSince(started)), exitStatus: status)
        } else if verification.isGood {
            CommandOutput.write("OK: \(oneLine: verification.backupPath): gzip stream, SHA-256 sums and PRAGMA integrity_check all pass\n")
        } else {
            var text = "FAILED: \(oneLine: verification.backupPath)\n"
            for problem in verification.problems { text += "  - \(TerminalText.sanitized(problem, keepingLineBreaks: false))\n" }
            // The report ends with the `Error:`/`Try:` pair every failing command prints (CLI.md):
            // a job grepping stderr for `Error:` found none here (review rv10).
            let count = verification.problems.count
            text += "Error: the backup \(TerminalText.sanitized(verification.backupPath, keepingLineBreaks: false)) failed verification "
                + "(\(count) problem\(count == 1 ? "" : "s"), listed above)\n"
            text += "Try: restore from another backup; run `storerescue verify` on each to find a good one\n"
            CommandOutput.claimOutcome(exitStatus: status.rawValue)
            CommandOutput.writeProblem(text)
        }
        if !verification.isGood { throw ExitCode(status.rawValue) }
    }
}
