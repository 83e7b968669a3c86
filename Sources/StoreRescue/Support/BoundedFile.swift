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
        /// No file descriptor left to open it (`EMFILE`, `ENFILE`): the limit's fault, not the
        /// file's (it read as unreadable, exit 66, "run as a user that can read the file").
        case tooManyOpenFiles

        var description: String {
            switch self {
            case .missing: return "no such file"
            case .directory: return "is a directory, not a file"
            case .notARegularFile: return "is not a regular file (FIFO, socket or device)"
            case .symbolicLink: return "is a symbolic link; refusing to follow it"
            case .tooLarge(let size, let limit): return "is \(size) bytes, over the \(limit)-byte limit"
            case .unreadable(let reason): return "cannot be read: \(reason)"
            case .tooManyOpenFiles: return "cannot be opened: no file descriptor left (\(String(cString: strerror(EMFILE))))"
            }
        }

        /// `noInput` for what is absent or unreadable, `notAStore` (a data error) for the rest.
        var exitStatus: ExitStatus {
            switch self {
            case .missing, .directory, .unreadable: return .noInput
            case .notARegularFile, .symbolicLink, .tooLarge: return .notAStore
            case .tooManyOpenFiles: return .ioError
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
    ///
    /// - Parameter followsSymlinks: false refuses a symbolic link (`O_NOFOLLOW`).
    static func contents(of path: String, limit: Int, followsSymlinks: Bool = true) throws(Failure) -> Data {
        let file = try ReadableFile(path: path, followsSymlinks: followsSymlinks)
        guard file.size <= limit else { throw .tooLarge(size: file.size, limit: limit) }
        var data = Data()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try file.read(into: buffer)
            data.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            // The file may grow while it is read.
            guard data.count <= limit else { throw .tooLarge(size: Int64(data.count), limit: limit) }
            if count < buffer.count { return data }
        }
    }

    /// The first `count` bytes (fewer for a shorter file) of the regular file at `path`.
    ///
    /// - Parameter followsSymlinks: false opens with `O_NOFOLLOW`, so a link swapped in after a
    ///   caller's `lstat` is refused (`symbolicLink`) instead of read.
    static func prefix(of path: String, count: Int, followsSymlinks: Bool = true) throws(Failure) -> [UInt8] {
        let file = try ReadableFile(path: path, followsSymlinks: followsSymlinks)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        defer { buffer.deallocate() }
        let read = try file.read(into: buffer)
        return Array(buffer[0..<read])
    }

    /// The names in the folder at `path` (`.` and `..` left out), in the order the file system
    /// gives them.
    ///
    /// Read with `opendir`, not `FileManager`, whose error on Linux (`NSCocoaErrorDomain` 256)
    /// hides the system's reason: no descriptor left to open the folder (`tooManyOpenFiles`,
    /// the limit's fault) read as a folder that cannot be listed (the folder's, exit 65).
    static func names(inFolder path: String) throws(Failure) -> [String] {
        guard let folder = opendir(path) else {
            let code = errno
            switch code {
            case ENOENT: throw .missing
            case EMFILE, ENFILE: throw .tooManyOpenFiles
            default: throw .unreadable(reason: String(cString: strerror(code)))
            }
        }
        defer { closedir(folder) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(folder) else {
                let code = errno
                if code != 0 { throw .unreadable(reason: String(cString: strerror(code))) }
                return names
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != ".", name != ".." { names.append(name) }
        }
    }

    /// `path` relative to `base` when it is not absolute.
    static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") { return path }
        return URL(fileURLWithPath: base, isDirectory: true).appendingPathComponent(path).standardizedFileURL.path
    }
}
