/// The new database a salvage writes, whichever its kind: it says what becomes of each recovered
/// table's rows and where rows of no known table go, and finishes the file once every page has
/// been read.
protocol SalvageOutput: AnyObject {
    var writer: SalvageRowWriter { get }
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
    }

    var tables: [String: TableResult]
    var metadata: SalvageReport.MetadataSummary?
    var notes: [String]
}
