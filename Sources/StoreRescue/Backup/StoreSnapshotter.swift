import Foundation
import SRSQLite

/// Copies a live store into a snapshot file with SQLite's online backup API
/// (`sqlite3_backup_init` / `step` / `finish`), a range of pages at a time.
///
/// The source is opened read-only with locks honoured and its WAL read, and a read transaction is
/// held from the first page to the last: in WAL mode writers carry on (the snapshot is the last
/// state committed when the transaction began, committed WAL frames included); in rollback mode
/// writers wait until the copy is done. Either way every page comes from one committed state, and
/// the backup never restarts however busy the writers are.
///
/// After each step the copied pages are flushed to the snapshot file, so a reader may consume
/// pages `2...copiedPages` while the copy goes on. Page 1 is rewritten by SQLite when the copy
/// completes (schema cookie, change counter); read it only after `copy` returns.
final class StoreSnapshotter {
    struct Step {
        var copiedPages: Int
        var totalPages: Int
    }

    /// How the store is read: shared with the connections that have it open, or without touching it.
    enum Access {
        /// Another connection has the store open (`StoreLocks`): a read-only connection to the
        /// original, sharing its locks and `-shm` as any SQLite reader does.
        case live
        /// No connection has it open: read as `inspect` reads (`immutable=1` on the original, or
        /// a private copy of it and its `-wal`/`-journal`), so none of its files is touched.
        case atRest(OpenedStore)
    }

    let sourcePath: String
    let pageSize: Int
    private var connection: SQLiteConnection?
    /// The at-rest store (its private copy lives as long as it does).
    private let openedStore: OpenedStore?
    private let lockTimeout: TimeInterval
    /// Neither `-wal` nor `-shm` existed when the store was opened: any that exist afterwards
    /// were created by this read (a read-only connection to a WAL store makes both).
    private let hadNoSidecars: Bool

    /// The open source connection; it exists from `init` until `deinit`.
    private var source: SQLiteConnection {
        guard let connection else { preconditionFailure("StoreSnapshotter used after it closed its connection") }
        return connection
    }

    /// Opens `sourcePath` and begins the read transaction, waiting up to `lockTimeout` for a writer
    /// (a live store; stopped at once by `cancellation`: `BackupError.interrupted`).
    ///
    /// - Throws: `BackupError.storeLocked`, `.interrupted`, `.sourceNotAStore`, `.sourceUnreadable`.
    init(sourcePath: String, access: Access, lockTimeout: TimeInterval, cancellation: CancellationFlag? = nil) throws {
        self.sourcePath = sourcePath
        self.lockTimeout = lockTimeout
        var info = stat()
        let milliseconds = Int32(clamping: Int((lockTimeout * 1000).rounded()))
        switch access {
        case .live:
            hadNoSidecars = lstat(sourcePath + "-wal", &info) != 0 && lstat(sourcePath + "-shm", &info) != 0
            openedStore = nil
        case .atRest(let store):
            hadNoSidecars = false
            openedStore = store
        }
        do {
            let opened = try openedStore?.connection
                ?? SQLiteConnection(path: sourcePath, options: SQLiteOpenOptions(mode: .readOnly, busyTimeoutMilliseconds: milliseconds))
            connection = opened
            if openedStore == nil, let cancellation {
                opened.setBusyHandler(waitingUntil: Date().addingTimeInterval(lockTimeout), cancellation: cancellation)
            }
            // Pages stream through once: a small cache keeps memory flat whatever the store's size.
            try opened.execute("PRAGMA cache_size = -1024")
            try opened.execute("BEGIN")
            // The first read takes the shared lock (or WAL read mark) and keeps it until COMMIT.
            _ = try opened.scalar("SELECT count(*) FROM sqlite_schema")
            let size = try opened.scalar("PRAGMA page_size")?.int64 ?? 0
            guard (512...65_536).contains(size) else {
                throw BackupError.sourceNotAStore(path: sourcePath, detail: "page size \(size) is not valid")
            }
            // An empty main file whose -wal SQLite does not accept (another database's, or no
            // commit) is a database of no pages: nothing to back up, and not a bug.
            guard try opened.scalar("PRAGMA page_count")?.int64 ?? 0 > 0 else {
                throw StoreAccessError.rejected(
                    path: sourcePath, kind: .empty,
                    reason: "has no pages: its main file is empty and SQLite finds no committed transaction in its -wal")
            }
            pageSize = Int(size)
        } catch let error as SQLitePathTooLongError {
            // A live store past SQLite's limit (one at rest is refused as it is opened): the
            // operator's own path, unreadable as `inspect` says.
            throw StoreAccessError.rejected(
                path: sourcePath, kind: .unreadable, reason: "SQLite cannot open it: its full path is \(error.path.utf8.count) bytes")
        } catch let error as SQLiteError {
            // SQLITE_READONLY_ROLLBACK: a hot -journal (an app died part way through a
            // transaction) that a read-only connection cannot roll back; read at rest instead.
            if case .live = access, error.resultCode == SQLITE_READONLY | 3 << 8 { throw BackupAttemptError.hotJournal }
            if error.isBusy, cancellation?.isCancelled == true { throw BackupError.interrupted }
            throw BackupError(sqliteError: error, source: sourcePath, lockTimeout: lockTimeout)
        }
    }

    deinit {
        try? connection?.execute("ROLLBACK")
        connection = nil  // closes it
        if hadNoSidecars { Self.removeSidecarsThisReadCreated(sourcePath) }
    }

    /// Leaves the store's folder as it was found. A read-only connection to a WAL store creates
    /// an empty `-wal` and a `-shm` beside it and cannot remove them; SQLite's last read-write
    /// connection removes both when it closes, and leaves them while any other connection has the
    /// store open. So when the `-wal` is still empty (nothing to checkpoint: the main file cannot
    /// change), a read-write connection that only reads the schema is opened and closed.
    static func removeSidecarsThisReadCreated(_ path: String) {
        var info = stat()
        let walExists = lstat(path + "-wal", &info) == 0
        guard walExists || lstat(path + "-shm", &info) == 0 else { return }
        if walExists {
            guard (info.st_mode & S_IFMT) == S_IFREG, info.st_size == 0 else { return }
        }
        guard let cleaner = try? SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite)) else { return }
        _ = try? cleaner.scalar("SELECT count(*) FROM sqlite_schema")
    }

    /// Copies every page into a new database at `snapshotPath`.
    ///
    /// - Parameters:
    ///   - pagesPerStep: pages per `sqlite3_backup_step`.
    ///   - stepCompleted: called after each step once its pages are in the file; what it throws
    ///     (cancellation, a consumer's failure) stops the copy.
    /// - Returns: the snapshot's page count.
    func copy(into snapshotPath: String, pagesPerStep: Int32, stepCompleted: (Step) throws -> Void) throws -> Int {
        let destination: SQLiteConnection
        do {
            destination = try SQLiteConnection(path: snapshotPath, options: SQLiteOpenOptions(mode: .create))
            // A private scratch file: no journal, no syncs; it is discarded on any failure.
            try destination.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1024")
        } catch let error as SQLiteError {
            if error.fileSystemFailure == .tooManyOpenFiles {
                throw BackupError.tooManyOpenFiles(path: snapshotPath, reason: error.systemReason ?? error.message)
            }
            throw BackupError.snapshotFailed(source: sourcePath, detail: "cannot create the snapshot file: \(error.message)")
        }
        guard let backup = sqlite3_backup_init(destination.handle, "main", source.handle, "main") else {
            let message = String(cString: sqlite3_errmsg(destination.handle))
            throw BackupError.snapshotFailed(source: sourcePath, detail: message)
        }
        var isFinished = false
        defer { if !isFinished { sqlite3_backup_finish(backup) } }
        var copiedSoFar = 0
        while true {
            let rc = sqlite3_backup_step(backup, pagesPerStep)
            let stepErrno = errno
            let primary = rc & 0xFF
            if primary == SQLITE_BUSY || primary == SQLITE_LOCKED {
                // Cannot happen while our read transaction is open; reported like a lock timeout.
                throw BackupError.storeLocked(path: sourcePath, seconds: lockTimeout)
            }
            guard rc == SQLITE_OK || rc == SQLITE_DONE else {
                throw failure(rc, systemErrno: stepErrno, snapshotPath: snapshotPath)
            }
            if rc == SQLITE_OK {
                let flush = sqlite3_db_cacheflush(destination.handle)
                let flushErrno = errno
                guard flush == SQLITE_OK else { throw failure(flush, systemErrno: flushErrno, snapshotPath: snapshotPath) }
            }
            let total = Int(sqlite3_backup_pagecount(backup))
            let copied = rc == SQLITE_DONE ? total : total - Int(sqlite3_backup_remaining(backup))
            // Pages already handed to a reader must never be rewritten: a restart would do that.
            guard copied >= copiedSoFar else {
                throw BackupError.snapshotFailed(source: sourcePath, detail: "the online backup restarted")
            }
            copiedSoFar = copied
            if rc == SQLITE_DONE {
                isFinished = true
                let finish = sqlite3_backup_finish(backup)
                let finishErrno = errno
                guard finish == SQLITE_OK else { throw failure(finish, systemErrno: finishErrno, snapshotPath: snapshotPath) }
                try stepCompleted(Step(copiedPages: total, totalPages: total))
                return total
            }
            try stepCompleted(Step(copiedPages: copied, totalPages: total))
        }
    }

    /// The error for a failed step. The source is read-only, so a failed write, sync or "disk
    /// full" is the snapshot file's: the message names its folder and the system's reason
    /// (`errno` right after the call: disk full, file-size limit). Anything else is the source's.
    private func failure(_ rc: Int32, systemErrno: Int32, snapshotPath: String) -> BackupError {
        // No descriptor left for the snapshot's -journal: SQLITE_CANTOPEN, which alone reads
        // as a missing store (66).
        if rc & 0xFF == SQLITE_CANTOPEN, systemErrno == EMFILE || systemErrno == ENFILE {
            return .tooManyOpenFiles(path: snapshotPath, reason: SafeFileOutput.describe(systemErrno))
        }
        // SQLITE_IOERR_WRITE, _FSYNC, _TRUNCATE (macros Swift cannot import).
        let writeCodes: Set<Int32> = [SQLITE_IOERR | 3 << 8, SQLITE_IOERR | 4 << 8, SQLITE_IOERR | 6 << 8]
        if writeCodes.contains(rc) || rc & 0xFF == SQLITE_FULL {
            let reason = systemErrno != 0 ? SafeFileOutput.describe(systemErrno) : String(cString: sqlite3_errstr(rc))
            return .snapshotFailed(source: sourcePath,
                                   detail: "cannot write the snapshot in \(stagingParent(snapshotPath)): \(reason)")
        }
        return BackupError(sqliteError: SQLiteError(resultCode: rc, message: String(cString: sqlite3_errstr(rc))),
                           source: sourcePath, lockTimeout: lockTimeout)
    }

    /// The folder the operator chose (the snapshot sits in a private folder inside it).
    private func stagingParent(_ snapshotPath: String) -> String {
        SafeFileOutput.folder(of: SafeFileOutput.folder(of: snapshotPath))
    }

    /// Ends the read transaction; writers in rollback mode may proceed.
    func endReadTransaction() {
        try? source.execute("ROLLBACK")
    }
}
