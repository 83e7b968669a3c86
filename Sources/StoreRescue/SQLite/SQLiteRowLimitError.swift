/// A query returned more rows than its caller allowed (`SQLiteConnection.rows(_:_:maximumRows:)`).
///
/// The bound keeps a hostile file from making a reader allocate without limit; reaching it means
/// the file holds far more than any real store does, so the read stops instead of going on with
/// a truncated answer.
public struct SQLiteRowLimitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The most rows the caller accepted.
    public var limit: Int
    /// The statement that produced too many rows.
    public var sql: String

    public init(limit: Int, sql: String) {
        self.limit = limit
        self.sql = sql
    }

    public var description: String {
        "more than \(limit) rows from \(sql.count > 120 ? String(sql.prefix(117)) + "…" : sql): far more than a real store holds"
    }
}
