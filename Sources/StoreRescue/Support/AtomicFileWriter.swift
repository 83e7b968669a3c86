import Foundation

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

/// Replaces a file all at once: the new content goes to a temporary file in the same folder,
/// is flushed to disk, and is renamed over the target, so a reader sees the old file or the new
/// one, never half of either, and a crash leaves the old file intact.
enum AtomicFileWriter {
    struct Failure: Error, Equatable {
        var reason: String
        var status: ExitStatus
    }

    /// Writes `data` to `path`.
    ///
    /// - Parameter expected: the fingerprint of the file as it was read, or nil when it must not
    ///   exist yet; if the file changed meanwhile, nothing is written (`temporaryFailure`).
    /// - Throws: `Failure` when the target is a symbolic link or not a regular file, changed, or
    ///   the folder is not writable.
    static func write(_ data: Data, to path: String, expected: FileFingerprint?) throws(Failure) {
        try checkTarget(path)
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).tmp-\(UUID().uuidString.prefix(8))").path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw Failure(reason: "cannot create a file in \(folder): \(String(cString: strerror(errno)))", status: .cannotCreateOutput)
        }
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        do {
            defer { close(descriptor) }
            // A replaced file keeps its permissions.
            var existing = stat()
            if lstat(path, &existing) == 0 { _ = fchmod(descriptor, existing.st_mode & 0o7777) }
            try writeAll(data, to: descriptor)
            guard fsync(descriptor) == 0 else { throw Failure(reason: "cannot flush: \(String(cString: strerror(errno)))", status: .ioError) }
        }
        guard FileFingerprint(path: path) == expected else {
            let reason = expected == nil ? "it was created by another process meanwhile" : "it was changed by another process meanwhile"
            throw Failure(reason: reason, status: .temporaryFailure)
        }
        try checkTarget(path)
        guard rename(temporary, path) == 0 else {
            throw Failure(reason: "cannot rename the new file into place: \(String(cString: strerror(errno)))", status: .ioError)
        }
        renamed = true
        let directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            // Makes the rename itself durable; a failure here loses nothing already written.
            _ = fsync(directory)
            close(directory)
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

    private static func writeAll(_ data: Data, to descriptor: Int32) throws(Failure) {
        var failure: Failure?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            var written = 0
            while written < buffer.count {
                let count = Foundation.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = Failure(reason: "cannot write: \(String(cString: strerror(errno)))", status: .ioError)
                    return
                }
                written += count
            }
        }
        if let failure { throw failure }
    }
}
