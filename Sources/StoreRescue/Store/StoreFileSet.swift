import Foundation

/// A store as it lies on disk: the main database file and whichever of its sidecars exist.
///
/// The store is the main file *and* its sidecars: a `-wal` can hold committed transactions the
/// main file lacks, and a hot `-journal` holds the pages needed to undo a half-written one.
public struct StoreFileSet: Sendable, Equatable {
    /// One sidecar file found next to the main file.
    public struct Sidecar: Sendable, Equatable {
        /// `-wal`, `-shm` or `-journal`.
        public var suffix: String
        public var path: String
        public var size: Int64
        /// True when SQLite would read content from it: a `-wal` with at least one frame, or a
        /// `-journal` whose header is not zeroed (a hot journal, to be rolled back).
        public var holdsData: Bool
        /// What the sidecar is when it is not a regular file ("a FIFO", "a folder", "a symbolic
        /// link", "a socket", "a device"); nil for a regular file. SQLite would open such a
        /// sidecar as if it were one (and block on a FIFO), so no command reads a store that has one.
        public var irregularKind: String? = nil
    }

    /// The suffixes SQLite uses for the files that belong to a database.
    public static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    public var mainPath: String
    public var sidecars: [Sidecar]

    /// Looks for the sidecars of `mainPath` without opening, locking or creating anything.
    public static func discover(mainPath: String) -> StoreFileSet {
        var sidecars: [Sidecar] = []
        for suffix in sidecarSuffixes {
            let path = mainPath + suffix
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let size = Int64(info.st_size)
            let isRegular = (info.st_mode & S_IFMT) == S_IFREG
            let holdsData: Bool
            switch suffix {
            case "-wal": holdsData = isRegular && size > walHeaderSize
            case "-journal": holdsData = isRegular && size > 0 && journalHeaderIsLive(path: path)
            default: holdsData = false
            }
            sidecars.append(Sidecar(suffix: suffix, path: path, size: size, holdsData: holdsData,
                                    irregularKind: isRegular ? nil : describeFileType(info.st_mode)))
        }
        return StoreFileSet(mainPath: mainPath, sidecars: sidecars)
    }

    /// The WAL header is 32 bytes; a WAL no longer than that has no frames.
    static let walHeaderSize: Int64 = 32

    /// A rollback journal is hot when its header is not zeroed (SQLite zeroes or deletes it on commit).
    private static func journalHeaderIsLive(path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return true }  // cannot tell: treat as holding data, the safe side
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 8)
        let count = read(fd, &header, 8)
        guard count > 0 else { return false }
        return header[0..<count].contains { $0 != 0 }
    }

    /// "a FIFO", "a folder", … for a `stat` mode that is not a regular file.
    static func describeFileType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a folder"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR, S_IFBLK: return "a device"
        default: return "a regular file"
        }
    }

    public func sidecar(_ suffix: String) -> Sidecar? { sidecars.first { $0.suffix == suffix } }

    /// The first sidecar that is not a regular file, if any.
    public var irregularSidecar: Sidecar? { sidecars.first { $0.irregularKind != nil } }

    /// True when reading the main file alone would miss or misread committed content.
    public var sidecarsHoldData: Bool { sidecars.contains { $0.holdsData } }

    /// The suffixes of the sidecars present, in `-wal`, `-shm`, `-journal` order.
    public var presentSuffixes: [String] { sidecars.map(\.suffix) }
}
