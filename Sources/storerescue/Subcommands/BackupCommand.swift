import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue backup STORE [--to DIR] [--level 1-9] [--keep N] [--reason TEXT] [--timeout S] [--json]`
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Take a consistent, compressed backup of a store (committed WAL content included).",
        discussion: """
            The snapshot is taken with SQLite's online backup API, so it is correct while other \
            processes read and write the store. It is written as a standard gzip file (gunzip \
            restores it) with a JSON manifest beside it, both named \
            <store file>.<UTC time YYYYMMDDTHHMMSSZ>[-n].gz / .manifest.json. See Docs/BACKUP.md.
            """
    )

    @Argument(help: "The store's main file (e.g. default.store), not its -wal or -shm.")
    var store: String

    @Option(name: .customLong("to"), help: ArgumentHelp("The backup folder, created when missing.", valueName: "dir"))
    var destination: String = BackupOptions.defaultDestinationDirectory

    @Option(help: ArgumentHelp("gzip compression level, 1 (fastest) to 9 (smallest).", valueName: "1-9"))
    var level: Int = 6

    @Option(help: ArgumentHelp("Keep only the newest N backups of this store; the newest pre-upgrade backup is always kept.", valueName: "n"))
    var keep: Int?

    @Option(help: ArgumentHelp("Why the backup is taken (manual, pre-upgrade, …); recorded in the manifest.", valueName: "text"))
    var reason: String = "manual"

    @Option(help: ArgumentHelp("Seconds to wait for a process that holds the store locked.", valueName: "seconds"))
    var timeout: Double = 30

    @Flag(help: "Print the result (or the error) as JSON on stdout.")
    var json = false

    func validate() throws {
        guard (1...9).contains(level) else { throw ValidationError("--level must be between 1 and 9") }
        if let keep, keep < 1 { throw ValidationError("--keep must be at least 1") }
        guard timeout >= 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        guard !reason.isEmpty, reason.count <= 200, !reason.contains(where: \.isNewline) else {
            throw ValidationError("--reason must be one line of at most 200 characters")
        }
    }

    /// The stable JSON output of `backup --json`.
    struct Report: Encodable {
        var backup: String
        var manifest: String
        var snapshotBytes: Int64
        var backupBytes: Int64
        var compressionRatio: Double
        var seconds: Double
        var pruned: [String]
        /// What `--keep` could not weigh, and so kept (the folder not listed, a manifest not
        /// opened for want of a file descriptor); empty when nothing was in the way.
        var retentionNotes: [String]
        var details: BackupManifest
    }

    func run() throws {
        let options = BackupOptions(destinationDirectory: destination, compressionLevel: level, keep: keep,
                                    reason: reason, lockTimeout: timeout)
        let result = try CommandOutput.withProgress(json: json) { progress, cancellation in
            try BackupRunner.run(store: store, options: options, progress: progress, cancellation: cancellation)
        }
        let manifest = result.manifest
        if json {
            CommandOutput.printJSON(Report(
                backup: result.backupPath, manifest: result.manifestPath, snapshotBytes: manifest.snapshotSize,
                backupBytes: manifest.backupSize, compressionRatio: result.compressionRatio,
                seconds: result.seconds, pruned: result.prunedBackups, retentionNotes: result.retentionNotes, details: manifest))
            // On stderr with --json too, as JSON-OUTPUT.md says (review rv10): stdout keeps its one document.
            writeRetentionWarnings(result)
            return
        }
        var text = """
            Backed up \(oneLine: manifest.sourcePath) (\(CommandOutput.size(manifest.snapshotSize)) snapshot) \
            in \(String(format: "%.1f", result.seconds)) s
              backup:   \(oneLine: result.backupPath) (\(CommandOutput.size(manifest.backupSize)), \
            \(String(format: "%.2f", result.compressionRatio))× smaller)
              manifest: \(oneLine: result.manifestPath)
              sha256:   \(manifest.snapshotSHA256) (snapshot)

            """
        for pruned in result.prunedBackups { text += "  pruned:   \(oneLine: pruned)\n" }
        CommandOutput.write(text)
        writeRetentionWarnings(result)
    }

    /// The backup is written (exit 0); what --keep could not do goes to stderr, where a cron
    /// job's mail or a journal shows it.
    private func writeRetentionWarnings(_ result: BackupResult) {
        if !result.retentionNotes.isEmpty {
            CommandOutput.writeProblem(result.retentionNotes.map { "Warning: \(oneLine: $0)\n" }.joined())
        }
    }
}
