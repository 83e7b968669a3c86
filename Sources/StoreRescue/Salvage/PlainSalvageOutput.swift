import Foundation
import SRSQLite

/// A plain SQLite database holding what was recovered, as `sqlite3 .recover` writes one: each
/// recovered table under its own name with its columns and declared types (the rowid kept, in
/// its `INTEGER PRIMARY KEY` column when it has one), live rows of no known table in
/// `lost_and_found_<n>` and rows from free pages in `deleted_and_found_<n>` (n: column count).
///
/// Constraints and indexes are not recreated: a salvaged row must never be refused for breaking
/// a rule the damage made it break; the original statements stay readable in the report's
/// source. Page size and text encoding are the damaged file's, so text keeps its bytes.
final class PlainSalvageOutput: SalvageOutput {
    var flush: BackgroundFlush?
    let writer: SalvageRowWriter
    private let connection: SQLiteConnection
    private var takenNames: Set<String> = []
    private var lostRoutes: [Int: RowRoute] = [:]
    /// The loose tables made, by the name they were meant to have (`lost_and_found_2`): the name
    /// they have, which differs when the damaged schema had a table of that name.
    private var looseTableNames: [String: String] = [:]
    private var deletedRoutes: [Int: RowRoute] = [:]
    private(set) var looseTables: [String] = []
    private var writtenTables: [String] = []
    /// Tables to be made `AUTOINCREMENT`, as the damaged store declared them: their rowid column
    /// and the statement with the keyword (`addAutoincrementKeyword`).
    private var autoincrementTables: [(table: String, rowid: String, statement: String)] = []
    /// The writer's target of each table made (recovered and loose), by name.
    private var targetsByName: [String: Int] = [:]
    private(set) var bulkTargets: [Int: BulkTarget] = [:]
    /// Stops SQLite's work, its check included.
    private let cancellation: CancellationFlag?
    /// SQLite's limit on columns per table (`SQLITE_MAX_COLUMN`).
    private static let maximumColumns = 2000

    /// Creates the database at `path` (which must not exist; it is in a private folder).
    /// `cancellation` stops SQLite's own work (rows it writes, its check) within milliseconds.
    init(path: String, geometry: DatabaseGeometry, cancellation: CancellationFlag? = nil) throws {
        self.cancellation = cancellation
        connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        if let cancellation { connection.setProgressHandler { cancellation.isCancelled } }
        try connection.execute("PRAGMA page_size = \(geometry.pageSize)")
        try connection.execute("PRAGMA encoding = '\(geometry.textEncoding.name)'")
        // A private file under construction: a crash discards it anyway, so no journal.
        try connection.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -8192")
        try connection.execute("BEGIN")
        writer = SalvageRowWriter(connection: connection, textEncoding: geometry.textEncoding)
    }

    func role(for table: TableDefinition) throws -> TableRole {
        if table.isSQLiteInternal {
            // Its entries are written back once every table is made (`restoreSequences`).
            if table.name.lowercased() == TableDefinition.sequenceTableName { return .collect(.sequence) }
            return .skip(reason: "SQLite's own table (rebuilt by SQLite, not copied)")
        }
        if table.isWithoutRowid, table.recordColumns == nil || table.primaryKeyColumns == nil {
            return .skip(reason: "a WITHOUT ROWID table whose primary key SQLite could not describe")
        }
        // Every role is assigned before the first lost-and-found table is named, so those never
        // take a recovered table's name.
        guard takenNames.insert(table.name.uppercased()).inserted else {
            return .skip(reason: "a second table of the same name in the damaged schema")
        }
        writtenTables.append(table.name)
        var definitions: [String] = []
        var columns: [String] = []
        var sources: [RowRoute.ValueSource] = []
        for (index, column) in table.columns.enumerated() {
            // Quoted: a declared type read from a damaged schema can be any text (`TEXT NOTNULL`);
            // SQLite takes a quoted type name as the same type, with the same affinity.
            let type = column.declaredType.isEmpty ? "" : " " + column.declaredType.quotedSQLIdentifier
            definitions.append(column.name.quotedSQLIdentifier + type + (index == table.rowidColumn ? " PRIMARY KEY" : ""))
            columns.append(column.name)
            sources.append(index == table.rowidColumn ? .rowid : .record(index: index, fallback: column.defaultValue))
        }
        if table.isWithoutRowid, let order = table.recordColumns, let key = table.primaryKeyColumns {
            return try withoutRowidRole(table, definitions: definitions, order: order, key: key)
        }
        var rowidName = table.rowidColumn.map { table.columns[$0].name }
        if rowidName == nil, let free = ["rowid", "_rowid_", "oid"].first(where: { name in !columns.contains { $0.lowercased() == name } }) {
            columns.insert(free, at: 0)
            sources.insert(.rowid, at: 0)
            rowidName = free
        }
        try connection.execute("CREATE TABLE \(table.name.quotedSQLIdentifier) (\(definitions.joined(separator: ", ")))")
        if table.isAutoincrement, let rowid = table.rowidColumn {
            var keyed = definitions
            keyed[rowid] += " AUTOINCREMENT"
            autoincrementTables.append((table.name, table.columns[rowid].name, "CREATE TABLE \(table.name.quotedSQLIdentifier) (\(keyed.joined(separator: ", ")))"))
        }
        let target = try writer.addTarget(table: table.name, columns: columns, rowidColumn: rowidName)
        targetsByName[table.name] = target
        // The same columns in the same order with the same declared types: records copy as
        // they are (SQLite reads each value as it did in the damaged store).
        let positions = table.columns.indices.map { index -> BulkTarget.Position in
            index == table.rowidColumn ? .rowid : .record(fallbackIsNull: table.columns[index].defaultValue == .null)
        }
        if let empty = try Self.emptyTable(table.name, connection: connection) {
            bulkTargets[target] = BulkTarget.make(rootPage: empty.root, positions: positions, indexes: empty.indexes)
        }
        return .write(RowRoute(target: target, sources: sources, rules: nil))
    }

    /// A `WITHOUT ROWID` table is written as one, keyed as the damaged store's: its values come
    /// from the record positions `order` gives (key columns first), a row whose key is already
    /// there counted as a conflict. Never copied page by page.
    private func withoutRowidRole(_ table: TableDefinition, definitions: [String], order: [Int], key: [Int]) throws -> TableRole {
        let keyNames = key.map { table.columns[$0].name.quotedSQLIdentifier }.joined(separator: ", ")
        try connection.execute(
            "CREATE TABLE \(table.name.quotedSQLIdentifier) (\(definitions.joined(separator: ", ")), PRIMARY KEY (\(keyNames))) WITHOUT ROWID")
        let target = try writer.addTarget(table: table.name, columns: table.columns.map(\.name), rowidColumn: nil)
        targetsByName[table.name] = target
        let sources: [RowRoute.ValueSource] = table.columns.indices.map { column in
            order.firstIndex(of: column).map { .record(index: $0, fallback: table.columns[column].defaultValue) }
                ?? .constant(table.columns[column].defaultValue)
        }
        return .write(RowRoute(target: target, sources: sources, rules: nil))
    }

    func lostRoute(columnCount: Int) throws -> RowRoute? {
        try looseRoute("lost_and_found", columnCount: columnCount, leading: [
            ("rootpgno", "INTEGER", .rootPage), ("pgno", "INTEGER", .pageNumber), ("id", "INTEGER", .rowid),
        ], cache: &lostRoutes)
    }

    func deletedRoute(columnCount: Int) throws -> RowRoute? {
        try looseRoute("deleted_and_found", columnCount: columnCount, leading: [
            ("pgno", "INTEGER", .pageNumber), ("id", "INTEGER", .rowid), ("likely_table", "TEXT", .likelyTable),
        ], cache: &deletedRoutes)
    }

    /// The `<base>_<n>` table for rows of `columnCount` values: where each row was found (the
    /// `leading` columns), then its values in `c0`, `c1`, … without declared types, so every
    /// value keeps its storage class. Made on first use. Rows of more values than an SQLite
    /// table may have columns go whole to `<base>_records`: where each was found, its value
    /// count (`value_count`), and its record's bytes as read (`record`, in SQLite's record
    /// format) — kept, not only counted.
    private func looseRoute(
        _ base: String, columnCount: Int, leading: [(name: String, type: String, source: RowRoute.ValueSource)],
        cache: inout [Int: RowRoute]
    ) throws -> RowRoute? {
        let fitsColumns = columnCount + leading.count <= Self.maximumColumns
        let key = fitsColumns ? columnCount : -1
        if let route = cache[key] { return route }
        let meant = fitsColumns ? "\(base)_\(columnCount)" : "\(base)_records"
        let name = claim(meant)
        looseTableNames[meant] = name
        let values = fitsColumns ? (0..<columnCount).map { "c\($0)" } : ["value_count", "record"]
        let definitions = leading.map { "\($0.name) \($0.type)" } + (fitsColumns ? values : ["value_count INTEGER", "record BLOB"])
        try connection.execute("CREATE TABLE \(name.quotedSQLIdentifier) (\(definitions.joined(separator: ", ")))")
        let target = try writer.addTarget(table: name, columns: leading.map(\.name) + values, rowidColumn: nil)
        targetsByName[name] = target
        let sources: [RowRoute.ValueSource] = fitsColumns
            ? (0..<columnCount).map { .record(index: $0, fallback: .null) }
            : [.constant(.integer(Int64(columnCount))), .wholeRecord]
        let route = RowRoute(target: target, sources: leading.map(\.source) + sources, rules: nil)
        looseTables.append(name)
        cache[key] = route
        return route
    }

    func pauseForBulkLoad(targets: [Int]) throws { try connection.execute("COMMIT") }
    func resumeAfterBulkLoad() throws { try connection.execute("BEGIN") }

    /// SQLite met a damaged page of the new file ("malformed"): one salvage wrote, as SQLite's
    /// own are sound. SQLite's check says which, and that is reported (exit 70, a bug) instead of
    /// SQLite's error, which would read as a write failure (exit 74, advising free space).
    func abandon(after error: any Error) -> any Error {
        guard (error as? SQLiteError)?.isCorruption == true, let verdict = try? OutputCheck.verdict(of: connection) else { return error }
        return OutputCheck.refusal(verdict, path: connection.path) ?? error
    }

    func finish(bookkeeping: BookkeepingRows) throws -> SalvageOutputSummary {
        // Rows were only ever added (no constraint, no fix-up removes one): the writer's counts
        // are the tables' (`SalvageDamageTests` checks them against the tables on every damaged file).
        var tables: [String: SalvageOutputSummary.TableResult] = [:]
        for name in writtenTables + looseTables {
            tables[name] = SalvageOutputSummary.TableResult(rows: targetsByName[name].map(writer.rowCount(target:)) ?? 0)
        }
        writer.finishInserting()
        let notes = try restoreSequences(bookkeeping)
        try connection.execute("COMMIT")
        if writtenTables.isEmpty && looseTables.isEmpty {
            // Nothing was recovered: SQLite has not written page 1 yet (a database without a
            // table is a 0-byte file). Writing the header makes it an empty database.
            try connection.execute("PRAGMA user_version = 0")
        }
        try connection.setJournalMode("DELETE")
        // The file is complete: let the disk take it while SQLite checks it.
        Writeback.start(path: connection.path)
        flush?.request()
        if let refusal = OutputCheck.refusal(try OutputCheck.verdict(of: connection, cancellation: cancellation), path: connection.path) { throw refusal }
        return SalvageOutputSummary(tables: tables, metadata: nil, notes: notes)
    }

    /// `sqlite_sequence` as the damaged store had it, so that no `AUTOINCREMENT` table hands out
    /// a rowid it handed out before: each entry recovered is written (the larger `seq` where
    /// SQLite already made one, for rows that went in through SQLite), and every such table's
    /// entry is at least its largest recovered rowid. A table whose entry was not recovered gets
    /// that rowid, noted: rows deleted after it may have had larger ones. Returns the notes.
    private func restoreSequences(_ bookkeeping: BookkeepingRows) throws -> [String] {
        let recovered = bookkeeping.sequenceByTable
        var notes: [String] = []
        for (name, seq) in bookkeeping.sequencesNotBelieved {
            notes.append("table \(name): an sqlite_sequence entry of \(seq), past 2^62, on a leaf no intact tree reached: not believed (it would leave the table too few rowids)")
        }
        if bookkeeping.sequenceRowsNotKept > 0 {
            notes.append("sqlite_sequence: \(bookkeeping.sequenceRowsNotKept) rows past one per AUTOINCREMENT table (at least \(BookkeepingRows.maximumSequenceRows) rows and 1 MiB of names) were not kept (damage: a store has one per AUTOINCREMENT table)")
        }
        try addAutoincrementKeyword()
        // SQLite made `sqlite_sequence` with the first AUTOINCREMENT table.
        let hasSequenceTable = try connection.scalar(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence'")?.int64 == 1
        guard hasSequenceTable else {
            if !recovered.isEmpty {
                let listed = recovered.keys.sorted().prefix(10).map { "\($0) (\(recovered[$0] ?? 0))" }.joined(separator: ", ")
                notes.append("sqlite_sequence: \(recovered.count) entries recovered for tables not recreated as AUTOINCREMENT, not written: \(listed)\(recovered.count > 10 ? ", …" : "")")
            }
            return notes
        }
        func set(_ name: String, _ candidates: [Int64?]) throws {
            let existing = try connection.scalar("SELECT max(seq) FROM sqlite_sequence WHERE name = ?", [.text(name)])?.int64
            guard let value = (candidates + [existing]).compactMap({ $0 }).max() else { return }
            _ = try connection.rows("DELETE FROM sqlite_sequence WHERE name = ?", [.text(name)])
            _ = try connection.rows("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [.text(name), .integer(value)])
        }
        let (found, foundNotes) = try sequenceEntriesInLostAndFound(for: Set(autoincrementTables.map(\.table)).subtracting(recovered.keys))
        notes += foundNotes
        var unrecovered: [String] = []
        for (name, rowid, _) in autoincrementTables {
            // By the column's name: a table may have another column named `rowid`.
            let largest = try connection.scalar("SELECT max(\(rowid.quotedSQLIdentifier)) FROM \(name.quotedSQLIdentifier)")?.int64
            if recovered[name] == nil, let seq = found[name] {
                if unrecovered.count < 10 {
                    notes.append("table \(name): AUTOINCREMENT, its sqlite_sequence entry was found among rows of no known table (\(seq); the row stays in lost and found)")
                }
                unrecovered.append(name)
                try set(name, [seq, largest])
                continue
            }
            if recovered[name] == nil, let largest {
                if unrecovered.count < 10 {
                    notes.append("table \(name): AUTOINCREMENT, its sqlite_sequence entry was not recovered: set to its largest recovered rowid, \(largest) (rows deleted after it may have had larger ones)")
                }
                unrecovered.append(name)
            }
            try set(name, [recovered[name], largest])
        }
        if unrecovered.count > 10 {
            notes.append("\(unrecovered.count - 10) more AUTOINCREMENT tables whose sqlite_sequence entry was not recovered from its tree: each set to the entry found among rows of no known table, else to its largest recovered rowid")
        }
        for (name, seq) in recovered.sorted(by: { $0.key < $1.key }) where !autoincrementTables.contains(where: { $0.table == name }) {
            try set(name, [seq])
        }
        return notes
    }

    /// `sqlite_sequence` entries for `tables` among the live rows of no known table. When its
    /// root is an interior page that was lost, its leaves are orphans: a leaf mostly naming
    /// distinct `AUTOINCREMENT` tables is taken as its (`SalvageRun.isSequenceLeaf`), and the rows
    /// of one that is not (its tables lost from the schema, or `sqlite_sequence` itself) land in
    /// `lost_and_found_2`. A row there of a text naming one of `tables` and a number is read as
    /// its entry, as SQLite reads a `seq` (`CAST … AS INTEGER`: a real truncated, a text by its
    /// leading integer); the largest wins. Such a row may be another table's that merely looks
    /// so: it can only raise a counter, which skips rowids and never hands one out twice — but
    /// not past `BookkeepingRows.largestOrphanSequence`, which would leave the table too few
    /// rowids to insert into (at 2^63 − 1 every insert fails), so a larger one is noted and not
    /// used. The rows stay where they are. Returns the entries and the notes.
    private func sequenceEntriesInLostAndFound(for tables: Set<String>) throws -> (entries: [String: Int64], notes: [String]) {
        guard !tables.isEmpty, let lost = looseTableNames["lost_and_found_2"] else { return ([:], []) }
        let seq = "CAST(c1 AS INTEGER)"
        let rows = try connection.rows("""
            SELECT c0, max(CASE WHEN \(seq) < ? THEN \(seq) END), max(\(seq)) FROM \(lost.quotedSQLIdentifier)
            WHERE typeof(c0) = 'text' AND typeof(c1) IN ('integer', 'real', 'text') GROUP BY c0
            """, [.integer(BookkeepingRows.largestOrphanSequence)])
        var entries: [String: Int64] = [:]
        var notes: [String] = []
        for row in rows {
            guard row.count == 3, let name = row[0].string, tables.contains(name) else { continue }
            if let kept = row[1].int64 { entries[name] = kept }
            if let highest = row[2].int64, highest >= BookkeepingRows.largestOrphanSequence, notes.count < 10 {
                notes.append("table \(name): a row of no known table names it with \(highest), past 2^62: not taken as its sqlite_sequence entry (it would leave the table too few rowids)")
            }
        }
        return (entries, notes)
    }

    /// The `AUTOINCREMENT` tables are made without the keyword, so that a row SQLite writes into
    /// one (an orphaned leaf's, a damaged tree's) does not make it scan `sqlite_sequence` (1,000
    /// such tables with every root page zeroed took 7.9 s instead of 0.9 s). Once every row is in,
    /// the keyword is written into their statements in this private file's schema, which SQLite
    /// then reads again; the keyword changes no page. `sqlite_sequence` itself is made by SQLite,
    /// with a table made `AUTOINCREMENT` and dropped (the sequence table stays).
    private func addAutoincrementKeyword() throws {
        guard !autoincrementTables.isEmpty else { return }
        let maker = claim("storerescue_autoincrement").quotedSQLIdentifier
        try connection.execute("CREATE TABLE \(maker) (id INTEGER PRIMARY KEY AUTOINCREMENT); DROP TABLE \(maker)")
        // The schema is edited by hand: only this connection's own file, never a store.
        try connection.configure(SQLITE_DBCONFIG_DEFENSIVE, 0)
        defer { try? connection.configure(SQLITE_DBCONFIG_DEFENSIVE, 1) }
        try connection.execute("PRAGMA writable_schema = ON")
        for (name, _, statement) in autoincrementTables {
            _ = try connection.rows("UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?", [.text(statement), .text(name)])
        }
        let version = try connection.scalar("PRAGMA schema_version")?.int64 ?? 0
        try connection.execute("PRAGMA schema_version = \(version + 1); PRAGMA writable_schema = OFF")
    }

    /// `base`, or `base_1`, `base_2`, … when the damaged schema already has a table of that name.
    private func claim(_ base: String) -> String {
        var name = base
        var suffix = 0
        while !takenNames.insert(name.uppercased()).inserted {
            suffix += 1
            name = "\(base)_\(suffix)"
        }
        return name
    }
}
