import Foundation

extension SQLiteConnection {
    /// Sets the journal mode (`PRAGMA journal_mode = mode`) and returns the mode SQLite reports
    /// (lowercased; nil when it reports none).
    ///
    /// Switching into or out of WAL mode rewrites the file's header (bytes 18–19) in a
    /// transaction of its own, committed only when the statement runs to its end — after the row
    /// that reports the new mode. Read with `scalar`, which stops at that row, the commit's
    /// failure (an `EIO` on SQLite's `fdatasync`, a full disk) was lost when the statement was
    /// finalised: the pragma said "wal", the header still said rollback, and `salvage --catalog`
    /// ended in its own check (exit 70, "a bug") instead of the write failure it was (exit 74).
    /// Here the statement is stepped to its end, so that failure is thrown.
    ///
    /// ```swift
    /// guard try connection.setJournalMode("WAL") == "wal" else { … }
    /// ```
    ///
    /// - Throws: `SQLiteError` when the pragma or the header's commit fails.
    @discardableResult
    func setJournalMode(_ mode: String) throws -> String? {
        let statement = try prepare("PRAGMA journal_mode = \(mode)")
        var reported: String?
        while try statement.step() {
            if reported == nil { reported = statement.column(0).string?.lowercased() }
        }
        return reported
    }
}
