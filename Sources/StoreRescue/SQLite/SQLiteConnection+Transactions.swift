import Foundation

/// How a transaction takes its locks (`BEGIN DEFERRED | IMMEDIATE | EXCLUSIVE`).
public enum SQLiteTransactionKind: String, Sendable {
    /// Locks are taken by the first read or write.
    case deferred = "DEFERRED"
    /// The write lock is taken at once: no other writer can slip in between reads and writes.
    case immediate = "IMMEDIATE"
    /// No other connection may read or write until the transaction ends (rollback journal mode).
    case exclusive = "EXCLUSIVE"
}

extension SQLiteConnection {
    /// True while a transaction is open on this connection (`sqlite3_get_autocommit` is 0).
    public var isInTransaction: Bool { !isAutocommit }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// ```swift
    /// try connection.inTransaction {
    ///     try connection.execute("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT) VALUES (1, 1, 1)")
    ///     try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 1")
    /// }
    /// ```
    ///
    /// Inside an open transaction, use `inSavepoint(_:)` instead: transactions do not nest.
    ///
    /// - Throws: the error `body` throws (after rolling back), or the `SQLiteError` of `BEGIN`
    ///   or `COMMIT`. A failed `COMMIT` is rolled back too, so the database is never left with
    ///   a transaction open.
    @discardableResult
    public func inTransaction<Result>(_ kind: SQLiteTransactionKind = .immediate, _ body: () throws -> Result) throws -> Result {
        precondition(!isInTransaction, "inTransaction called inside an open transaction; use inSavepoint")
        try execute("BEGIN \(kind.rawValue)")
        let result: Result
        do {
            result = try body()
            try execute("COMMIT")
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
        return result
    }

    /// Runs `body` inside a savepoint: released when it returns, rolled back (and released) when
    /// it throws, leaving any enclosing transaction open and as it was before the savepoint.
    /// Savepoints nest; outside a transaction a savepoint behaves as one.
    ///
    /// - Throws: the error `body` throws, or the `SQLiteError` of `SAVEPOINT`/`RELEASE`.
    @discardableResult
    public func inSavepoint<Result>(_ body: () throws -> Result) throws -> Result {
        let name = "storerescue_\(nextSavepointNumber())"
        try execute("SAVEPOINT \(name)")
        let result: Result
        do {
            result = try body()
            try execute("RELEASE \(name)")
        } catch {
            try? execute("ROLLBACK TO \(name)")
            try? execute("RELEASE \(name)")
            throw error
        }
        return result
    }
}
