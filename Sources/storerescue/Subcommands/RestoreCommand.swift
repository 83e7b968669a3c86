import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue restore BACKUP --to PATH [--force] [--full-check] [--as-backed-up] [--backups-dir DIR] [--timeout S] [--json]`
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup to a store path, verified before anything is replaced.",
        discussion: """
            The backup is decompressed beside the target and checked (gzip CRC, SHA-256 against the \
            manifest, PRAGMA quick_check) before anything is touched. An existing store or any of \
            its -wal/-shm/-journal is never overwritten without --force; with --force the store \
            being replaced is first backed up itself (reason pre-restore), then it is settled \
            (SQLite folds its -wal in) once no process has it open (waiting up to --timeout, \
            then exit 75), locked, and the restored file is renamed over it. A store too damaged \
            for SQLite is kept byte for byte (main file and sidecars) in a .raw folder instead. \
            Stop every process that uses the store first. A backup of a store that was already \
            damaged when it was taken fails the check; --as-backed-up restores it anyway when its \
            bytes are exactly the backup's (the way back from upgrade --on-failure clean).
            """
    )

    @Argument(help: "The backup's .gz (or its .manifest.json).")
    var backup: String

    @Option(name: .customLong("to"), help: ArgumentHelp("The store path to restore to (its main file).", valueName: "path"))
    var target: String

    @Flag(help: "Replace an existing store and its sidecars (after backing it up).")
    var force = false

    @Flag(name: .customLong("full-check"), help: "Run the full PRAGMA integrity_check instead of quick_check (slower).")
    var fullCheck = false

    @Flag(name: .customLong("as-backed-up"), help: "Restore the snapshot even if SQLite finds it damaged, when its bytes are exactly the backup's (a store damaged when it was backed up).")
    var asBackedUp = false

    @Option(name: .customLong("backups-dir"), help: ArgumentHelp("Where the backup of a replaced store goes (default: the folder of BACKUP); never the store's own folder.", valueName: "dir"))
    var replacedStoreBackupDirectory: String?

    @Option(help: ArgumentHelp("Seconds to wait for other processes to close the replaced store (then exit 75).", valueName: "seconds"))
    var timeout: Double = 30

    @Flag(help: "Print the result (or the error) as JSON on stdout.")
    var json = false

    func validate() throws {
        guard timeout >= 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        guard !target.isEmpty else { throw ValidationError("--to needs a path") }
    }

    /// The stable JSON output of `restore --json`.
    struct Report: Encodable {
        var restored: String
        var backup: String
        var snapshotSHA256: String
        @NullEncoded var replacedStoreBackup: String?
        @NullEncoded var replacedStoreRawCopy: String?
        var removedSidecars: [String]
        /// A spent -journal (empty or zeroed: it held nothing) removed under the replacement's lock.
        @NullEncoded var removedSpentJournal: String?
        var movedSidecars: [String]
        /// With --as-backed-up: what SQLite's check found in the snapshot restored anyway.
        @NullEncoded var damagedSnapshotCheck: String?
        var seconds: Double
    }

    func run() throws {
        let options = RestoreOptions(targetPath: target, force: force, replacedStoreBackupDirectory: replacedStoreBackupDirectory,
                                     lockTimeout: timeout, fullIntegrityCheck: fullCheck, restoresDamagedSnapshot: asBackedUp)
        let result = try CommandOutput.withProgress(json: json) { progress, cancellation in
            try BackupRestorer.restore(backup: backup, options: options, progress: progress, cancellation: cancellation)
        }
        if json {
            CommandOutput.printJSON(Report(
                restored: result.restoredPath, backup: result.backupPath, snapshotSHA256: result.manifest.snapshotSHA256,
                replacedStoreBackup: result.replacedStoreBackup?.backupPath, replacedStoreRawCopy: result.replacedStoreRawCopy,
                removedSidecars: result.removedSidecars, removedSpentJournal: result.removedSpentJournal, movedSidecars: result.movedSidecars,
                damagedSnapshotCheck: result.damagedSnapshotCheck, seconds: result.seconds))
            return
        }
        var text = "Restored \(oneLine: result.backupPath)\n  to:       \(oneLine: result.restoredPath) (\(CommandOutput.size(result.manifest.snapshotSize)), "
            + "taken \(result.manifest.createdAt))\n"
        if let replaced = result.replacedStoreBackup {
            text += "  replaced store backed up to: \(oneLine: replaced.backupPath)\n"
        }
        if let raw = result.replacedStoreRawCopy {
            text += "  replaced store was unreadable by SQLite; its files were kept as they were in: \(oneLine: raw)\n"
        }
        for sidecar in result.removedSidecars { text += "  folded into the replaced store by SQLite: \(oneLine: sidecar)\n" }
        if let journal = result.removedSpentJournal { text += "  removed a spent -journal (empty or zeroed: it held nothing): \(oneLine: journal)\n" }
        for sidecar in result.movedSidecars { text += "  moved aside: \(oneLine: sidecar)\n" }
        if let check = result.damagedSnapshotCheck {
            text += "  restored as it was backed up, damaged: \(oneLine: check)\n"
        }
        CommandOutput.write(text)
    }
}
