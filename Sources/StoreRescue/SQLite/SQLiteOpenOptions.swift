/// How a connection to a database file is opened. The zero value is the safe choice: read-only,
/// symlinks refused, defensive settings on.
public struct SQLiteOpenOptions: Sendable, Equatable {
    public enum Mode: Sendable, Equatable {
        /// `SQLITE_OPEN_READONLY` with `immutable=1`: SQLite takes no locks, reads no sidecars and
        /// creates no `-shm`/`-wal`. Only for files nothing else is writing.
        case immutable
        /// `SQLITE_OPEN_READONLY`: honours locks and reads the WAL (may create `-shm`).
        case readOnly
        /// `SQLITE_OPEN_READWRITE`, never creating the file.
        case readWrite
        /// `SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE`.
        case create
        /// A private in-memory database (the path is ignored): a scratch space for SQLite's own
        /// parser, e.g. to read the columns of a `CREATE TABLE` recovered from a damaged file.
        case memory
    }

    public var mode: Mode = .immutable
    /// Follow a symbolic link at the path instead of refusing it (`SQLITE_OPEN_NOFOLLOW`).
    public var followsSymlinks = false
    /// How long to wait for another connection's lock, in milliseconds (0: fail at once).
    public var busyTimeoutMilliseconds: Int32 = 0

    public init(mode: Mode = .immutable, followsSymlinks: Bool = false, busyTimeoutMilliseconds: Int32 = 0) {
        self.mode = mode
        self.followsSymlinks = followsSymlinks
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
    }
}
