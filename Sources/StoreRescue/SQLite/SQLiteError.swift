import Foundation
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
    /// The system's error number behind a file-system failure (`sqlite3_system_errno`: `EACCES`,
    /// `ENOSPC`, …), 0 when there was none or the failure is not the file system's.
    public var systemErrno: Int32

    public init(resultCode: Int32, message: String, sql: String? = nil, systemErrno: Int32 = 0) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
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

    /// What an operator can do about a file-system failure, which the result code alone does
    /// not say: `SQLITE_CANTOPEN` is a folder that refuses new files as often as a disk out of
    /// room, and only the first is fixed by freeing space.
    public enum FileSystemFailure: Sendable, Equatable {
        /// No room or a failing disk: disk full (`SQLITE_FULL`, `ENOSPC`, `EDQUOT`), the
        /// file-size limit (`EFBIG`), an I/O error (`SQLITE_IOERR`), no large-file support.
        case noRoom
        /// Refused a file: a folder or file that is read-only, or not this user's to write
        /// (`SQLITE_CANTOPEN`, `SQLITE_READONLY`, `SQLITE_PERM`; `EACCES`, `EPERM`, `EROFS`).
        case denied
        /// Out of memory (`SQLITE_NOMEM`, `SQLITE_IOERR_NOMEM`, `ENOMEM`).
        case outOfMemory
        /// No file descriptor left (`EMFILE`: the process's open-file limit, `ulimit -n`;
        /// `ENFILE`: the system's). SQLite says `SQLITE_CANTOPEN`, which alone reads as a folder
        /// refusing the file.
        case tooManyOpenFiles
    }

    /// Which file-system failure this is, nil when it is none (`isFileSystemFailure`). The
    /// system's error number decides when SQLite recorded one; otherwise the result code.
    public var fileSystemFailure: FileSystemFailure? {
        guard isFileSystemFailure else { return nil }
        switch systemErrno {
        case ENOSPC, EDQUOT, EFBIG: return .noRoom
        case EACCES, EPERM, EROFS: return .denied
        case ENOMEM: return .outOfMemory
        case EMFILE, ENFILE: return .tooManyOpenFiles
        default: break
        }
        switch primaryResultCode {
        case SQLITE_NOMEM: return .outOfMemory
        case SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM: return .denied
        // SQLITE_IOERR_NOMEM, an extended code Swift does not import.
        case SQLITE_IOERR where resultCode == SQLITE_IOERR | 12 << 8: return .outOfMemory
        default: return .noRoom
        }
    }

    /// The system's reason for `systemErrno` ("Permission denied"), nil when there is none.
    public var systemReason: String? {
        systemErrno == 0 ? nil : String(cString: strerror(systemErrno))
    }

    /// The most characters of the statement `description` shows.
    static let statementShown = 500

    public var description: String {
        var text = "SQLite error \(resultCode): \(message)"
        // Bounded: a statement built from a large catalog can run to megabytes (a hostile
        // catalog's error once printed 3.3 MB).
        if let sql { text += " (while running: \(sql.count > Self.statementShown ? sql.prefix(Self.statementShown) + " …" : sql))" }
        return text
    }
}
