import Foundation
/// Why a store could not be opened or read.
public enum StoreAccessError: OperatorFacingError, Equatable {
    /// The input is not something that can be read as a store; `kind` says what it is instead.
    case rejected(path: String, kind: StoreKind, reason: String)
    /// Copying the store and its sidecars into a private directory failed; `folder` is where
    /// the copy was made (nil: `$TMPDIR`), for the hint.
    case privateCopyFailed(path: String, reason: String, folder: String? = nil)
    /// The store kept changing while it was being copied.
    case changedWhileCopying(path: String)
    /// A `-wal`, `-shm` or `-journal` of the store is a FIFO, folder, symbolic link, socket or
    /// device. SQLite would open it as a sidecar (blocking on a FIFO, creating files beside it),
    /// so the store is refused before anything is opened.
    case irregularSidecar(path: String, sidecar: String, kind: String)
    /// Opening the store found no file descriptor left (`EMFILE`: the process's limit, `ulimit
    /// -n`; `ENFILE`: the system's). Not the file's fault: it read as unreadable, exit 66 with
    /// "run as a user that can read the file" (a review, under `ulimit -n 5`).
    case tooManyOpenFiles(path: String, reason: String)

    /// The store at `path` could not be opened, for the system's error `code`: no descriptor
    /// left is `tooManyOpenFiles`; anything else is the file's, `unreadable`.
    static func cannotOpen(path: String, code: Int32) -> StoreAccessError {
        let text = String(cString: strerror(code))
        if code == EMFILE || code == ENFILE { return .tooManyOpenFiles(path: path, reason: text) }
        return .rejected(path: path, kind: .unreadable, reason: text)
    }

    /// The store at `path` could not be opened by SQLite: no descriptor left is
    /// `tooManyOpenFiles`; corruption is `damaged`; anything else `unreadable`.
    static func sqliteCannotOpen(path: String, error: SQLiteError, reason: String) -> StoreAccessError {
        if error.fileSystemFailure == .tooManyOpenFiles { return .tooManyOpenFiles(path: path, reason: reason) }
        return .rejected(path: path, kind: error.isCorruption ? .damaged : .unreadable, reason: reason)
    }

    public var description: String {
        switch self {
        case .rejected(let path, _, let reason): return "\(path): \(reason)"
        case .privateCopyFailed(let path, let reason, nil):
            return "\(path): cannot make a private copy to read in $TMPDIR (\(Self.temporaryFolder)): \(reason); the store itself was not read"
        case .privateCopyFailed(let path, let reason, _): return "\(path): cannot make a private copy to read: \(reason)"
        case .changedWhileCopying(let path):
            return "\(path): the store or its -wal kept changing while it was being copied"
        case .irregularSidecar(let path, let sidecar, let kind):
            return "\(path): its sidecar \(sidecar) is \(kind), not a regular file; the store was not opened"
        case .tooManyOpenFiles(let path, let reason): return "\(path): cannot be opened, no file descriptor left: \(reason)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .rejected(let path, let kind, _):
            switch kind {
            case .missing where path.contains("\u{FFFD}"):
                // Arguments reach Swift as UTF-8 strings: bytes that are not UTF-8 became U+FFFD,
                // so a file with such a name looks missing (a review).
                return "the path holds bytes that are not UTF-8, which this tool cannot pass on: rename the file (mv) or give it a second, UTF-8 name (ln, a hard link), and pass that name"
            case .missing: return "check the path; a store is the main file (e.g. default.store, Model.sqlite), not its -wal or -shm"
            case .directory: return "name the store file inside the directory (e.g. DIR/default.store)"
            case .unreadable where Self.isPastSQLitesPathLimit(path):
                return "its full path is longer than the 512 bytes SQLite opens (with the -journal it adds: at most 504): move or copy the store (with its -wal) to a shorter path"
            case .unreadable: return "run as a user that can read the file, or copy it somewhere readable"
            case .symlink: return "pass the real path, or add --follow-symlinks if the link is trusted"
            case .notRegularFile: return "copy the store into a regular file first"
            case .empty: return "the file has no content; look for the real store or its backups"
            case .notSQLite: return "this is not an SQLite file; check you were given the store and not an export or a sidecar"
            case .truncated: return "the copy is incomplete; ask for the file again, with its -wal and -shm, copied while the app is closed"
            case .damaged: return "recover its rows with `storerescue salvage FILE --out NEW` (add `--catalog` for a Core Data store), or `storerescue upgrade FILE --catalog CATALOG --on-failure clean` to quarantine it and start clean"
            case .coreDataStore, .sqliteDatabase, .notRead: return nil
            }
        case .privateCopyFailed(_, _, let folder?):
            return "free space in \(folder), where the private copy is made, or raise the file-size limit (ulimit -f)"
        case .privateCopyFailed:
            return "point TMPDIR at a folder that exists and that you may write to (it is \(Self.temporaryFolder)), or free space there, or raise the file-size limit (ulimit -f)"
        case .changedWhileCopying: return "close the app that uses the store, or take a backup with `storerescue backup` and inspect that"
        case .irregularSidecar(_, let sidecar, _):
            return "move \(sidecar) aside if it is not the store's own, or copy the store and its real -wal/-shm/-journal into a new folder as regular files"
        case .tooManyOpenFiles: return StoreCreationError.openFilesHint
        }
    }

    /// Where a private copy goes when no folder is chosen: `$TMPDIR`, or `/tmp` (as
    /// `PrivateTemporaryDirectory` picks it).
    static var temporaryFolder: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// Whether SQLite's Unix file layer would refuse `path` for its length (the full path, with
    /// room for its `-journal` in `SQLITE_MAX_PATHNAME`'s 512 bytes): such a store was called
    /// unreadable with "run as a user that can read the file" (a review). Until review rv10 the
    /// limit was taken as 512 bytes of the path alone; SQLite refuses from 505.
    static func isPastSQLitesPathLimit(_ path: String) -> Bool {
        SQLitePathTooLongError.isPastLimit(path)
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .rejected(_, let kind, _): return kind.exitStatus
        case .privateCopyFailed: return .ioError
        case .changedWhileCopying: return .temporaryFailure
        case .irregularSidecar: return .noInput
        case .tooManyOpenFiles: return .ioError
        }
    }

    /// The kind of input, when the error says what the input is.
    public var kind: StoreKind? {
        switch self {
        case .rejected(_, let kind, _): return kind
        case .irregularSidecar: return .notRegularFile
        case .privateCopyFailed, .changedWhileCopying, .tooManyOpenFiles: return nil
        }
    }
}
