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
    /// Never the store's own folder (`BackupError.replacedStoreBackupFolderIsStoreFolder`).
    public var replacedStoreBackupDirectory: String?
    /// How long the backup of the replaced store waits for a writer's lock, in seconds.
    public var lockTimeout: TimeInterval
    /// Run the full `PRAGMA integrity_check` on the restored file instead of `quick_check`.
    /// `quick_check` verifies every page, b-tree and record but not that each index matches its
    /// table; the SHA-256 match with the manifest already proves the bytes are the snapshot's.
    public var fullIntegrityCheck: Bool
    /// Restore the snapshot even when SQLite's check finds it damaged, as long as its bytes are
    /// exactly the backup's (gzip CRC and SHA-256 as the manifest says): for putting back a store
    /// that was already damaged when it was backed up — the way back from
    /// `upgrade --on-failure clean`. The check's findings are reported (`damagedSnapshotCheck`).
    public var restoresDamagedSnapshot: Bool

    public init(targetPath: String, force: Bool = false, replacedStoreBackupDirectory: String? = nil,
                lockTimeout: TimeInterval = 30, fullIntegrityCheck: Bool = false, restoresDamagedSnapshot: Bool = false) {
        self.targetPath = targetPath
        self.force = force
        self.replacedStoreBackupDirectory = replacedStoreBackupDirectory
        self.lockTimeout = lockTimeout
        self.fullIntegrityCheck = fullIntegrityCheck
        self.restoresDamagedSnapshot = restoresDamagedSnapshot
    }
}

/// What a restore did.
public struct RestoreResult: Sendable, Equatable {
    public var restoredPath: String
    public var backupPath: String
    public var manifest: BackupManifest
    /// The backup taken of the store that was replaced (with `force`), if there was one.
    public var replacedStoreBackup: BackupResult?
    /// When the replaced store was too damaged for SQLite to back up (or only its sidecars were
    /// there): the folder holding its files byte for byte instead — the main file preserved under
    /// the replacement's lock (a hard link, or a checked copy), its sidecars moved in.
    public var replacedStoreRawCopy: String?
    /// The sidecars that were beside the replaced store and are gone: SQLite folded their
    /// content into it (a `-wal`, a hot `-journal` rolled back) and removed them while settling
    /// it, after `replacedStoreBackup` was taken (which holds that content). Never deleted by us.
    public var removedSidecars: [String]
    /// A spent `-journal` of the replaced store (empty, or its header zeroed: TRUNCATE or
    /// PERSIST journal mode) that the replacement removed under its lock; it held nothing.
    public var removedSpentJournal: String? = nil
    /// The new paths of the sidecars of a store too damaged for SQLite (or of a missing main
    /// file), moved as they were into `replacedStoreRawCopy`.
    public var movedSidecars: [String]
    /// With `restoresDamagedSnapshot`: what SQLite's check found in the snapshot restored anyway
    /// (nil when it passed).
    public var damagedSnapshotCheck: String?
    public var seconds: Double
}

/// Restores a backup to a store path, never leaving a half-restored store.
///
/// The backup is decompressed into a temporary file beside the target, its checksums are compared
/// with the manifest and `PRAGMA integrity_check` must pass — all before anything existing is
/// touched. Then, only with `force`, the store being replaced is itself backed up (WAL content
/// included; for a store too damaged for SQLite, a raw-copy folder is made instead), and the
/// restored file replaces it through `StoreReplacement`: the store is settled (its WAL folded in
/// and removed by SQLite, so no old `-wal` is ever replayed into the restored file) once no other
/// connection has it open — waiting up to `lockTimeout`, then refusing with exit 75 — locked,
/// and the restored file renamed over it atomically. A damaged store is not settled: under the
/// same lock its main file is preserved in the raw-copy folder and its sidecars moved there.
///
/// - Warning: Stop every process that uses the store before a forced restore: the store is
///   replaced only once nothing has it open, and what is written between its backup and its
///   replacement is not in that backup.
public enum BackupRestorer {
    /// Restores `backup` (its `.gz` or `.manifest.json`) as `options` say.
    ///
    /// - Throws: `BackupError.restoreTargetExists` (without `force`),
    ///   `.restoreVerificationFailed` (nothing replaced), `.manifestUnreadable`, `.backupMissing`,
    ///   `SafeFileOutputError`; what backing up the replaced store throws; `StoreReplacementError`
    ///   (`inUse`: exit 75; `cannotSettle`: exit 65) and `FileMoveError` from the replacement.
    ///   Whatever it throws, the target holds the old store or the restored one, complete.
    public static func restore(backup: String, options: RestoreOptions,
                               progress: ((BackupProgress) -> Void)? = nil,
                               cancellation: CancellationFlag? = nil) throws -> RestoreResult {
        try restore(backup: backup, options: options, progress: progress, cancellation: cancellation, faultInjection: nil)
    }

    /// `restore`, with the replacement's `faultInjection` (tests stop it at each step).
    static func restore(backup: String, options: RestoreOptions, progress: ((BackupProgress) -> Void)?,
                        cancellation: CancellationFlag?,
                        faultInjection: ((StoreReplacement.Step) throws -> Void)?) throws -> RestoreResult {
        let started = Date()
        if options.targetPath.isEmpty { throw BackupError.restoreTargetPathEmpty }
        if BackupRunner.endsInSlashNamingNoFolder(options.targetPath) {
            throw BackupError.restoreTargetEndsInSlash(path: BackupRunner.absolutePath(options.targetPath) + "/")
        }
        let paths = try BackupPaths(backup)
        let manifest = try BackupManifest.read(from: paths.manifest)
        let target = BackupRunner.absolutePath(options.targetPath)
        let existing = try existingFiles(of: target)
        if !existing.isEmpty && !options.force {
            throw BackupError.restoreTargetExists(path: target, existing: existing)
        }
        var targetStatus = stat()
        let targetExists = lstat(target, &targetStatus) == 0
        // A store this user may not write cannot be replaced in place: refused before its
        // backup is taken or anything decompressed (StoreReplacement would refuse it anyway).
        if targetExists, let problem = StoreReplacement.permissionProblem(storePath: target) {
            throw StoreReplacementError.notWritable(path: target, reason: problem)
        }
        // What `force` replaces is backed up first, never beside the store (README, BACKUP.md):
        // refused before anything is written, as `backup --to` and `upgrade --backup-dir` are.
        // It went there (a review) when the backup restored lay in the store's folder, or when
        // --backups-dir named it.
        let folder = options.replacedStoreBackupDirectory ?? SafeFileOutput.folder(of: paths.backup)
        if !existing.isEmpty, BackupRunner.isStoreFolder(folder, of: target) {
            throw BackupError.replacedStoreBackupFolderIsStoreFolder(
                store: target, folder: URL(fileURLWithPath: BackupRunner.absolutePath(folder)).standardized.path,
                isDefault: options.replacedStoreBackupDirectory == nil)
        }
        // Its backup's files in that folder, past SQLite's path limit, were refused only after
        // the whole backup was decompressed and verified beside the store (review rv11).
        if targetExists {
            try SQLitePathTooLongError.check(
                BackupRunner.longestSQLitePath(backingUpInto: BackupRunner.absolutePath(folder)), folder: folder, chosenWith: .restoreBackupsDirectory)
        }
        // The store this run backs up and replaces, and no other: another run (a second
        // `restore --force`, an `upgrade`) that put its own file there meanwhile is let be
        // (review rv10: three restores at once, one replaced the others' files and one exited 70).
        let foundTarget = targetExists ? StoreReplacement.FileIdentity(device: UInt64(targetStatus.st_dev), inode: UInt64(targetStatus.st_ino)) : nil
        let permissions: mode_t = targetExists ? targetStatus.st_mode & 0o777 : 0o600

        // 1. Decompress and verify beside the target; nothing existing is touched yet.
        let output = try SafeFileOutput(destinationPath: target, permissions: permissions)
        // Whatever stops the restore (a thread may still hold `output`): no temporary is left.
        defer { output.discard() }
        // A file SQLite cannot open for its path's length was "failed verification" with advice
        // to add --as-backed-up, which then restored it unchecked (review rv10 #2).
        try SQLitePathTooLongError.check(output.temporaryPath, folder: SafeFileOutput.folder(of: target), chosenWith: .restoreTarget)
        var problems = BackupVerifier.consistencyProblems(manifest, paths: paths)
        let outcome = try BackupVerifier.decompress(paths: paths, manifest: manifest, into: output,
                                                    progress: progress, cancellation: cancellation)
        problems += outcome.problems
        if outcome.isComplete { problems += BackupVerifier.snapshotProblems(path: output.temporaryPath, manifest: manifest) }
        var damagedSnapshotCheck: String?
        if outcome.isComplete && problems.isEmpty {
            progress?(BackupProgress(phase: .verify, completedBytes: manifest.snapshotSize, totalBytes: manifest.snapshotSize))
            let integrity = try BackupVerifier.integrityCheck(
                path: output.temporaryPath, isQuick: !options.fullIntegrityCheck, cancellation: cancellation)
            if integrity != "ok" {
                let pragma = options.fullIntegrityCheck ? "integrity_check" : "quick_check"
                // The bytes are the backup's (checked above): a store damaged when it was backed
                // up is put back as it was, if asked to.
                if options.restoresDamagedSnapshot {
                    damagedSnapshotCheck = "PRAGMA \(pragma): \(integrity)"
                } else {
                    problems.append("the restored snapshot fails PRAGMA \(pragma): \(integrity)")
                }
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

        // 2. Back up what is about to be replaced (a store SQLite cannot read: a raw-copy folder
        // that the replacement fills under its lock), then replace it through StoreReplacement.
        var replacedBackup: BackupResult?
        var rawCopy: String?
        var damage: String?
        if targetExists {
            do {
                var backupOptions = BackupOptions(destinationDirectory: folder, reason: "pre-restore", lockTimeout: options.lockTimeout)
                backupOptions.destinationOption = .restoreBackupsDirectory
                backupOptions.isFinalResult = false
                replacedBackup = try BackupRunner.run(store: target, options: backupOptions, cancellation: cancellation)
            } catch let error where isUnreadableAsAStore(error) {
                // Too damaged for SQLite (often why it is being restored): keep its raw bytes.
                damage = (error as? any OperatorFacingError)?.description ?? String(describing: error)
                rawCopy = try RawStoreCopy.makeFolder(for: target, in: folder, chosenWith: .restoreBackupsDirectory, date: Date())
            }
        } else if !existing.isEmpty {
            // Sidecars with no main file (`force`): moved into a raw-copy folder, never deleted.
            rawCopy = try RawStoreCopy.makeFolder(for: target, in: folder, chosenWith: .restoreBackupsDirectory, date: Date())
        }
        // Held until the replacement's connection is closed (this descriptor holds no POSIX lock,
        // and is closed last, so SQLite's are never dropped by its close).
        let writerLock = try foundTarget == nil ? nil : lockTarget(target, found: foundTarget)
        defer { if let writerLock { close(writerLock) } }
        var replacement = StoreReplacement(storePath: target, lockTimeout: options.lockTimeout, cancellation: cancellation)
        replacement.expectedNewFile = output.identity
        let name = (target as NSString).lastPathComponent
        var replaced: StoreReplacement.Result?
        // An interruption waits for the replacement: the store is the old one or the restored one.
        try output.publish(as: PublishedResult(path: target, description: "the restored store")) { temporaryPath in
            replaced = try replacement.replace(
                with: temporaryPath, knownDamage: damage,
                ifDamaged: rawCopy.map { .moveSidecarsAside(into: $0) } ?? .refuse,
                whileLocked: { store in
                    // A store that was not there when the restore began (an app started, another
                    // restore) was backed up by nothing: never replaced (a review's was, exit 0).
                    if !targetExists { throw BackupError.restoreTargetAppeared(path: target) }
                    // Checked under the replacement's lock, which every writer of a store holds
                    // from its check to its rename: a run that finds another's file here (its
                    // connection opened after that rename, or waited on the old store's lock
                    // until it) leaves it, where it used to rename over it or race its last check.
                    try requireTargetUnreplaced(target, found: foundTarget)
                    // A damaged store's main file: its bytes as they are under the lock.
                    if let rawCopy { try store.preserve(at: rawCopy + "/" + name) }
                },
                faultInjection: faultInjection)
        }
        return RestoreResult(restoredPath: target, backupPath: paths.backup, manifest: manifest,
                             replacedStoreBackup: replacedBackup, replacedStoreRawCopy: rawCopy,
                             removedSidecars: replaced?.settledSidecars ?? [], removedSpentJournal: replaced?.removedSpentJournal,
                             movedSidecars: replaced?.movedSidecars ?? [],
                             damagedSnapshotCheck: damagedSnapshotCheck, seconds: Date().timeIntervalSince(started))
    }

    /// The store at `target`, opened (never through a link) and locked (`flock`, exclusive, not
    /// waited for) against every other `restore` of it, from the check that it is the file
    /// found at the start to its replacement: the descriptor, which `close` unlocks. Without
    /// it, restores at once each settled the store while the others had it open — a WAL store
    /// refuses to leave WAL mode while another connection has it, so all waited out the
    /// timeout (review rv10: "open in another process (still after 30 s)") — or renamed over
    /// one another's file. SQLite's locks are POSIX locks, which a `flock` does not meet.
    ///
    /// - Throws: `restoreTargetBusy` (75) when another restore holds it, `restoreTargetReplaced`
    ///   (75) when the file is no longer the one found. A file system without `flock` goes on
    ///   unlocked (the check under the replacement's lock still holds).
    static func lockTarget(_ target: String, found: StoreReplacement.FileIdentity?) throws -> Int32? {
        let descriptor = open(target, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            try requireTargetUnreplaced(target, found: found)
            return nil  // the replacement reports why it cannot open it
        }
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EWOULDBLOCK || code == EINTR {
                close(descriptor)
                throw BackupError.restoreTargetBusy(path: target)
            }
        }
        guard StoreReplacement.FileIdentity(descriptor: descriptor) == found, StoreReplacement.FileIdentity(path: target) == found else {
            close(descriptor)
            throw BackupError.restoreTargetReplaced(path: target)
        }
        return descriptor
    }

    /// Throws `restoreTargetReplaced` (exit 75) unless `target` still leads to the file found
    /// when the restore began (`found`; nil: there was none, which `restoreTargetAppeared` covers).
    static func requireTargetUnreplaced(_ target: String, found: StoreReplacement.FileIdentity?) throws {
        guard let found, StoreReplacement.FileIdentity(path: target) != found else { return }
        throw BackupError.restoreTargetReplaced(path: target)
    }

    /// True for the errors of a store SQLite cannot read (empty, not SQLite, truncated, damaged).
    static func isUnreadableAsAStore(_ error: any Error) -> Bool {
        if case BackupError.sourceNotAStore = error { return true }
        guard let kind = (error as? StoreAccessError)?.kind else { return false }
        return [.empty, .notSQLite, .truncated, .damaged].contains(kind)
    }

    /// The store file and sidecars present at `target`; refuses a link or folder as the target,
    /// and a name too long for SQLite's `-journal`.
    static func existingFiles(of target: String) throws -> [String] {
        // `create`'s check: a review restored to a 248-byte name, and `upgrade` of the result
        // then failed as "damaged" (SQLite could not create its -journal).
        if let tooLong = CreationTarget.nameLeavingNoRoomForSidecars(target) {
            throw BackupError.restoreTargetNameTooLong(path: target, bytes: tooLong.bytes, limit: tooLong.limit)
        }
        // `X-wal` beside a store X: SQLite would delete the restored file the first time X is
        // opened (a review's restore to it exited 0), with or without --force.
        if let store = CreationTarget.storeWhoseSidecar(target) {
            throw BackupError.restoreTargetIsSidecar(path: target, store: store)
        }
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
        for suffix in StoreReplacement.sidecarSuffixes where lstat(target + suffix, &status) == 0 {
            found.append(target + suffix)
        }
        return found
    }
}
