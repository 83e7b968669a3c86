#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why `FileMover` could not move a file (errno values kept as numbers). Whatever the case, the
/// source is still at its path and nothing at the destination was replaced. Exit statuses: 73
/// (`destinationExists`, `moveFailed`, `notARegularFile`, `sourceNotRemoved`), 74 (`unreadable`,
/// `copyMismatch`).
public enum FileMoveError: OperatorFacingError, Equatable {
    /// Something already has the destination's name; it was left as it was.
    case destinationExists(path: String)
    /// `link`/`rename` failed with `code` (permissions, a missing folder, …).
    case moveFailed(source: String, destination: String, code: Int32)
    /// Reading the source, or the copy back, failed with `code` (a move across file systems).
    /// `EMFILE`/`ENFILE` is no file descriptor left to open it (`OpenFileLimit`): said so, with
    /// the open-files hint, not "check the file's permissions".
    case unreadable(path: String, code: Int32)
    /// Only regular files are copied across file systems (a link or a device is not).
    case notARegularFile(path: String)
    /// The copy's size or SHA-256 differ from the source's, read again after copying (it changed
    /// while it was copied); the copy was discarded.
    case copyMismatch(source: String, destination: String)
    /// The copy is complete and checked at `copy`, but the source could not be unlinked.
    case sourceNotRemoved(source: String, copy: String, code: Int32)

    public var description: String {
        switch self {
        case .destinationExists(let path):
            return "cannot move a file to \(path): that name is taken; nothing was overwritten"
        case .moveFailed(let source, let destination, let code):
            return "cannot move \(source) to \(destination): \(Self.describe(code)); it was left where it was"
        case .unreadable(let path, let code) where OpenFileLimit.isReached(code):
            return "cannot open \(path): \(OpenFileLimit.describe(code)); nothing was moved"
        case .unreadable(let path, let code):
            return "cannot read \(path): \(Self.describe(code)); nothing was moved"
        case .notARegularFile(let path):
            return "\(path) is not a regular file and cannot be copied to another file system; it was left where it was"
        case .copyMismatch(let source, let destination):
            return "the copy of \(source) to \(destination) does not match it (it changed while it was copied); the copy was discarded, \(source) was left where it was"
        case .sourceNotRemoved(let source, let copy, let code):
            return "\(source) was copied to \(copy) and checked, but cannot be removed: \(Self.describe(code)); both are there"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .destinationExists: return "move the file that has that name away, or choose another folder, then run the command again"
        case .moveFailed, .sourceNotRemoved: return "check both folders' permissions and free space, then run the command again"
        case .unreadable(_, let code) where OpenFileLimit.isReached(code): return StoreCreationError.openFilesHint
        case .unreadable: return "check the file's permissions and the disk, then run the command again"
        case .notARegularFile: return "look at the file (someone may have planted a link there) and move it away yourself"
        case .copyMismatch: return "stop the process writing to the file, then run the command again"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .destinationExists, .moveFailed, .notARegularFile, .sourceNotRemoved: return .cannotCreateOutput
        case .unreadable, .copyMismatch: return .ioError
        }
    }

    private static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
