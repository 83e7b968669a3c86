import Foundation

/// Why a salvage did not produce a new store. Whatever the case, nothing was left at the output
/// path and the damaged store was not changed.
public enum SalvageError: OperatorFacingError, Equatable, Sendable {
    /// No page of the input reads as SQLite: there is nothing to recover.
    case nothingToSalvage(path: String, reason: String)
    /// The output path is the store itself or one of its sidecars.
    case outputIsInput(output: String, store: String)
    /// Something exists at the output path, or a `-wal`/`-shm`/`-journal` of it.
    case outputExists(path: String, existing: String)
    /// The output path is a sidecar name of another store that exists (`X-wal` beside `X`).
    case outputIsSidecar(path: String, store: String)
    /// A symbolic link is at the output path: never followed nor replaced.
    case outputIsSymlink(path: String)
    /// The output's folder is missing, not a folder, or not writable.
    case outputFolderUnusable(path: String, folder: String, reason: String)
    /// `--out ""`.
    case outputPathEmpty
    /// The output's name leaves no room for its `-journal` in the folder's file system.
    case outputNameTooLong(path: String, bytes: Int, limit: Int)
    /// Writing the new store failed part way (disk full, file-size limit, I/O error).
    case writeFailed(path: String, reason: String)
    /// Writing the new store was refused a file in `folder`, the output's folder where the
    /// private folder is (SQLite's `SQLITE_CANTOPEN`, `SQLITE_READONLY`, `SQLITE_PERM`; a
    /// system call's `EACCES`, `EPERM`, `EROFS`): a folder or file system made read-only, or
    /// not this user's, after the run began. No lack of disk space.
    case writeDenied(path: String, folder: String, reason: String)
    /// Writing the new store ran out of memory (`SQLITE_NOMEM`, `ENOMEM`). No lack of disk space.
    case outOfMemory(path: String, reason: String)
    /// Writing the new store found no file descriptor left (`EMFILE`, `ENFILE`).
    case tooManyOpenFiles(path: String, reason: String)
    /// SQLite refused what salvage asked it to write (an SQL error, a constraint, a misuse: any
    /// result code but the file system's, `SQLiteError.isFileSystemFailure`). A bug in this tool,
    /// not a lack of disk space: every statement is its own, into tables it made itself, and a row
    /// a unique index refuses is counted (`conflictsDropped`), never thrown.
    case writeRefused(path: String, reason: String)
    /// `--version` names no version of the catalog.
    case unknownVersion(catalog: String, version: String, available: [String])
    /// Nothing that survived names the store's version (and the catalog has several).
    case versionUndetermined(path: String, reason: String, available: [String])
    /// The surviving evidence fits several versions equally.
    case ambiguousVersion(path: String, versions: [String])
    /// The new store did not pass its own check; it was removed. A bug in this tool.
    case verificationFailed(path: String, reason: String)
    /// Interrupted (SIGINT, SIGTERM): partial files were removed.
    case interrupted

    public var description: String {
        switch self {
        case .nothingToSalvage(let path, let reason): return "\(path): nothing to salvage: \(reason)"
        case .outputIsInput(let output, let store): return "\(output) is \(store) or one of its sidecars; refusing to write over the damaged store"
        case .outputExists(let path, let existing):
            return existing == path ? "\(path) already exists; refusing to overwrite it" : "\(existing) exists; refusing to create \(path) next to another store's sidecar"
        case .outputIsSidecar(let path, let store): return StoreCreationError.targetIsSidecar(path: path, store: store).description
        case .outputIsSymlink(let path): return "\(path) is a symbolic link; refusing to create a store through it"
        case .outputFolderUnusable(let path, let folder, let reason): return "cannot create \(path): folder \(folder) \(reason)"
        case .outputPathEmpty: return "cannot write the salvaged store at an empty path"
        case .outputNameTooLong(let path, let bytes, let limit):
            return StoreCreationError.nameTooLong(path: path, bytes: bytes, limit: limit).description
        case .writeFailed(let path, let reason): return "writing \(path) failed: \(reason); nothing was left at \(path)"
        case .writeDenied(let path, let folder, let reason):
            return "writing \(path) failed: a file in \(folder) could not be created or written: \(reason); nothing was left at \(path)"
        case .outOfMemory(let path, let reason): return "writing \(path) ran out of memory: \(reason); nothing was left at \(path)"
        case .tooManyOpenFiles(let path, let reason): return "writing \(path) found no file descriptor left: \(reason); nothing was left at \(path)"
        case .writeRefused(let path, let reason): return "SQLite refused what salvage wrote into \(path): \(reason); nothing was left at \(path)"
        case .unknownVersion(let catalog, let version, _): return "catalog \(catalog) has no version \"\(version)\""
        case .versionUndetermined(let path, let reason, _): return "\(path): cannot tell which version wrote it: \(reason)"
        case .ambiguousVersion(let path, let versions):
            return "\(path): what survived (metadata, model cache or schema) fits several versions equally: \(versions.map { "\"\($0)\"" }.joined(separator: ", "))"
        case .verificationFailed(let path, let reason): return "the store written for \(path) failed its own check: \(reason); it was removed"
        case .interrupted: return "interrupted; partial files were removed and the store was left untouched"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .nothingToSalvage: return "check that this is the store file (or a copy of it); a file with no SQLite page in it holds no rows to recover"
        case .outputIsInput: return "write the salvaged store to a new path, e.g. in another folder"
        case .outputExists: return "choose a new path; salvage never replaces a file: move the existing one away first if it is no longer needed"
        case .outputIsSidecar(let path, let store): return StoreCreationError.targetIsSidecar(path: path, store: store).recoverySuggestion
        case .outputIsSymlink: return "pass the real path of a file that does not exist yet"
        case .outputFolderUnusable: return "create the folder first, or choose a folder you can write to"
        case .outputPathEmpty: return "name the new store's file with --out, e.g. --out /path/to/Salvaged.sqlite"
        case .outputNameTooLong(let path, let bytes, let limit):
            return StoreCreationError.nameTooLong(path: path, bytes: bytes, limit: limit).recoverySuggestion
        case .writeFailed: return "free disk space or raise the file-size limit (ulimit -f), then run the command again"
        case .writeDenied(_, let folder, _):
            return "not a lack of disk space: make \(folder) writable for this user (check its permissions, and that its file system is not mounted read-only), or give --out a path in a folder you can write to; then run the command again"
        case .tooManyOpenFiles: return StoreCreationError.openFilesHint
        case .outOfMemory:
            return "not a lack of disk space: free memory (close other programs) or raise the memory limit the command runs under (ulimit -v, a service's MemoryMax), then run the command again"
        case .writeRefused:
            return "this is a bug in storerescue, not a lack of disk space: please report it with the command line; the damaged store was not changed"
        case .unknownVersion(_, _, let available), .versionUndetermined(_, _, let available):
            return available.isEmpty
                ? "the catalog lists no versions; salvage without --catalog to get a plain database"
                : "pass --version with one of: \(available.map { "\"\($0)\"" }.joined(separator: ", ")), or salvage without --catalog"
        case .ambiguousVersion: return "pass --version NAME to say which one the app wrote"
        case .verificationFailed: return "please report this with the command line; salvage without --catalog still writes a plain database"
        case .interrupted: return "run the command again when it can finish"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .nothingToSalvage, .versionUndetermined, .ambiguousVersion: return .notAStore
        case .outputIsInput, .outputExists, .outputIsSidecar, .outputIsSymlink, .outputFolderUnusable, .outputPathEmpty, .outputNameTooLong: return .cannotCreateOutput
        case .writeFailed, .outOfMemory, .tooManyOpenFiles: return .ioError
        case .writeDenied: return .cannotCreateOutput
        case .unknownVersion: return .usage
        case .verificationFailed, .writeRefused: return .internalError
        case .interrupted: return .temporaryFailure
        }
    }

    /// A system call's failure (its `errno`) while writing `path`, a file of the salvage's
    /// own: refused (`EACCES`, `EPERM`, `EROFS`) is `writeDenied`, `ENOMEM` `outOfMemory`,
    /// anything else (`ENOSPC`, `EFBIG`, `EIO`) `writeFailed`. `reason`: the system's, unless
    /// given.
    static func writing(_ path: String, code: Int32, reason given: String? = nil) -> SalvageError {
        let reason = given ?? SafeFileOutput.describe(code)
        switch WriteFailure.kind(ofErrno: code) {
        case .denied: return .writeDenied(path: path, folder: (path as NSString).deletingLastPathComponent, reason: reason)
        case .outOfMemory: return .outOfMemory(path: path, reason: reason)
        case .tooManyOpenFiles: return .tooManyOpenFiles(path: path, reason: reason)
        case .noRoom, .refused: return .writeFailed(path: path, reason: reason)
        }
    }

    /// The salvage form of a refusal `create` would give for the same output path.
    init(creation error: StoreCreationError) {
        switch error {
        case .targetExists(let path): self = .outputExists(path: path, existing: path)
        case .sidecarExists(let path, let sidecar): self = .outputExists(path: path, existing: sidecar)
        case .targetIsSidecar(let path, let store): self = .outputIsSidecar(path: path, store: store)
        case .targetIsSymlink(let path): self = .outputIsSymlink(path: path)
        case .folderUnusable(let path, let folder, let reason): self = .outputFolderUnusable(path: path, folder: folder, reason: reason)
        case .emptyPath: self = .outputPathEmpty
        case .nameTooLong(let path, let bytes, let limit): self = .outputNameTooLong(path: path, bytes: bytes, limit: limit)
        case .writeFailed(let path, let reason): self = .writeFailed(path: path, reason: reason)
        case .writeDenied(let path, let folder, let reason): self = .writeDenied(path: path, folder: folder, reason: reason)
        case .outOfMemory(let path, let reason): self = .outOfMemory(path: path, reason: reason)
        case .tooManyOpenFiles(let path, let reason): self = .tooManyOpenFiles(path: path, reason: reason)
        case .verificationFailed(let path, let reason): self = .verificationFailed(path: path, reason: reason)
        }
    }
}
