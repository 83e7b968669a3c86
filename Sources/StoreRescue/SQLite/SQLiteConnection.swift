import Foundation
import SRSQLite

/// A connection to one SQLite database file, opened defensively.
///
/// Every connection, whatever its mode, is configured the same way before any statement runs:
/// `SQLITE_DBCONFIG_DEFENSIVE` on, `trusted_schema=OFF` (views and triggers cannot call
/// functions with side effects), `cell_size_check=ON` (damaged b-tree cells are reported instead
/// of read), `mmap_size=0` (a truncated file cannot fault the process), extension loading off.
///
/// A connection is a resource, used from one thread at a time.
public final class SQLiteConnection {
    /// The raw handle, for the few SQLite calls this layer does not wrap (online backup).
    public let handle: OpaquePointer
    /// The file this connection opened.
    public let path: String
    /// Numbers the savepoints `inSavepoint` opens, so nested ones never share a name.
    private var savepointCounter = 0
    /// Keeps the progress handler's closure alive while SQLite may call it.
    private var progressHandler: ProgressHandlerBox?

    private final class ProgressHandlerBox {
        let shouldInterrupt: () -> Bool
        init(_ shouldInterrupt: @escaping () -> Bool) { self.shouldInterrupt = shouldInterrupt }
    }

    /// Calls `shouldInterrupt` every `instructions` virtual-machine steps of any statement; when
    /// it returns true the statement stops with `SQLITE_INTERRUPT`. This is how a long
    /// `INSERT … SELECT` notices a cancellation (SIGINT, SIGTERM) within milliseconds.
    public func setProgressHandler(every instructions: Int32 = 10_000, _ shouldInterrupt: @escaping () -> Bool) {
        let box = ProgressHandlerBox(shouldInterrupt)
        progressHandler = box
        sqlite3_progress_handler(handle, instructions, { context in
            guard let context else { return 0 }
            return Unmanaged<ProgressHandlerBox>.fromOpaque(context).takeUnretainedValue().shouldInterrupt() ? 1 : 0
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Keeps the busy handler's state alive while SQLite may call it.
    private var busyHandler: BusyHandlerBox?

    private final class BusyHandlerBox {
        let deadline: Date
        let cancellation: CancellationFlag
        init(deadline: Date, cancellation: CancellationFlag) {
            self.deadline = deadline
            self.cancellation = cancellation
        }
    }

    /// Waits for other connections' locks until `deadline` (in place of the busy timeout the
    /// connection was opened with: one deadline for every wait of a step, where a busy timeout
    /// starts again at each lock), giving up at once — `SQLITE_BUSY` — when `cancellation` is set:
    /// SQLite's own busy timeout sleeps through a SIGTERM to its end, and `sqlite3_interrupt`
    /// does not reach it.
    public func setBusyHandler(waitingUntil deadline: Date, cancellation: CancellationFlag) {
        let box = BusyHandlerBox(deadline: deadline, cancellation: cancellation)
        busyHandler = box
        sqlite3_busy_handler(handle, { context, _ in
            guard let context else { return 0 }
            let box = Unmanaged<BusyHandlerBox>.fromOpaque(context).takeUnretainedValue()
            guard !box.cancellation.isCancelled else { return 0 }
            let remaining = box.deadline.timeIntervalSinceNow
            guard remaining > 0 else { return 0 }
            usleep(UInt32(min(0.01, remaining) * 1_000_000))
            return 1
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Bounds the size of any string or blob a statement makes or reads (`SQLITE_LIMIT_LENGTH`;
    /// SQLite's default is 1,000,000,000 bytes). A statement that would pass it fails with
    /// `SQLITE_TOOBIG` ("string or blob too big") instead of allocating it.
    public func limitValueLength(to bytes: Int32) {
        sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, bytes)
    }

    /// Opens the database at `path` as `options` say.
    ///
    /// - Throws: `SQLiteError` when SQLite cannot open or configure the file;
    ///   `SQLitePathTooLongError` when its full path is longer than SQLite opens.
    public init(path: String, options: SQLiteOpenOptions = SQLiteOpenOptions()) throws {
        var flags: Int32 = SQLITE_OPEN_URI | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOMUTEX
        switch options.mode {
        case .immutable, .readOnly: flags |= SQLITE_OPEN_READONLY
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .memory: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY
        }
        if !options.followsSymlinks { flags |= SQLITE_OPEN_NOFOLLOW }
        // SQLITE_OPEN_NOFOLLOW refuses a link anywhere in the path; only the file itself must
        // not be one. Its folder may be reached through links (a symlinked backup folder,
        // /tmp on macOS), so the folder part is resolved first.
        let opened = options.followsSymlinks || options.mode == .memory ? path : Self.resolvingFolder(of: path)
        // SQLite's own refusal is "unable to open database file" (code 14), which reads as a file
        // that cannot be read or created (review rv10 #2).
        if options.mode != .memory, SQLitePathTooLongError.isPastLimit(opened) {
            throw SQLitePathTooLongError(path: SQLitePathTooLongError.fullPath(of: opened))
        }
        let uri = options.mode == .memory ? ":memory:" : Self.fileURI(path: opened, immutable: options.mode == .immutable)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(uri, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            var error = SQLiteError(resultCode: rc, message: message)
            if let db { error.systemErrno = Self.systemErrno(of: error, db) }
            if let db { sqlite3_close_v2(db) }
            throw error
        }
        self.handle = db
        self.path = path
        do {
            try configureDefensively(busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
    }

    deinit {
        sqlite3_progress_handler(handle, 0, nil, nil)
        sqlite3_busy_handler(handle, nil, nil)
        sqlite3_close_v2(handle)
    }

    /// `path` with its folder part resolved (`realpath`) and its last component as given; the
    /// path unchanged when the folder cannot be resolved (SQLite then reports it missing).
    static func resolvingFolder(of path: String) -> String {
        guard let (parent, name) = path.splitAtLastSlash else { return path }
        let folder = parent.isEmpty ? "/" : parent
        guard let resolved = realpath(folder, nil) else { return path }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return (base == "/" ? "" : base) + "/" + name
    }

    /// A `file:` URI for `path`, with every byte that could end or alter the path percent-encoded.
    /// A `file:` URI for `path` opened read-only (`mode=ro`), and `immutable=1` when asked:
    /// what `ATTACH` takes to read a database without ever writing it.
    public static func readOnlyURI(path: String, immutable: Bool) -> String {
        let uri = fileURI(path: path, immutable: false)
        return uri + "?mode=ro" + (immutable ? "&immutable=1" : "")
    }

    static func fileURI(path: String, immutable: Bool) -> String {
        var encoded = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "-"),
                UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                encoded.append(Character(UnicodeScalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        if immutable { encoded += "?immutable=1" }
        return encoded
    }

    private func configureDefensively(busyTimeoutMilliseconds: Int32) throws {
        try check(srsqlite_db_config_int(handle, SQLITE_DBCONFIG_DEFENSIVE, 1))
        try check(srsqlite_db_config_int(handle, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0))
        try check(srsqlite_db_config_int(handle, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0))
        try check(sqlite3_busy_timeout(handle, busyTimeoutMilliseconds))
        try execute("PRAGMA trusted_schema = OFF")
        try execute("PRAGMA cell_size_check = ON")
        try execute("PRAGMA mmap_size = 0")
    }

    /// Sets an integer `SQLITE_DBCONFIG_…` option.
    func configure(_ option: Int32, _ value: Int32) throws {
        try check(srsqlite_db_config_int(handle, option, value))
    }

    /// Closing this connection will not checkpoint the WAL into the main file (nor delete the
    /// `-wal`), whether or not it is the last connection (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`).
    func disableCheckpointOnClose() throws {
        try configure(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    }

    /// The OS's reason for `error`, as SQLite's file layer recorded it; 0 when there is none to
    /// trust. SQLite records one with `SQLITE_CANTOPEN` and `SQLITE_IOERR` only (any other code
    /// leaves an earlier, unrelated one there); and a file SQLite could not create read-write it
    /// tries again read-only, so a cannot-open's `ENOENT` is that retry's, not why the first
    /// attempt failed.
    private static func systemErrno(of error: SQLiteError, _ handle: OpaquePointer) -> Int32 {
        guard error.primaryResultCode == SQLITE_CANTOPEN || error.primaryResultCode == SQLITE_IOERR else { return 0 }
        let code = sqlite3_system_errno(handle)
        return error.primaryResultCode == SQLITE_CANTOPEN && code == ENOENT ? 0 : code
    }

    /// Throws the connection's current error when `resultCode` is not `SQLITE_OK`.
    func check(_ resultCode: Int32, sql: String? = nil) throws {
        guard resultCode == SQLITE_OK else { throw lastError(resultCode, sql: sql) }
    }

    func lastError(_ resultCode: Int32, sql: String? = nil) -> SQLiteError {
        let extended = sqlite3_extended_errcode(handle)
        let code = (extended & 0xFF) == (resultCode & 0xFF) ? extended : resultCode
        var error = SQLiteError(resultCode: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
        error.systemErrno = Self.systemErrno(of: error, handle)
        return error
    }

    /// Sees the SQL of every statement the connection runs (`prepare`, `execute`), before it
    /// runs: for tests that count what a command asks the data (`AssessmentMemoTests`).
    var statementObserver: ((String) -> Void)?

    /// Runs one or more statements that return no rows of interest.
    public func execute(_ sql: String) throws {
        statementObserver?(sql)
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw lastError(rc, sql: sql) }
    }

    /// Compiles one statement.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Runs a statement and returns all its rows. For small results (schema, bookkeeping tables).
    ///
    /// - Parameter maximumRows: a bound on rows read, so a hostile file cannot exhaust memory.
    /// - Throws: `SQLiteError`; `SQLiteRowLimitError` when the statement has more rows than
    ///   `maximumRows` (a partial result is never returned as if it were whole).
    public func rows(_ sql: String, _ bindings: [SQLiteValue] = [], maximumRows: Int = 1_000_000) throws -> [[SQLiteValue]] {
        let statement = try prepare(sql)
        try statement.bind(bindings)
        var result: [[SQLiteValue]] = []
        while try statement.step() {
            guard result.count < maximumRows else { throw SQLiteRowLimitError(limit: maximumRows, sql: sql) }
            result.append(statement.row())
        }
        return result
    }

    /// The first column of the first row, or nil when there is no row.
    public func scalar(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> SQLiteValue? {
        let statement = try prepare(sql)
        try statement.bind(bindings)
        guard try statement.step() else { return nil }
        return statement.column(0)
    }

    /// Rows the last INSERT, UPDATE or DELETE changed (`sqlite3_changes64`).
    public var changes: Int64 { sqlite3_changes64(handle) }

    /// True when no transaction is open (`sqlite3_get_autocommit`).
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// A number no savepoint of this connection has used.
    func nextSavepointNumber() -> Int {
        savepointCounter += 1
        return savepointCounter
    }

    /// Interrupts any statement running on this connection (safe from another thread).
    public func interrupt() {
        sqlite3_interrupt(handle)
    }

    /// The SQLite library version this process runs with.
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

extension String {
    /// This string as a quoted SQL identifier: wrapped in double quotes, inner quotes doubled.
    /// Every identifier that comes from a store goes through here.
    public var quotedSQLIdentifier: String {
        "\"" + replacingLiterally("\"", with: "\"\"") + "\""
    }
}
