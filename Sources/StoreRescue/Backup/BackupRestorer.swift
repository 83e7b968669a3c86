import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `BackupRestorer` restores. The defaults are the safe choice: nothing is replaced.
public struct RestoreOptions: Sendable {
    /// Where the store is restored (its main file).
    public var targetPath: String
    /// Replace an existing store and its `-wal`/`-shm`/`-journal`. The replaced store is backed
    /// up first (reason `pre-restore`).
    public var force: Bool
    /// Where that backup of the replaced store goes. nil: the folder of the backup being restored.
    public var replacedStoreBackupDirectory: String?
    /// How long the backup of the replaced store waits for a writer's lock, in seconds.
    public var lockTimeout: TimeInterval
    /// Run the full `PRAGMA integrity_check` on the restored file instead of `quick_check`.
    /// `quick_check` verifies every page, b-tree and record but not that each index matches its
    /// table; the SHA-256 match with the manifest already proves the bytes are the snapshot's.
    public var fullIntegrityCheck: Bool

    public init(targetPath: String, force: Bool = false, replacedStoreBackupDirectory: String? = nil,
                lockTimeout: TimeInterval = 30, fullIntegrityCheck: Bool = false) {
        self.targetPath = targetPath
        self.force = force
        self.replacedStoreBackupDirectory = replacedStoreBackupDirectory
        self.lockTimeout = lockTimeout
        self.fullIntegrityCheck = fullIntegrityCheck
    }
}

/// What a restore did.
public struct RestoreResult: Sendable, Equatable {
    public var restoredPath: String
    public var backupPath: String
    public var manifest: BackupManifest
    /// The backup taken of the store that was replaced (with `force`), if there was one.
    public var replacedStoreBackup: BackupResult?
    /// When the replaced store was too damaged for SQLite to back up: the folder holding a raw,
    /// byte-for-byte copy of its files instead.
    public var replacedStoreRawCopy: String?
    /// Stale sidecars of the replaced store that were removed.
    public var removedSidecars: [String]
    public var seconds: Double
}

/// Restores a backup to a store path, never leaving a half-restored store.
///
/// The backup is decompressed into a temporary file beside the target, its checksums are compared
/// with the manifest and `PRAGMA integrity_check` must pass — all before anything existing is
/// touched. Then, only with `force`, the store being replaced is itself backed up (WAL content
/// included; a store too damaged for SQLite is copied byte for byte instead), its stale `-wal`/`-shm`/`-journal` are removed (an old WAL must never be replayed
/// into the restored file), and the restored file is renamed over the target atomically.
///
/// - Warning: Stop every process that uses the store before a forced restore: a process that
///   keeps the old file open keeps writing to it, not to the restored store.
public enum BackupRestorer {
    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    /// Restores `backup` (its `.gz` or `.manifest.json`) as `options` say.
    ///
    /// - Throws: `BackupError.restoreTargetExists` (without `force`),
    ///   `.restoreVerificationFailed` (nothing replaced), `.manifestUnreadable`, `.backupMissing`,
    ///   `SafeFileOutputError`; and what backing up the replaced store throws.
    public static func restore(backup: String, options: RestoreOptions,
                               progress: ((BackupProgress) -> Void)? = nil,
                               cancellation: CancellationFlag? = nil) throws -> RestoreResult {
        let started = Date()
        let paths = try BackupPaths(backup)
        let manifest = try BackupManifest.read(from: paths.manifest)
        let target = BackupRunner.absolutePath(options.targetPath)
        let existing = try existingFiles(of: target)
        if !existing.isEmpty && !options.force {
            throw BackupError.restoreTargetExists(path: target, existing: existing)
        }
        var targetStatus = stat()
        let targetExists = lstat(target, &targetStatus) == 0
        let permissions: mode_t = targetExists ? targetStatus.st_mode & 0o777 : 0o600

        // 1. Decompress and verify beside the target; nothing existing is touched yet.
        let output = try SafeFileOutput(destinationPath: target, permissions: permissions)
        // Whatever stops the restore (a thread may still hold `output`): no temporary is left.
        defer { output.discard() }
        var problems = BackupVerifier.consistencyProblems(manifest, paths: paths)
        let outcome = try BackupVerifier.decompress(paths: paths, manifest: manifest, into: output,
                                                    progress: progress, cancellation: cancellation)
        problems += outcome.problems
        if outcome.isComplete && problems.isEmpty {
            progress?(BackupProgress(phase: .verify, completedBytes: manifest.snapshotSize, totalBytes: manifest.snapshotSize))
            let integrity = BackupVerifier.integrityCheck(path: output.temporaryPath, isQuick: !options.fullIntegrityCheck)
            if integrity != "ok" {
                let pragma = options.fullIntegrityCheck ? "integrity_check" : "quick_check"
                problems.append("the restored snapshot fails PRAGMA \(pragma): \(integrity)")
            }
        }
        guard problems.isEmpty else {
            output.discard()
            throw BackupError.restoreVerificationFailed(backup: paths.backup, problems: problems)
        }
        if cancellation?.isCancelled == true {
            output.discard()
            throw BackupError.interrupted
        }

        // 2. Back up what is about to be replaced, then clear its sidecars, then swap.
        var replacedBackup: BackupResult?
        var rawCopy: String?
        if targetExists {
            let folder = options.replacedStoreBackupDirectory ?? SafeFileOutput.folder(of: paths.backup)
            do {
                do {
                    replacedBackup = try BackupRunner.run(
                        store: target,
                        options: BackupOptions(destinationDirectory: folder, reason: "pre-restore", lockTimeout: options.lockTimeout),
                        cancellation: cancellation)
                } catch let error where isUnreadableAsAStore(error) {
                    // Too damaged for SQLite (often why it is being restored): keep its raw bytes.
                    rawCopy = try RawStoreCopy.copy(store: target, into: folder, date: Date())
                }
            } catch {
                output.discard()
                throw error
            }
        }
        var removed: [String] = []
        // An interruption waits for these steps: never stale sidecars removed and the store not replaced.
        try TemporaryItems.uninterruptible {
            for suffix in sidecarSuffixes {
                let sidecar = target + suffix
                var status = stat()
                guard lstat(sidecar, &status) == 0 else { continue }
                let handled = targetExists
                    ? unlink(sidecar) == 0
                    // No main file: an orphan sidecar is kept aside, never deleted.
                    : rename(sidecar, sidecar + ".replaced-" + BackupNaming.timestamp(Date())) == 0
                guard handled else {
                    let reason = SafeFileOutput.describe(errno)
                    output.discard()
                    throw SafeFileOutputError.cannotPublish(path: target, reason: "cannot remove the stale \(sidecar): \(reason)")
                }
                removed.append(sidecar)
            }
            try output.publish(replacingExisting: options.force)
        }
        return RestoreResult(restoredPath: target, backupPath: paths.backup, manifest: manifest,
                             replacedStoreBackup: replacedBackup, replacedStoreRawCopy: rawCopy, removedSidecars: removed,
                             seconds: Date().timeIntervalSince(started))
    }

    /// True for the errors of a store SQLite cannot read (empty, not SQLite, truncated, damaged).
    static func isUnreadableAsAStore(_ error: any Error) -> Bool {
        if case BackupError.sourceNotAStore = error { return true }
        guard let kind = (error as? StoreAccessError)?.kind else { return false }
        return [.empty, .notSQLite, .truncated, .damaged].contains(kind)
    }

    /// The store file and sidecars present at `target`; refuses a link or folder as the target.
    static func existingFiles(of target: String) throws -> [String] {
        var found: [String] = []
        var status = stat()
        if lstat(target, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFREG: found.append(target)
            case S_IFLNK: throw BackupError.restoreTargetNotARegularFile(path: target, kind: "a symbolic link")
            case S_IFDIR: throw BackupError.restoreTargetNotARegularFile(path: target, kind: "a folder")
            default: throw BackupError.restoreTargetNotARegularFile(path: target, kind: "a special file")
            }
        }
        for suffix in sidecarSuffixes where lstat(target + suffix, &status) == 0 {
            found.append(target + suffix)
        }
        return found
    }
}
