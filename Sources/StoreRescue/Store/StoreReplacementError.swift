import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a store could not be replaced (errno values kept as numbers). Moving files throws
/// `FileMoveError`.
public enum StoreReplacementError: OperatorFacingError, Equatable {
    /// Another process kept the store open past the timeout. Exit 75.
    case inUse(path: String, seconds: TimeInterval)
    /// The wait for other connections was stopped by a cancellation (SIGINT, SIGTERM). Exit 75.
    case interrupted(path: String)
    /// The store could not be opened or checkpointed (damaged, unreadable). Exit 65.
    case cannotSettle(path: String, reason: String)
    /// Folding the store's `-wal` into its main file failed for want of room (disk full, the
    /// file-size limit, an I/O error writing): the store is healthy and unchanged.
    case noRoomToSettle(path: String, reason: String)
    /// Sidecars are still beside the store after settling (or beside a missing store). Exit 73.
    case sidecarsRemain(path: String, sidecars: [String])
    /// The store path is not a regular file. Exit 73.
    case notARegularFile(path: String)
    /// The replacement file cannot be used (a caller's bug). Exit 70.
    case newFileUnusable(path: String, reason: String)
    /// `rename` failed with `code` (`EEXIST`: a store appeared where there was none). Exit 73.
    case renameFailed(path: String, code: Int32)
    /// The store (or a file of the replacement: its new file, a sidecar) could not be opened or
    /// read under the lock, with `code`. Exit 74. `EMFILE`/`ENFILE` is no file descriptor left
    /// (`OpenFileLimit`): said so, with the open-files hint, never "check the permissions".
    case cannotRead(path: String, code: Int32)
    /// This process may not write the store, a sidecar of it or its folder (`reason` says which:
    /// `permissionProblem`), checked by `upgrade`, `adopt` and `restore --force` before anything
    /// is written. Not damage: never "saved with --on-failure clean". Exit 73.
    case notWritable(path: String, reason: String)

    public var description: String {
        switch self {
        case .inUse(let path, let seconds):
            let waited = seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
            return "\(path) is open in another process (still after \(waited) s); it was not replaced"
        case .interrupted(let path): return "interrupted while waiting for another process to close \(path); it was not replaced"
        case .cannotSettle(let path, let reason): return "\(path) cannot be checkpointed before it is replaced: \(reason); it was not replaced"
        case .noRoomToSettle(let path, let reason):
            return "\(path) cannot be checkpointed before it is replaced (its -wal folded into its main file): \(reason); it was not replaced, and is as it was"
        case .sidecarsRemain(let path, let sidecars):
            return "\(path) still has \(sidecars.map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")) beside it; it was not replaced"
        case .notARegularFile(let path): return "\(path) is not a regular file; it was not replaced"
        case .newFileUnusable(let path, let reason): return "the replacement \(path) \(reason)"
        case .renameFailed(let path, let code): return "cannot put the new store at \(path): \(String(cString: strerror(code))); the old store is still there"
        case .cannotRead(let path, let code) where OpenFileLimit.isReached(code):
            return "cannot open \(path): \(OpenFileLimit.describe(code)); the store was not replaced"
        case .cannotRead(let path, let code):
            return "cannot read \(path) while it is locked: \(String(cString: strerror(code))); it was not replaced"
        case .notWritable(let path, let reason):
            return "\(path) cannot be replaced in place: \(reason); nothing was changed"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .inUse: return "close the app that uses the store (or wait for it to finish) and run the command again, or give a longer --timeout"
        case .interrupted: return "run the command again when it can finish"
        case .cannotSettle: return "check the store with `storerescue inspect --deep`; a damaged store is saved with `storerescue upgrade STORE --catalog CATALOG --on-failure clean`"
        case .noRoomToSettle: return "free disk space where the store is (folding its -wal in needs room for the pages it holds) or raise the file-size limit (ulimit -f), then run the command again"
        case .sidecarsRemain: return "look at the leftover files (they may belong to another process) and move them away, then run the command again"
        case .notARegularFile: return "pass the store's real main file"
        case .newFileUnusable(_, let reason) where reason.contains("put there"):
            // After the rename (review rv10: "… nothing was replaced" said of a store replaced).
            return "another process replaced the store at the same instant: the new file was put in place, then something else was; find that process and check what is at the store's path now"
        case .newFileUnusable(_, let reason) where reason.contains("something replaced it"):
            return "another process writes in the store's folder: find it (the store's owner, if the folder is theirs), then run the command again; nothing was replaced"
        case .newFileUnusable: return "report a bug with the command line"
        case .renameFailed: return "check the folder's permissions and free space, then run the command again"
        case .cannotRead(_, let code) where OpenFileLimit.isReached(code): return StoreCreationError.openFilesHint
        case .cannotRead: return "check the store's permissions (it must be readable and writable by you) and the disk"
        case .notWritable:
            return "run the command as a user who may write the store, its -wal and -shm and its folder (the store's owner: sudo -u OWNER …), or give yourself that permission (chmod u+w STORE; the folder needs write and search permission); the store is not damaged"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .inUse, .interrupted: return .temporaryFailure
        case .cannotSettle: return .notAStore
        case .noRoomToSettle: return .ioError
        case .sidecarsRemain, .notARegularFile, .renameFailed, .notWritable: return .cannotCreateOutput
        case .cannotRead: return .ioError
        case .newFileUnusable: return .internalError
        }
    }
}
