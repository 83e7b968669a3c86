import Foundation

/// Why `upgrade` or `adopt` stopped. Whatever the case, the store at its path is the original
/// (unless the report says it was replaced or fell back to clean).
public enum UpgradeError: OperatorFacingError, Equatable {
    /// Another process kept the store open past `--timeout`.
    case storeInUse(path: String, seconds: TimeInterval)
    /// The store is a symbolic link: an upgrade replaces a file, and would replace the link.
    case storeIsSymbolicLink(path: String)
    /// The backup could not be verified; nothing was replaced.
    case backupNotVerified(backup: String, problems: [String])
    /// The store changed after it was backed up (another process wrote to it).
    case storeChangedSinceBackup(path: String, detail: String)
    /// The retained snapshot could not be read back.
    case snapshotUnreadable(path: String, reason: String)
    /// The stamped file has no `Z_METADATA` row (or several).
    case metadataRowMissing(path: String, rows: Int)
    /// The result did not come out as the target version (a bug: nothing was replaced).
    case resultNotAtTarget(path: String, detail: String)
    /// The upgraded (or adopted) store was put in place, then the check of the store at the
    /// path failed (`match` does not find it at `version`). The store is the new one: the run
    /// ends with its status (`upgraded`, `adoptedOnly`) and this as its error. Exit 70.
    case publishedNotAtTarget(path: String, version: String, backup: String, detail: String)
    /// `adopt --as` names a version the store is not.
    case notThatVersion(path: String, requested: String, detail: String)
    /// The backup folder is the store's own folder (never beside the store).
    case backupFolderIsStoreFolder(path: String)
    /// The store's file name leaves no room for SQLite's `-journal` within the file system's
    /// name limit (`bytes` + 8 past `limit`): SQLite reads such a store but cannot write it in
    /// place, so it cannot be settled and replaced (a review's upgrade read it as damaged).
    case storeNameTooLong(path: String, bytes: Int, limit: Int)
    /// A quarantine or incident file could not be written.
    case quarantineFailed(path: String, reason: String)
    /// `--on-failure clean`: the clean store is in place and the original quarantined, but what
    /// the fallback does after its swap (the incident's last rewrite) failed. The
    /// run ends as a fallback (exit 5), with this as its error.
    case fallbackRecordsUnfinished(path: String, version: String, quarantine: String, reason: String, incidentState: String)
    /// An earlier fallback of this store was interrupted after the store was moved aside; it
    /// must be finished first (`upgrade` finishes it when run with the same backup folder).
    case interruptedFallback(path: String, intent: String, detail: String)

    public var description: String {
        switch self {
        case .storeInUse(let path, let seconds):
            return "\(path) is open in another process (still after \(Int(seconds)) s); nothing was changed"
        case .storeIsSymbolicLink(let path):
            return "\(path) is a symbolic link; an upgrade replaces the store's file and will not replace a link"
        case .backupNotVerified(let backup, let problems):
            return "the backup \(backup) did not verify (\(problems.prefix(3).joined(separator: "; "))); nothing was changed"
        case .storeChangedSinceBackup(let path, let detail):
            return "\(path) changed after it was backed up (\(detail)); it was not replaced"
        case .snapshotUnreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .metadataRowMissing(let path, let rows): return "\(path) has \(rows) Z_METADATA rows where Core Data writes one"
        case .resultNotAtTarget(let path, let detail): return "the upgraded store \(path) is not what was planned: \(detail); nothing was replaced"
        case .publishedNotAtTarget(let path, let version, let backup, let detail):
            return "\(path) was replaced by the store written as \(version), but the check of it in place failed: \(detail); the original is in the backup \(backup)"
        case .notThatVersion(let path, let requested, let detail): return "\(path) is not \(requested): \(detail); nothing was changed"
        case .backupFolderIsStoreFolder(let path):
            return BackupError.destinationIsStoreFolder(path: path, folder: .upgradeBackupDirectory).description
        case .storeNameTooLong(let path, let bytes, let limit):
            return "the name of \(path) is \(bytes) bytes, and with SQLite's -journal (\(bytes + StoreCreationError.longestSidecarSuffix)) "
                + "it is longer than the \(limit) this file system allows: SQLite cannot write the store where it is "
                + "(the store is not damaged); nothing was changed"
        case .quarantineFailed(let path, let reason): return "cannot quarantine into \(path): \(reason); the store was not replaced"
        case .interruptedFallback(let path, let intent, let detail):
            return "an earlier fallback of \(path) was interrupted (\(intent)): \(detail)"
        case .fallbackRecordsUnfinished(let path, let version, let quarantine, let reason, let state):
            return "\(path) was replaced by a clean \(version) store and the original quarantined in \(quarantine), but the fallback's records could not be finished: \(reason); the incident there is marked \(state)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .storeInUse: return "close the app that uses the store (or wait for it) and run the command again, or give a longer --timeout"
        case .storeIsSymbolicLink: return "pass the path of the store's real file"
        case .backupNotVerified: return "check the backup folder's disk (storerescue verify BACKUP), or choose another with --backup-dir"
        case .storeChangedSinceBackup: return "close the app that uses the store and run the command again"
        case .snapshotUnreadable: return "check the backup folder's disk and run the command again"
        case .metadataRowMissing: return "inspect the store (storerescue inspect STORE); `storerescue upgrade STORE --catalog CATALOG --on-failure clean` saves its rows into a clean store"
        case .resultNotAtTarget: return "report a bug with the command line, the catalog and (if you can) the store"
        case .publishedNotAtTarget(let path, _, let backup, _):
            return "see what the store is now with storerescue match \(ShellQuote.quote(path)) --catalog CATALOG; to put the original back (the app closed): "
                + "storerescue restore \(ShellQuote.quote(backup)) --to \(ShellQuote.quote(path)) --force; please report a bug with the command line, the catalog and (if you can) the backup"
        case .notThatVersion: return "adopt stamps only the version a store really is: run storerescue match STORE --catalog CATALOG"
        case .backupFolderIsStoreFolder(let path):
            return BackupError.destinationIsStoreFolder(path: path, folder: .upgradeBackupDirectory).recoverySuggestion
        case .storeNameTooLong(_, _, let limit):
            return "rename the store (with its -wal and -shm) to a name of at most \(limit - StoreCreationError.longestSidecarSuffix) bytes, "
                + "and run the command on that name"
        case .quarantineFailed: return "check the backup folder's permissions and free space, then run the command again"
        case .interruptedFallback: return "run the same command again with the same --backup-dir; it finishes the fallback first"
        case .fallbackRecordsUnfinished(_, _, let quarantine, _, let state) where state == "complete":
            return "the clean store is in place and can be used; \(quarantine)/incident.txt says how to put the original back, but may lack the swap's own notes (sidecars folded or moved, a spent -journal removed): compare the folder's files with it"
        case .fallbackRecordsUnfinished(_, _, let quarantine, _, _):
            return "the clean store is in place and can be used; check free space in \(quarantine), then run the same command again with the same --backup-dir: it marks the incident complete without redoing the fallback; \(quarantine)/incident.txt says how to put the original back"
        }
    }

    /// What failed, for a `fallbackRecordsUnfinished` report's phase; the description otherwise.
    var reason: String {
        if case .fallbackRecordsUnfinished(_, _, _, let reason, _) = self { return reason }
        return description
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .storeInUse, .storeChangedSinceBackup: return .temporaryFailure
        case .storeIsSymbolicLink: return .noInput
        case .backupNotVerified, .snapshotUnreadable, .quarantineFailed: return .ioError
        case .metadataRowMissing: return .notAStore
        case .resultNotAtTarget, .publishedNotAtTarget: return .internalError
        case .notThatVersion: return .refused
        case .backupFolderIsStoreFolder: return .usage
        case .storeNameTooLong: return .cannotCreateOutput
        case .interruptedFallback: return .temporaryFailure
        // The store's state decides: the clean store is in place, as after a whole fallback.
        case .fallbackRecordsUnfinished: return .fellBackToClean
        }
    }
}
