import Foundation

/// A first look at an input path, without SQLite: what it is, how large, its SQLite header, its
/// sidecars. Opens nothing for writing, follows no symlink unless allowed, never blocks on a FIFO.
public struct InputProbe: Sendable {
    /// The path as given: what messages and reports name.
    public var path: String
    /// The file read: `path` itself, or, for a symbolic link followed (`followsSymlinks`), its
    /// target resolved once and fully (`realpath`). The store is the target *with the target's*
    /// `-wal`, `-shm` and `-journal` — the files SQLite itself would use through the link — so
    /// every sidecar lookup, private copy and open goes through this path, never the link's.
    /// It names no symbolic link, so what opens it refuses one (`O_NOFOLLOW`): a link swapped
    /// in after the probe is not followed.
    public var resolvedPath: String
    public var fileSize: Int64
    public var header: SQLiteFileHeader?
    public var files: StoreFileSet

    /// The first bytes of the main file, as read.
    private var prefix: [UInt8] = []

    /// Probes `path`; throws `StoreAccessError.rejected` with the input's kind when it cannot be a
    /// readable database.
    ///
    /// - Parameter checksContent: false skips the checks of the header against the file's size
    ///   (`checkContent()`): they read a live store's file without its locks, so a writer part way
    ///   through a transaction can make a sound store look truncated. Callers that do not yet know
    ///   whether the store is in use check later.
    public init(path: String, followsSymlinks: Bool = false, checksContent: Bool = true) throws {
        self.path = path
        resolvedPath = path
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                throw StoreAccessError.rejected(path: path, kind: .missing, reason: "no such file")
            }
            throw StoreAccessError.rejected(path: path, kind: .unreadable, reason: String(cString: strerror(code)))
        }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            guard followsSymlinks else {
                throw StoreAccessError.rejected(path: path, kind: .symlink, reason: "is a symbolic link; refusing to follow it")
            }
            guard let resolved = realpath(path, nil) else {
                let code = errno
                if code == ENOENT || code == ENOTDIR {
                    throw StoreAccessError.rejected(path: path, kind: .missing, reason: "is a symbolic link to nothing")
                }
                throw StoreAccessError.rejected(
                    path: path, kind: .unreadable, reason: "is a symbolic link that cannot be resolved: \(String(cString: strerror(code)))")
            }
            resolvedPath = String(cString: resolved)
            free(resolved)
            guard lstat(resolvedPath, &info) == 0 else {
                throw StoreAccessError.rejected(path: path, kind: .missing, reason: "is a symbolic link to nothing")
            }
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw StoreAccessError.rejected(path: path, kind: .directory, reason: "is a directory, not a store file")
        default:
            throw StoreAccessError.rejected(path: path, kind: .notRegularFile, reason: "is not a regular file (FIFO, socket or device)")
        }
        fileSize = Int64(info.st_size)
        files = StoreFileSet.discover(mainPath: resolvedPath)
        if let odd = files.irregularSidecar {
            throw StoreAccessError.irregularSidecar(path: path, sidecar: odd.path, kind: odd.irregularKind ?? "not a regular file")
        }
        let bytes = try Self.readPrefix(path: resolvedPath, followsSymlinks: false, count: SQLiteFileHeader.size, reportedPath: path)
        header = SQLiteFileHeader(bytes: bytes)
        prefix = bytes
        if checksContent { try classify(bytes: bytes) }
    }

    /// The file a reader allowed to follow a symbolic link at `path` reads: the link's target,
    /// resolved fully (`realpath`), whose sidecars are the store's; `path` itself when it is no
    /// link or cannot be resolved (the reader then reports what it is). For readers that do not
    /// probe (`salvage` reads pages, not SQLite), so they look for the `-wal` where SQLite would.
    public static func followingSymlink(at path: String) -> String {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK, let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The checks `init` skips when told to: empty, not SQLite, truncated, damaged header.
    public func checkContent() throws {
        try classify(bytes: prefix)
    }

    private func classify(bytes: [UInt8]) throws {
        let magic = SQLiteFileHeader.magic
        if fileSize == 0 {
            if files.sidecar("-wal")?.holdsData == true { return }  // content only in the WAL
            throw StoreAccessError.rejected(path: path, kind: .empty, reason: "is empty (0 bytes)")
        }
        guard let header else {
            let prefix = min(bytes.count, magic.count)
            if prefix > 0, Array(bytes[0..<prefix]) == Array(magic[0..<prefix]) {
                throw StoreAccessError.rejected(
                    path: path, kind: .truncated,
                    reason: "is truncated: \(fileSize) bytes, shorter than the 100-byte SQLite header")
            }
            if let damage = Self.damagedMagic(bytes) {
                throw StoreAccessError.rejected(path: path, kind: .damaged, reason: damage)
            }
            throw StoreAccessError.rejected(path: path, kind: .notSQLite, reason: "is not an SQLite database (no SQLite header)")
        }
        guard header.hasValidPageSize else {
            throw StoreAccessError.rejected(
                path: path, kind: .damaged, reason: "has an SQLite header with an impossible page size (\(header.pageSize))")
        }
        if let pages = header.headerPageCount {
            let expected = Int64(pages) * Int64(header.pageSize)
            if fileSize < expected, !hasTransactionInProgress {
                let described = "\(fileSize) bytes, but its header says \(pages) pages of \(header.pageSize) bytes (\(expected) bytes)"
                // A copy cut short ends anywhere; one that ends on a page boundary may as well be
                // whole, with a damaged page count (bytes 28-31): that is not "truncated" for sure.
                guard fileSize % Int64(header.pageSize) == 0 else {
                    throw StoreAccessError.rejected(path: path, kind: .truncated, reason: "is truncated: \(described)")
                }
                throw StoreAccessError.rejected(
                    path: path, kind: .damaged,
                    reason: "is shorter than its header says: \(described); either its header's page count (bytes 28-31) is damaged or the file was cut at a page boundary")
            }
        } else if fileSize < Int64(header.pageSize) {
            throw StoreAccessError.rejected(
                path: path, kind: .truncated, reason: "is truncated: \(fileSize) bytes, less than one \(header.pageSize)-byte page")
        }
    }

    /// A hot `-journal` beside the main file, seen by the probe or since (an app began writing
    /// after the probe looked): the main file may be part way through a transaction that grows
    /// or shrinks it, so its size is not compared with its header; SQLite rolls the journal back
    /// (on a private copy) and judges what is left.
    private var hasTransactionInProgress: Bool {
        files.sidecar("-journal")?.holdsData == true
            || StoreFileSet.discover(mainPath: resolvedPath).sidecar("-journal")?.holdsData == true
    }

    /// A description of an SQLite header whose 16-byte magic differs in one or two bytes (a
    /// flipped bit, not another kind of file) while its page size is still a valid one.
    static func damagedMagic(_ bytes: [UInt8]) -> String? {
        let magic = SQLiteFileHeader.magic
        guard bytes.count >= SQLiteFileHeader.size else { return nil }
        let differing = (0..<magic.count).filter { bytes[$0] != magic[$0] }
        guard (1...2).contains(differing.count) else { return nil }
        var repaired = bytes
        for index in differing { repaired[index] = magic[index] }
        guard let header = SQLiteFileHeader(bytes: repaired), header.hasValidPageSize else { return nil }
        let offsets = differing.map(String.init).joined(separator: " and ")
        return "has a damaged SQLite header: byte \(offsets) of the \"SQLite format 3\" signature differ\(differing.count == 1 ? "s" : "")"
    }

    /// Reads up to `count` bytes from the start of the file without blocking (or following
    /// links, unless allowed), as a `StoreAccessError` naming the input's kind (and
    /// `reportedPath`, default `path`) when it fails.
    static func readPrefix(path: String, followsSymlinks: Bool, count: Int, reportedPath: String? = nil) throws -> [UInt8] {
        do {
            return try BoundedFile.prefix(of: path, count: count, followsSymlinks: followsSymlinks)
        } catch {
            let kind: StoreKind
            switch error {
            case .tooManyOpenFiles:
                throw StoreAccessError.tooManyOpenFiles(path: reportedPath ?? path, reason: String(cString: strerror(EMFILE)))
            case .missing: kind = .missing
            case .directory: kind = .directory
            case .notARegularFile: kind = .notRegularFile
            case .symbolicLink: kind = .symlink
            case .unreadable, .tooLarge: kind = .unreadable
            }
            throw StoreAccessError.rejected(path: reportedPath ?? path, kind: kind, reason: "cannot be opened for reading: \(error.description)")
        }
    }
}
