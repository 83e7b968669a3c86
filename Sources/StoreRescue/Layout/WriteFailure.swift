import Foundation
import SRSQLite

/// What went wrong while a new store was written, as an operator can act on it — shared by
/// `create` (`StoreCreator`) and `salvage` (`Salvager`), which both write a new file in a private
/// folder inside the destination folder.
///
/// Only a full disk, the file-size limit or an I/O error is "free disk space" (exit 74). A folder
/// that refuses files (`SQLITE_CANTOPEN`, `SQLITE_READONLY`, `SQLITE_PERM`; `EACCES`, `EPERM`,
/// `EROFS`) is the destination folder's problem (exit 73); memory running out says so (exit 74
/// with a memory hint); SQLite refusing a statement (`SQLITE_ERROR`, a constraint, a misuse) is
/// this tool's bug (exit 70). Until stop 26 all four read "free disk space" in `salvage`, and
/// until stop 27 in `create`.
struct WriteFailure {
    enum Kind: Equatable {
        /// Disk full, the file-size limit, an I/O error: freeing space (or raising the limit) helps.
        case noRoom
        /// A file in the folder was refused: read-only, or not this user's to write.
        case denied
        /// Memory ran out.
        case outOfMemory
        /// No file descriptor left (`ulimit -n`): a review's `create` under `ulimit -n 7` read
        /// as a folder refusing files (exit 73), and before that as a full disk.
        case tooManyOpenFiles
        /// SQLite refused a statement the tool wrote: not the file system's doing.
        case refused
    }

    let kind: Kind
    /// The reason to show: SQLite's message and code, with the system's reason when it kept one
    /// (or, when it kept none for a refused file, the folder's).
    let reason: String

    /// Classifies `error`, thrown while writing a file in the private folder `workspace`.
    /// Errors that are neither `SQLiteError` nor `POSIXFailure` are `noRoom` (the old reading).
    init(_ error: any Error, workspace: String) {
        switch error {
        case let error as SQLiteError:
            var reason = StoreCreator.reason(error) + (error.systemReason.map { ": \($0)" } ?? "")
            guard var kind = error.fileSystemFailure else {
                self.init(kind: .refused, reason: reason)
                return
            }
            if kind == .denied, error.systemErrno == 0, let found = Self.folderFailure(workspace) {
                // SQLite could not open a file and kept no reason: the folder tells which.
                kind = found.kind
                reason += ": " + found.reason
            }
            switch kind {
            case .noRoom: self.init(kind: .noRoom, reason: reason)
            case .denied: self.init(kind: .denied, reason: reason)
            case .outOfMemory: self.init(kind: .outOfMemory, reason: reason)
            case .tooManyOpenFiles: self.init(kind: .tooManyOpenFiles, reason: reason)
            }
        case let error as POSIXFailure:
            self.init(kind: Self.kind(ofErrno: error.code), reason: error.description)
        default:
            self.init(kind: .noRoom, reason: StoreCreator.reason(error))
        }
    }

    private init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// A system call's error number, read the same way: refused (`EACCES`, `EPERM`, `EROFS`),
    /// `ENOMEM`, anything else (`ENOSPC`, `EFBIG`, `EIO`) no room.
    static func kind(ofErrno code: Int32) -> Kind {
        switch code {
        case EACCES, EPERM, EROFS: return .denied
        case ENOMEM: return .outOfMemory
        case _ where OpenFileLimit.isReached(code): return .tooManyOpenFiles
        default: return .noRoom
        }
    }

    /// Why `folder` takes no new file, when it says: writing refused (`access`: EACCES, EPERM
    /// for an immutable folder, EROFS), or no free block or inode left; nil when it takes files.
    static func folderFailure(_ folder: String) -> (kind: SQLiteError.FileSystemFailure, reason: String)? {
        if access(folder, W_OK) != 0 { return (.denied, SafeFileOutput.describe(errno)) }
        var info = statvfs()
        if statvfs(folder, &info) == 0, info.f_bavail == 0 || (info.f_files > 0 && info.f_favail == 0) {
            return (.noRoom, SafeFileOutput.describe(ENOSPC))
        }
        return nil
    }
}
