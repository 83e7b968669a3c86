import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder opened before a name in it is created or replaced (a link, a rename), so that the
/// `fsync` that makes the new name durable cannot then fail for want of a file descriptor.
///
/// Why opened first: the `fsync` of the folder is part of the write — without it a crash can
/// lose the new name, or bring the old store back after "restored". Opened after the rename,
/// as `SafeFileOutput.syncFolder` did, a process at its open-file limit (`ulimit -n`: the
/// folder needs one descriptor more than the step before it) skipped it silently and reported
/// success (a review: `restore --force` at the one limit where only the folder's open failed).
/// Opened first, no descriptor left fails the write before anything changed at the name: the
/// caller throws its own "no file descriptor left" error (exit 74) and removes its temporary.
///
/// A folder that cannot be opened for another reason (`EACCES`: a folder this user may write
/// and search but not read, `-wx`) is synced by no one, whatever the limit: as before, the
/// write goes ahead without it rather than fail for good in such a folder.
///
/// ```swift
/// let folder = try FolderSync(SafeFileOutput.folder(of: storePath))
/// guard rename(newFile, storePath) == 0 else { … }
/// folder.sync()
/// ```
final class FolderSync {
    let path: String
    private var descriptor: Int32

    /// Opens `path` (a folder).
    ///
    /// - Parameter opening: the system's `open` (tests give one that fails with `EMFILE`).
    /// - Throws: `POSIXFailure` with `EMFILE` or `ENFILE` when no file descriptor is left
    ///   (`OpenFileLimit`); nothing else.
    init(_ path: String, opening: (String) -> Int32 = FolderSync.openFolder) throws(POSIXFailure) {
        self.path = path
        descriptor = opening(path)
        if descriptor < 0 {
            let code = errno
            if OpenFileLimit.isReached(code) { throw POSIXFailure(operation: "open folder \(path)", code: code) }
        }
    }

    deinit { close() }

    /// `open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)`.
    static func openFolder(_ path: String) -> Int32 {
        open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    /// `fsync`s the folder, then closes it. Does nothing the second time, or when it could not
    /// be opened for a reason other than the limit.
    func sync() {
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close()
    }

    /// Closes the folder without syncing it (the step it was opened for did not happen).
    func close() {
        guard descriptor >= 0 else { return }
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
        descriptor = -1
    }
}
