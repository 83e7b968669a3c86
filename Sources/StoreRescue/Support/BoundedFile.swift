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
        case tooLarge(size: Int64, limit: Int)
        case unreadable(reason: String)

        var description: String {
            switch self {
            case .missing: return "no such file"
            case .directory: return "is a directory, not a file"
            case .notARegularFile: return "is not a regular file (FIFO, socket or device)"
            case .tooLarge(let size, let limit): return "is \(size) bytes, over the \(limit)-byte limit"
            case .unreadable(let reason): return "cannot be read: \(reason)"
            }
        }

        /// `noInput` for what is absent or unreadable, `notAStore` (a data error) for the rest.
        var exitStatus: ExitStatus {
            switch self {
            case .missing, .directory, .unreadable: return .noInput
            case .notARegularFile, .tooLarge: return .notAStore
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

    /// The whole content of the regular file at `path`, at most `limit` bytes.
    static func contents(of path: String, limit: Int) throws(Failure) -> Data {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing }
            throw .unreadable(reason: String(cString: strerror(code)))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .unreadable(reason: String(cString: strerror(errno))) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .directory
        default: throw .notARegularFile
        }
        guard info.st_size <= limit else { throw .tooLarge(size: Int64(info.st_size), limit: limit) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(reason: String(cString: strerror(errno)))
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            // The file may grow while it is read.
            guard data.count <= limit else { throw .tooLarge(size: Int64(data.count), limit: limit) }
        }
    }

    /// The first `count` bytes (fewer for a shorter file) of the regular file at `path`.
    static func prefix(of path: String, count: Int) throws(Failure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing }
            throw .unreadable(reason: String(cString: strerror(code)))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .unreadable(reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw info.st_mode & S_IFMT == S_IFDIR ? .directory : .notARegularFile }
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, count) }
        guard read >= 0 else { throw .unreadable(reason: String(cString: strerror(errno))) }
        return Array(buffer.prefix(read))
    }

    /// `path` relative to `base` when it is not absolute.
    static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") { return path }
        return URL(fileURLWithPath: base, isDirectory: true).appendingPathComponent(path).standardizedFileURL.path
    }
}
