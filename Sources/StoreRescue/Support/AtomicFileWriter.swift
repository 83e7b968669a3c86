import Foundation
import SRSQLite

/// What identifies one state of a file: enough to notice that another process replaced or
/// changed it between a read and a write.
struct FileFingerprint: Sendable, Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modificationSeconds: Int64
    var modificationNanoseconds: Int64

    /// The fingerprint of the file at `path` (not following a final symbolic link), or nil when
    /// nothing is there.
    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modificationSeconds = Int64(info.st_mtim.tv_sec)
        modificationNanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}

/// Replaces a small file all at once, on top of `SafeFileOutput` (temporary file in the same
/// folder, flushed, renamed over the target, folder synced): a reader sees the old file or the new
/// one, never half of either, and a crash leaves the old file intact. On top of that it refuses a
/// symbolic link at the target, keeps a replaced file's permissions, and writes nothing when the
/// file changed since it was read (checked under a lock that concurrent writers share).
enum AtomicFileWriter {
    struct Failure: Error, Equatable {
        var reason: String
        var status: ExitStatus
    }

    /// Writes `data` to `path`.
    ///
    /// - Parameters:
    ///   - expected: the fingerprint of the file as it was read, or nil when it must not exist
    ///     yet; if the file changed meanwhile, nothing is written (`temporaryFailure`).
    ///   - result: when the file is the command's final result, what it is (`PublishedResult`).
    /// - Throws: `Failure` when the target is a symbolic link or not a regular file, changed, or
    ///   the folder is not writable.
    static func write(_ data: Data, to path: String, expected: FileFingerprint?, as result: PublishedResult? = nil) throws(Failure) {
        try checkTarget(path)
        // A new file named as a store's sidecar (`X-wal` beside a store X) would be taken by
        // SQLite for X's and deleted, or applied to it (a review's `catalog learn` wrote one).
        if expected == nil, let store = CreationTarget.storeWhoseSidecar(path) {
            throw Failure(reason: "it would be a sidecar of \(store), which exists (SQLite deletes or applies such a file when it opens \(store))", status: .cannotCreateOutput)
        }
        var existing = stat()
        let permissions: mode_t = lstat(path, &existing) == 0 ? existing.st_mode & 0o7777 : 0o644
        do {
            let output = try SafeFileOutput(destinationPath: path, permissions: permissions)
            // The umask may have narrowed the mode; a replaced file keeps exactly its own.
            output.setPermissions(permissions)
            try data.withUnsafeBytes { try output.write($0) }
            // The check and the rename under the replaced file's lock: without it two writers
            // could both pass the check, both report success, and the last rename win (a review
            // lost one of two concurrent `catalog learn`s in 6 of 15 runs).
            let lock = try expected == nil ? nil : lockFile(at: path)
            defer { if let lock { close(lock) } }
            guard FileFingerprint(path: path) == expected else {
                output.discard()
                let reason = expected == nil ? "it was created by another process meanwhile" : "it was changed by another process meanwhile"
                throw Failure(reason: reason, status: .temporaryFailure)
            }
            try checkTarget(path)
            try output.publish(replacingExisting: expected != nil, as: result)
        } catch let failure as Failure {
            throw failure
        } catch let error as SafeFileOutputError {
            throw Failure(reason: Self.reason(error), status: error.exitStatus)
        } catch {
            throw Failure(reason: "\(error)", status: .ioError)
        }
    }

    /// How long a writer waits for another to finish replacing the same file.
    static let lockWait: Duration = .seconds(10)

    /// The file at `path` opened (never through a symbolic link) and locked (`flock`, exclusive)
    /// against every other writer of this type: the descriptor, which `close` unlocks. A writer
    /// that held it and replaced the file leaves the lock on the file it replaced; the next
    /// writer then finds the path changed and writes nothing. Nil when nothing is there (the
    /// check that follows says so).
    private static func lockFile(at path: String) throws(Failure) -> Int32? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        let deadline = ContinuousClock.now + lockWait
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            // A file system without flock (some NFS and FUSE mounts): the check goes on unlocked,
            // as before the lock existed, rather than failing every run with a false reason.
            if [ENOLCK, EOPNOTSUPP, ENOSYS, EINVAL].contains(errno) { return descriptor }
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                close(descriptor)
                throw Failure(reason: "another process kept it locked for \(lockWait)", status: .temporaryFailure)
            }
            usleep(10_000)
        }
        return descriptor
    }

    /// The part of a `SafeFileOutputError` that says why, for callers that name the file themselves.
    private static func reason(_ error: SafeFileOutputError) -> String {
        switch error {
        case .cannotCreate(let path, let reason): return "cannot create a file in \(SafeFileOutput.folder(of: path)): \(reason)"
        case .writeFailed(_, let reason): return "cannot write: \(reason)"
        case .destinationExists: return "it was created by another process meanwhile"
        case .destinationIsSymbolicLink: return "it is a symbolic link; refusing to replace it"
        case .cannotPublish(_, let reason): return "cannot rename the new file into place: \(reason)"
        case .tooManyOpenFiles(let path, let reason): return "cannot create a file in \(SafeFileOutput.folder(of: path)): no file descriptor left: \(reason)"
        }
    }

    /// A symbolic link or special file at the target is refused rather than replaced.
    private static func checkTarget(_ path: String) throws(Failure) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFLNK: throw Failure(reason: "it is a symbolic link; refusing to replace it", status: .cannotCreateOutput)
        default: throw Failure(reason: "it is not a regular file", status: .cannotCreateOutput)
        }
    }
}
