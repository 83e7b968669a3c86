import Foundation

/// Reads small files (model definitions, catalogs, property lists) whole, refusing anything
/// that is not a regular file or is larger than a stated limit, so a hostile or mistaken input
/// (a FIFO, `/dev/zero`, a multi-gigabyte file) can neither block nor exhaust memory.
enum BoundedFile {
    /// Why a file could not be read; callers wrap it in their domain's error with the path.
    enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case missing
        case directory
        case notARegularFile
        /// A symbolic link where none may be followed (`O_NOFOLLOW`).
        case symbolicLink
        case tooLarge(size: Int64, limit: Int)
        case unreadable(reason: String)

        var description: String {
            switch self {
            case .missing: return "no such file"
            case .directory: return "is a directory, not a file"
            case .notARegularFile: return "is not a regular file (FIFO, socket or device)"
            case .symbolicLink: return "is a symbolic link; refusing to follow it"
            case .tooLarge(let size, let limit): return "is \(size) bytes, over the \(limit)-byte limit"
            case .unreadable(let reason): return "cannot be read: \(reason)"
            }
        }

        /// `noInput` for what is absent or unreadable, `notAStore` (a data error) for the rest.
        var exitStatus: ExitStatus {
            switch self {
            case .missing, .directory, .unreadable: return .noInput
            case .notARegularFile, .symbolicLink, .tooLarge: return .notAStore
            }
        }
    }

    /// What is at a path, following symbolic links.
    enum Kind: Equatable, Sendable {
        case missing
        case directory
        case regularFile
        case other
    }

    static func kind(of path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .regularFile
        default: return .other
        }
    }

    /// Opens the regular file at `path` for reading without ever blocking (a FIFO is refused,
    /// not waited on); returns the descriptor, which the caller closes, and its size.
    private static func openRegularFile(_ path: String, followsSymlinks: Bool) throws(Failure) -> (descriptor: Int32, size: Int64) {
        var flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC
        if !followsSymlinks { flags |= O_NOFOLLOW }
        let descriptor = open(path, flags)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing }
            if code == ELOOP, !followsSymlinks { throw .symbolicLink }
            throw .unreadable(reason: String(cString: strerror(code)))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .unreadable(reason: reason)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return (descriptor, Int64(info.st_size))
        case S_IFDIR: close(descriptor); throw .directory
        default: close(descriptor); throw .notARegularFile
        }
    }

    /// Reads into `buffer` until it is full or the file ends; returns the bytes read.
    private static func readFully(_ descriptor: Int32, into buffer: inout [UInt8]) throws(Failure) -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    /// The whole content of the regular file at `path`, at most `limit` bytes.
    static func contents(of path: String, limit: Int) throws(Failure) -> Data {
        let (descriptor, size) = try openRegularFile(path, followsSymlinks: true)
        defer { close(descriptor) }
        guard size <= limit else { throw .tooLarge(size: size, limit: limit) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = try readFully(descriptor, into: &buffer)
            data.append(contentsOf: buffer[0..<count])
            // The file may grow while it is read.
            guard data.count <= limit else { throw .tooLarge(size: Int64(data.count), limit: limit) }
            if count < buffer.count { return data }
        }
    }

    /// The first `count` bytes (fewer for a shorter file) of the regular file at `path`.
    ///
    /// - Parameter followsSymlinks: false opens with `O_NOFOLLOW`, so a link swapped in after a
    ///   caller's `lstat` is refused (`unreadable`, ELOOP) instead of read.
    static func prefix(of path: String, count: Int, followsSymlinks: Bool = true) throws(Failure) -> [UInt8] {
        let (descriptor, _) = try openRegularFile(path, followsSymlinks: followsSymlinks)
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: count)
        let read = try readFully(descriptor, into: &buffer)
        return Array(buffer.prefix(read))
    }

    /// `path` relative to `base` when it is not absolute.
    static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") { return path }
        return URL(fileURLWithPath: base, isDirectory: true).appendingPathComponent(path).standardizedFileURL.path
    }
}
