import Foundation
import SRSQLite

/// Why a backup, verification or restore could not be carried out.
///
/// A backup that was verified and found bad is not an error: `BackupVerifier` reports it as a
/// `BackupVerification` with problems. These cases are the failures that stop a command.
public enum BackupError: OperatorFacingError, Equatable {
    /// The store to back up does not exist.
    case sourceMissing(path: String)
    /// The store path is a folder, a device or a symbolic link (which is not followed).
    case sourceNotARegularFile(path: String, kind: String)
    /// The store path given is empty (the command line's mistake; it read as the current folder).
    case sourcePathEmpty
    /// The store path ends with `/`, which names a folder, and what it names is none (`path` as
    /// given, made absolute): `backup j.sqlite/` backed up the file `j.sqlite`.
    case sourcePathEndsInSlash(path: String)
    /// SQLite cannot read the store: not a database, damaged, or unreadable.
    case sourceNotAStore(path: String, detail: String)
    /// A writer kept the store locked for longer than the timeout.
    case storeLocked(path: String, seconds: TimeInterval)
    /// The online backup failed part way.
    case snapshotFailed(source: String, detail: String)
    /// A store at rest whose `-wal` (or hot `-journal`) holds data is copied, with it, into the
    /// backup folder to be read: that copy failed (the folder full, the file-size limit).
    case copyFailed(source: String, folder: String, reason: String)
    /// No file descriptor was left to open the store, the snapshot or a file of the backup
    /// (`EMFILE`: the process's limit, `ulimit -n`; `ENFILE`: the system's). SQLite says
    /// `SQLITE_CANTOPEN`, which read as a missing store (66) or a failed snapshot with "check
    /// free space" (74).
    case tooManyOpenFiles(path: String, reason: String)
    /// The snapshot changed after it was compressed (a bug: nothing was published).
    case snapshotInconsistent(source: String)
    /// A folder the command writes into (`folder` says which, and the option that chose it)
    /// could not be created, is not a folder, or refused a file.
    case destinationUnusable(path: String, reason: String, folder: FolderOption = .backupDestination)
    /// The backup folder is the store's own folder (its links resolved): an app must not find
    /// new files beside its store. `folder` names the option that chose it.
    case destinationIsStoreFolder(path: String, folder: FolderOption = .backupDestination)
    /// `restore --force`: the folder the replaced store would be backed up into is the store's
    /// own folder — `--backups-dir`, or (`isDefault`) the folder of the backup restored. Refused
    /// before anything is written, as `backup --to` and `upgrade --backup-dir` are. Exit 64.
    case replacedStoreBackupFolderIsStoreFolder(store: String, folder: String, isDefault: Bool)
    /// The backup's manifest is missing, unreadable or not a manifest.
    case manifestUnreadable(path: String, reason: String)
    /// The backup file named by a command does not exist.
    case backupMissing(path: String)
    /// The backup path (or what its symbolic link points at) is a folder, FIFO, socket or device.
    case backupNotARegularFile(path: String, kind: String)
    /// `restore` refused to replace existing files without `--force`.
    case restoreTargetExists(path: String, existing: [String])
    /// A store appeared at the restore's target while the backup was being restored (an app
    /// started, another restore): not replaced, since nothing backed it up.
    case restoreTargetAppeared(path: String)
    /// The store at the restore's target was replaced by another file after the restore found
    /// it (another `restore --force` or `upgrade` of it at the same time): left as it is, since
    /// this run backed up the store that was there before, not it.
    case restoreTargetReplaced(path: String)
    /// Another `restore` of the same target holds it locked, replacing it at this moment.
    case restoreTargetBusy(path: String)
    /// The restore's target is named as a sidecar (`X-wal`, `X-shm`, `X-journal`) of a store X
    /// that exists: SQLite would delete or overwrite the restored file when it opens X.
    case restoreTargetIsSidecar(path: String, store: String)
    /// The restore's target path (`--to`) is empty.
    case restoreTargetPathEmpty
    /// The restore's target ends with `/`, which names a folder, and what it names is none:
    /// `restore --to new.sqlite/` created `new.sqlite`.
    case restoreTargetEndsInSlash(path: String)
    /// `restore` refused a target that is a symbolic link or not a regular file.
    case restoreTargetNotARegularFile(path: String, kind: String)
    /// The restore's target name leaves no room for SQLite's `-journal` within the file
    /// system's name limit (`bytes` + 8 past `limit`): the store restored there could be read
    /// but never written, replaced or upgraded (SQLite cannot create its `-journal`).
    case restoreTargetNameTooLong(path: String, bytes: Int, limit: Int)
    /// The backup failed verification during `restore`; nothing was replaced.
    case restoreVerificationFailed(backup: String, problems: [String])
    /// The operator interrupted the command; partial files were removed.
    case interrupted
    /// An app kept writing the store (or died part way through a transaction) through every
    /// attempt to read one committed state of it.
    case storeKeptChanging(path: String)

    /// Maps an SQLite failure while reading the source.
    init(sqliteError error: SQLiteError, source: String, lockTimeout: TimeInterval) {
        if error.isBusy {
            self = .storeLocked(path: source, seconds: lockTimeout)
        } else if error.fileSystemFailure == .tooManyOpenFiles {
            self = .tooManyOpenFiles(path: source, reason: error.systemReason ?? error.message)
        } else if error.isCorruption {
            self = .sourceNotAStore(path: source, detail: error.message)
        } else if error.primaryResultCode == SQLITE_CANTOPEN {
            self = .sourceMissing(path: source)
        } else {
            self = .snapshotFailed(source: source, detail: error.message)
        }
    }

    public var description: String {
        switch self {
        case .sourceMissing(let path):
            return "the store \(path) does not exist"
        case .sourceNotARegularFile(let path, let kind):
            return "the store \(path) is \(kind), not a regular file"
        case .sourcePathEmpty:
            return "the store's path is empty"
        case .sourcePathEndsInSlash(let path):
            return "the store \(path) ends with \"/\", which names a folder; no backup was taken"
        case .sourceNotAStore(let path, let detail):
            return "\(path) is not a readable SQLite store: \(detail)"
        case .storeLocked(let path, let seconds):
            return "the store \(path) stayed locked by another process for \(Self.format(seconds)) s; no backup was taken"
        case .snapshotFailed(let source, let detail):
            return "the snapshot of \(source) failed: \(detail); nothing was written"
        case .copyFailed(let source, let folder, let reason):
            return "the backup of \(source) failed: the store and its sidecars could not be copied into the backup folder \(folder) to be read: \(reason); nothing was written"
        case .tooManyOpenFiles(let path, let reason):
            return "\(path): cannot be opened, no file descriptor left: \(reason); nothing was written"
        case .snapshotInconsistent(let source):
            return "the snapshot of \(source) changed while it was being compressed; nothing was written"
        case .destinationUnusable(let path, let reason, let folder):
            return "cannot use the \(folder.role) \(path): \(reason)"
        case .destinationIsStoreFolder(let path, _):
            return "the backup folder \(path) is the store's own folder"
        case .replacedStoreBackupFolderIsStoreFolder(let store, let folder, let isDefault):
            return "\(store) would be backed up, before it is replaced, into \(folder)"
                + (isDefault ? " (the folder of the backup restored: the default without --backups-dir)" : " (--backups-dir)")
                + ", which is the store's own folder; nothing was changed"
        case .manifestUnreadable(let path, let reason):
            return "cannot read the backup manifest \(path): \(reason)"
        case .backupMissing(let path):
            return "the backup \(path) does not exist"
        case .backupNotARegularFile(let path, let kind):
            return "the backup \(path) is \(kind), not a regular file; it was not read"
        case .restoreTargetExists(let path, let existing):
            return "refusing to overwrite \(path): \(existing.joined(separator: ", ")) already exist(s)"
        case .restoreTargetIsSidecar(let path, let store):
            return StoreCreationError.targetIsSidecar(path: path, store: store).description
        case .restoreTargetAppeared(let path):
            return "a store appeared at \(path) while the backup was being restored; it was left as it is (nothing backed it up) and nothing was restored"
        case .restoreTargetPathEmpty:
            return "the restore's target path (--to) is empty"
        case .restoreTargetEndsInSlash(let path):
            return "refusing to restore to \(path): it ends with \"/\", which names a folder"
        case .restoreTargetBusy(let path):
            return "another storerescue is restoring \(path) at this moment; this restore left it as it is and restored nothing"
        case .restoreTargetReplaced(let path):
            return "\(path) was replaced by another process while this restore was under way (another storerescue writing it at the same time); it was left as that process made it, and nothing was restored"
        case .restoreTargetNotARegularFile(let path, let kind):
            return "refusing to restore to \(path): it is \(kind)"
        case .restoreTargetNameTooLong(let path, let bytes, let limit):
            return "refusing to restore to \(path): its name is \(bytes) bytes, and with its -journal "
                + "(\(bytes + StoreCreationError.longestSidecarSuffix)) it is longer than the \(limit) this file system allows: "
                + "SQLite could not write the restored store"
        case .restoreVerificationFailed(let backup, let problems):
            return "the backup \(backup) failed verification, nothing was replaced: " + problems.joined(separator: "; ")
        case .interrupted:
            return "interrupted; partial files were removed and the store was left untouched"
        case .storeKeptChanging(let path):
            return "the store \(path) kept changing while it was read, three times (an app is writing it); no backup was taken"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .sourceMissing:
            return "check the path; a store is the main file (e.g. default.store), not its -wal or -shm"
        case .sourceNotARegularFile:
            return "pass the store's main file itself (resolve symbolic links first, e.g. with realpath)"
        case .sourcePathEmpty:
            return "give the path of the store's main file (e.g. default.store)"
        case .sourcePathEndsInSlash(let path):
            return "pass the store's main file without the trailing \"/\": \(path.dropLast())"
        case .sourceNotAStore:
            return "run `storerescue inspect` on the file; if it is damaged, back up the raw files with `cp` first"
        case .storeLocked:
            return "try again later, or raise --timeout; check which process holds the store (lsof STORE)"
        case .snapshotFailed:
            return "check free space in the backup folder and that the store is readable, then run again"
        case .copyFailed(_, let folder, _):
            return "free space in \(folder) (the store and its -wal are copied there, then snapshotted and compressed) or raise the file-size limit (ulimit -f), or back up into another folder; then run the command again"
        case .tooManyOpenFiles:
            return StoreCreationError.openFilesHint
        case .snapshotInconsistent:
            return "run the backup again; if it happens again, report a bug"
        case .destinationUnusable(_, _, let folder):
            return "choose a \(folder.role) you may write to with \(folder.option), or fix its permissions"
        case .destinationIsStoreFolder(_, let folder):
            return "give a \(folder.option) outside the store's folder (an app must not find new files beside its store)"
        case .replacedStoreBackupFolderIsStoreFolder:
            return "give a --backups-dir outside the store's folder (an app must not find new files beside its store)"
        case .manifestUnreadable:
            return "the backup cannot be checked without its manifest (BACKUP.manifest.json beside it); use another backup"
        case .backupMissing:
            return "check the path; list the backups in the backup folder with `ls`"
        case .backupNotARegularFile:
            return "pass the backup's .gz file itself (a backup is a regular file written by `storerescue backup`)"
        case .restoreTargetExists:
            return "restore to a new path, or add --force to replace it (the replaced store is backed up first)"
        case .restoreTargetIsSidecar(let path, let store):
            return StoreCreationError.targetIsSidecar(path: path, store: store).recoverySuggestion
        case .restoreTargetAppeared:
            return "find out what created it (an app started, another restore); run the restore again, with --force to replace it after backing it up"
        case .restoreTargetPathEmpty:
            return "give --to the path of the store file to restore to"
        case .restoreTargetEndsInSlash(let path):
            return "name the store file without the trailing \"/\": \(path.dropLast())"
        case .restoreTargetBusy(let path), .restoreTargetReplaced(let path):
            return "another storerescue is writing \(path) (restore, upgrade or adopt): try again when it finishes, if the store it leaves is still one to replace (the pre-restore backup this run took is of the store that was there before)"
        case .restoreTargetNotARegularFile:
            return "restore to a plain file path; remove the link or folder first if it is not wanted"
        case .restoreTargetNameTooLong(let path, let bytes, let limit):
            return StoreCreationError.nameTooLong(path: path, bytes: bytes, limit: limit).recoverySuggestion
        case .restoreVerificationFailed(_, let problems) where problems.allSatisfy({ $0.hasPrefix("the restored snapshot fails PRAGMA") }):
            return "restore from another backup (`storerescue verify` finds a good one); or, to put back the store as it was when "
                + "backed up (it was damaged then), add --as-backed-up"
        case .restoreVerificationFailed:
            return "restore from another backup; run `storerescue verify` on each to find a good one"
        case .interrupted:
            return "run the command again when it can finish"
        case .storeKeptChanging:
            return "run the backup again, or close the app that uses the store first"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .sourceMissing, .sourceNotARegularFile, .sourcePathEndsInSlash, .backupMissing, .backupNotARegularFile, .manifestUnreadable: return .noInput
        case .sourceNotAStore: return .notAStore
        case .storeLocked, .interrupted, .storeKeptChanging, .restoreTargetReplaced, .restoreTargetBusy: return .temporaryFailure
        case .snapshotFailed, .copyFailed, .tooManyOpenFiles: return .ioError
        case .snapshotInconsistent: return .internalError
        case .destinationUnusable, .restoreTargetExists, .restoreTargetAppeared, .restoreTargetIsSidecar, .restoreTargetNotARegularFile,
             .restoreTargetNameTooLong, .restoreTargetEndsInSlash: return .cannotCreateOutput
        case .restoreVerificationFailed: return .checkFailed
        case .destinationIsStoreFolder, .replacedStoreBackupFolderIsStoreFolder, .sourcePathEmpty, .restoreTargetPathEmpty: return .usage
        }
    }

    private static func format(_ seconds: TimeInterval) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
