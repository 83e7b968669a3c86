/// The new database a salvage writes, whichever its kind: it says what becomes of each recovered
/// table's rows and where rows of no known table go, and finishes the file once every page has
/// been read.
protocol SalvageOutput: AnyObject {
    var writer: SalvageRowWriter { get }
    /// Flushes the new file to the disk while the output goes on (asked for once the file is
    /// complete, before its check); nil: the publisher's `fsync` does it all.
    var flush: BackgroundFlush? { get set }
    /// What becomes of the rows of `table`.
    func role(for table: TableDefinition) throws -> TableRole
    /// Where live rows of no known table with `columnCount` columns go; nil: they are counted only.
    func lostRoute(columnCount: Int) throws -> RowRoute?
    /// Where rows from free pages go; nil: they are counted only (never mixed into live tables).
    func deletedRoute(columnCount: Int) throws -> RowRoute?
    /// Tables written for rows of no known table (lost and found, deleted and found).
    var looseTables: [String] { get }
    /// Fix-ups, indexes, metadata, checks; closes the database. Returns per-table results.
    func finish(bookkeeping: BookkeepingRows) throws -> SalvageOutputSummary

    /// Output tables (by writer target) whose rows from intact trees may be written page by
    /// page (`SalvageBulkLoad`); empty when none may.
    var bulkTargets: [Int: BulkTarget] { get }
    /// Readies `targets` (the bulk targets about to be loaded) and ends SQLite's transaction:
    /// until `resumeAfterBulkLoad`, pages are appended to the file behind SQLite, which holds no
    /// lock and reads the file afresh afterwards. A target may stop being one (`bulkTargets`).
    func pauseForBulkLoad(targets: [Int]) throws
    func resumeAfterBulkLoad() throws
    /// The salvage failed with `error` and its file is removed: stops what runs beside it
    /// (`OutputCheck`) and returns the error to report — `error`, or what the check found when
    /// `error` is SQLite meeting a damaged page of the new file.
    func abandon(after error: any Error) -> any Error
    /// Where `target`'s table comes in the bulk load (lower first; equal ranks keep the schema's
    /// order).
    func loadRank(ofTarget target: Int) -> Int
}

extension SalvageOutput {
    func loadRank(ofTarget target: Int) -> Int { 0 }
    func abandon(after error: any Error) -> any Error { error }

    /// Whether `table` can take a bulk load (`SalvageBulkLoad`): it holds no rows yet, and each of
    /// its indexes is one the load can fill afterwards from the rows (a bulk load writes the
    /// table's tree, then builds each index's tree itself or has `REINDEX` fill it) — a whole
    /// index on plain columns in the BINARY collation (`BulkIndex.read`). Returns its root page
    /// and those indexes; nil otherwise.
    static func emptyTable(_ table: String, connection: SQLiteConnection) throws -> (root: UInt32, indexes: [BulkIndex])? {
        guard try connection.scalar("SELECT 1 FROM \(table.quotedSQLIdentifier) LIMIT 1") == nil,
            let root = try connection.scalar("SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(table)])?.int64,
            root >= 2, root <= Int64(UInt32.max),
            let indexes = try BulkIndex.read(table: table, connection: connection)
        else { return nil }
        return (UInt32(root), indexes)
    }
}

/// What becomes of the rows of one recovered table.
enum TableRole {
    /// Written to the output as the route says.
    case write(RowRoute)
    /// One of Core Data's own tables, rebuilt for the version: its rows are read for the
    /// metadata, `Z_MAX` and the model cache, not copied.
    case collect(BookkeepingRows.Table)
    /// Not recovered (`reason` says why); its pages are claimed so they are not taken for orphans.
    case skip(reason: String)
}

/// What finishing the output found, per output table.
struct SalvageOutputSummary {
    struct TableResult {
        var rows: Int
        var danglingCleared = 0
        var danglingRowsDropped = 0
        var entities: [SalvageReport.EntityCount] = []
        var requiredValuesMissing: [SalvageReport.RequiredValueGap] = []
    }

    var tables: [String: TableResult]
    var metadata: SalvageReport.MetadataSummary?
    var notes: [String]
    /// Tables rows were read for but that the finished output does not have (upper-cased name →
    /// why): Core Data mode's provisional history tables, dropped at the end. Reported as
    /// skipped, never as recovered with no rows.
    var tablesLeftOut: [String: String] = [:]
}
