/// Why `StoreCreator` did not create a store. Whatever the case, nothing was left at the target
/// path or next to it.
public enum StoreCreationError: OperatorFacingError, Equatable, Sendable {
    /// Something already exists at the target path. `create` never overwrites (there is no
    /// `--force`).
    case targetExists(path: String)
    /// A `-wal`, `-shm` or `-journal` of the target path exists: it belongs to a store that was
    /// (or is) there, and could hold its committed data.
    case sidecarExists(path: String, sidecar: String)
    /// The target path is the `-wal`, `-shm` or `-journal` of `store`, which exists: SQLite would
    /// take the new file for that store's sidecar (delete it, overwrite it, or apply it).
    case targetIsSidecar(path: String, store: String)
    /// The target path is a symbolic link (possibly dangling): refused, never followed.
    case targetIsSymlink(path: String)
    /// The folder that should hold the store is missing, not a folder, or not writable.
    case folderUnusable(path: String, folder: String, reason: String)
    /// The output path given is empty (`--out ""`).
    case emptyPath
    /// The file name leaves no room in the folder's file system for its `-journal` sidecar
    /// (`bytes` + `longestSidecarSuffix` past `limit`, the longest name it allows): SQLite could not write the store
    /// afterwards, and moving it into place could already fail.
    case nameTooLong(path: String, bytes: Int, limit: Int)

    /// What to try when no file descriptor was left (shared with `salvage`).
    static let openFilesHint = "not a lack of disk space: raise the limit on open files the command runs under (ulimit -n, a service's LimitNOFILE), or close other programs, then run the command again"

    /// The longest suffix SQLite adds to a store's name for a sidecar: `-journal`.
    static let longestSidecarSuffix = "-journal".utf8.count
    /// Writing the new store failed part way (disk full, the file-size limit, I/O error); the
    /// partial file was removed.
    case writeFailed(path: String, reason: String)
    /// Writing the new store was refused a file in `folder`, the target's folder where the
    /// private folder is (`SQLITE_CANTOPEN`, `SQLITE_READONLY`, `SQLITE_PERM`; `EACCES`, `EPERM`,
    /// `EROFS`): a folder or file system made read-only, or not this user's, after the command
    /// checked it. No lack of disk space (`WriteFailure`).
    case writeDenied(path: String, folder: String, reason: String)
    /// Writing the new store ran out of memory (`SQLITE_NOMEM`, `ENOMEM`). No lack of disk space.
    case outOfMemory(path: String, reason: String)
    /// Writing the new store found no file descriptor left (`EMFILE`, `ENFILE`). No lack of
    /// disk space, and no folder refusing files.
    case tooManyOpenFiles(path: String, reason: String)
    /// The store written does not read back as it should; it was removed. A bug in this tool.
    case verificationFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .targetExists(let path):
            return "\(path) already exists; refusing to overwrite it"
        case .sidecarExists(let path, let sidecar):
            return "\(sidecar) exists; refusing to create \(path) next to another store's sidecar"
        case .targetIsSidecar(let path, let store):
            return "\(path) would be a sidecar of \(store), which exists; refusing to create a store there (SQLite deletes or overwrites such a file when it opens \(store))"
        case .targetIsSymlink(let path):
            return "\(path) is a symbolic link; refusing to create a store through it"
        case .folderUnusable(let path, let folder, let reason):
            return "cannot create \(path): folder \(folder) \(reason)"
        case .emptyPath:
            return "cannot create a store at an empty path"
        case .nameTooLong(let path, let bytes, let limit):
            return "cannot create \(path): its name is \(bytes) bytes, and with its -journal (\(bytes + Self.longestSidecarSuffix)) it is longer than the \(limit) this file system allows"
        case .writeFailed(let path, let reason):
            return "cannot write \(path): \(reason)"
        case .writeDenied(let path, let folder, let reason):
            return "cannot write \(path): a file in \(folder) could not be created or written: \(reason)"
        case .outOfMemory(let path, let reason):
            return "cannot write \(path): out of memory: \(reason)"
        case .tooManyOpenFiles(let path, let reason):
            return "cannot write \(path): no file descriptor left: \(reason)"
        case .verificationFailed(let path, let reason):
            return "the store written for \(path) failed its own check: \(reason)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .targetExists:
            return "choose another path; a new store never replaces a file (there is no --force): move the existing one away first if it is no longer needed"
        case .targetIsSidecar:
            return "choose a name that does not end in -wal, -shm or -journal after another store's name"
        case .sidecarExists:
            return "a -wal or -journal can hold a store's committed data: move it away together with the store it belongs to, or choose another path"
        case .targetIsSymlink:
            return "pass the real path of a file that does not exist yet"
        case .folderUnusable:
            return "create the folder first, or choose a folder you can write to"
        case .emptyPath:
            return "name the new store's file, e.g. /path/to/New.sqlite"
        case .nameTooLong(_, _, let limit):
            return "choose a file name of at most \(limit - Self.longestSidecarSuffix) bytes"
        case .writeFailed:
            return "check free space and the file-size limit of the destination, then run the command again"
        case .writeDenied(_, let folder, _):
            return "not a lack of disk space: make \(folder) writable for this user (check its permissions, and that its file system is not mounted read-only), or choose a path in a folder you can write to; then run the command again"
        case .outOfMemory:
            return "not a lack of disk space: free memory (close other programs) or raise the memory limit the command runs under (ulimit -v, a service's MemoryMax), then run the command again"
        case .tooManyOpenFiles:
            return Self.openFilesHint
        case .verificationFailed:
            return "please report this with the model used; nothing was written"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .targetExists, .sidecarExists, .targetIsSidecar, .targetIsSymlink, .folderUnusable, .emptyPath, .nameTooLong, .writeDenied:
            return .cannotCreateOutput
        case .writeFailed, .outOfMemory, .tooManyOpenFiles: return .ioError
        case .verificationFailed: return .internalError
        }
    }
}
