import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file opened for reading, of any size: the one way StoreRescue opens a file it did
/// not create (a backup, a manifest, a model, a catalog, a store and its sidecars when copied).
///
/// The file is opened with `O_NONBLOCK`, so a FIFO never blocks the open, and `fstat` must then
/// say it is a regular file: a FIFO, socket, device (`/dev/zero`, `/dev/urandom`) or folder is
/// refused before a single byte is read, so no read can block forever or run without end. The
/// check is on the opened descriptor, so a file swapped in after a caller's `lstat` cannot slip
/// through. Reads loop over `EINTR` and short reads.
///
/// ```swift
/// let file = try ReadableFile(path: backupPath)
/// var buffer = [UInt8](repeating: 0, count: 1 << 20)
/// while case let count = try buffer.withUnsafeMutableBytes({ try file.read(into: $0) }), count > 0 { … }
/// ```
final class ReadableFile {
    let path: String
    let descriptor: Int32
    /// The size when the file was opened (it may grow or shrink while it is read).
    let size: Int64

    /// Opens the regular file at `path`.
    ///
    /// - Parameter followsSymlinks: false adds `O_NOFOLLOW`: a symbolic link is refused
    ///   (`symbolicLink`) instead of followed.
    /// - Throws: `BoundedFile.Failure`: `missing`, `directory`, `notARegularFile`, `symbolicLink`
    ///   or `unreadable`.
    init(path: String, followsSymlinks: Bool = true) throws(BoundedFile.Failure) {
        var flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC
        if !followsSymlinks { flags |= O_NOFOLLOW }
        let opened = open(path, flags)
        guard opened >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing }
            if code == ELOOP, !followsSymlinks { throw .symbolicLink }
            if code == EISDIR { throw .directory }
            if code == EMFILE || code == ENFILE { throw .tooManyOpenFiles }
            throw .unreadable(reason: String(cString: strerror(code)))
        }
        var info = stat()
        guard fstat(opened, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(opened)
            throw .unreadable(reason: reason)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: close(opened); throw .directory
        default: close(opened); throw .notARegularFile
        }
        self.path = path
        descriptor = opened
        size = Int64(info.st_size)
    }

    deinit {
        close(descriptor)
    }

    /// Reads into `buffer` until it is full or the file ends; returns the bytes read (0 at the end).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(BoundedFile.Failure) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var filled = 0
        while filled < buffer.count {
            let count = systemRead(descriptor, base + filled, buffer.count - filled)
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    /// Reads up to `buffer.count` bytes at `offset` without moving the file position.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(BoundedFile.Failure) -> Int {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno != EINTR { throw .unreadable(reason: String(cString: strerror(errno))) }
        }
    }
}

/// The C `read`, out of reach of `ReadableFile.read(into:)`'s own name.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
