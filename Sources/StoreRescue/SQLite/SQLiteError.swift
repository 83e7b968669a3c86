import SRSQLite

/// An error reported by SQLite, with the extended result code, SQLite's message and the SQL that
/// failed (when there was one).
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended result code (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, …).
    public var resultCode: Int32
    /// SQLite's own message for the failure.
    public var message: String
    /// The statement that failed, if the failure came from one.
    public var sql: String?

    public init(resultCode: Int32, message: String, sql: String? = nil) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (the low byte of the extended code).
    public var primaryResultCode: Int32 { resultCode & 0xFF }

    /// True for the codes SQLite uses when a file is not a database or its pages are damaged.
    public var isCorruption: Bool {
        primaryResultCode == SQLITE_CORRUPT || primaryResultCode == SQLITE_NOTADB
    }

    /// True when the statement was stopped by `sqlite3_interrupt` or the progress handler
    /// (`SQLiteConnection.setProgressHandler`).
    public var isInterrupt: Bool { primaryResultCode == SQLITE_INTERRUPT }

    /// True when another connection holds a lock that kept this one from proceeding.
    public var isBusy: Bool {
        primaryResultCode == SQLITE_BUSY || primaryResultCode == SQLITE_LOCKED
    }

    /// True when the file system, not the SQL, failed: I/O error, disk full, cannot open, read
    /// only, permission, out of memory, no large-file support.
    public var isFileSystemFailure: Bool {
        [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM, SQLITE_NOMEM, SQLITE_NOLFS]
            .contains(primaryResultCode)
    }

    public var description: String {
        var text = "SQLite error \(resultCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }
}
