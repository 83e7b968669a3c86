import Foundation
import SRSQLite

/// Writes recovered rows into the new database: one prepared `INSERT OR IGNORE` per output table,
/// values bound straight from the page (or overflow) buffer they were decoded from, with their
/// storage class and bytes — text passed in the damaged file's own encoding, converted by SQLite
/// only if the new database's differs.
///
/// `OR IGNORE` makes the first copy of a rowid win, so rows reachable from the tree are inserted
/// first, orphans next; a later copy is reported as a duplicate (same rowid) or a conflict
/// (another row holds the same unique key).
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class SalvageRowWriter {
    enum Outcome: Equatable {
        case inserted
        /// The output table already holds this rowid.
        case duplicate
        /// A uniqueness constraint of the output table refused it.
        case conflict
        /// A value's storage class does not fit the output column (Core Data mode).
        case notFitting
    }

    /// Where a row was found, for the `.pageNumber`, `.rootPage`, `.likelyTable` sources.
    struct Context {
        var pageNumber: UInt32
        var rootPage: UInt32? = nil
        var likelyTable: String? = nil
    }

    private struct Target {
        var name: String
        var columns: [String]
        var rowidColumn: String?
        var insert: SQLiteStatement
        var exists: SQLiteStatement?
        /// `SELECT 1 … WHERE` every column `IS` its value: prepared when first needed.
        var same: SQLiteStatement?
    }

    let connection: SQLiteConnection
    let textEncoding: DatabaseGeometry.TextEncoding
    private var targets: [Target] = []
    /// `Z_ENT`/`Z_OPT` values set, per target.
    private(set) var valuesFixed: [Int: Int] = [:]
    /// Rows each target's table holds: every insert SQLite made, every row a bulk load wrote
    /// (`addLoadedRows`) — so the report need not count them again with `count(*)`, a read of
    /// every page written.
    @exclusivity(unchecked) private var rowsInTable: [Int] = []
    /// Core Data mode: the keys and reference values of the rows that go in (set before the
    /// first target is added).
    @exclusivity(unchecked) var ledger: KeyLedger?
    private static let emptyText: StaticString = ""

    init(connection: SQLiteConnection, textEncoding: DatabaseGeometry.TextEncoding) {
        self.connection = connection
        self.textEncoding = textEncoding
    }

    /// Prepares inserts into `table` for `columns` (names, bound in this order); `rowidColumn` is
    /// the column (or `rowid` alias) holding the rowid, used to tell duplicates from conflicts.
    func addTarget(table: String, columns: [String], rowidColumn: String?) throws -> Int {
        let names = columns.map(\.quotedSQLIdentifier).joined(separator: ", ")
        let parameters = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        let insert = try connection.prepare("INSERT OR IGNORE INTO \(table.quotedSQLIdentifier) (\(names)) VALUES (\(parameters))")
        let exists = try rowidColumn.map {
            try connection.prepare("SELECT 1 FROM \(table.quotedSQLIdentifier) WHERE \($0.quotedSQLIdentifier) = ?")
        }
        targets.append(Target(name: table, columns: columns, rowidColumn: rowidColumn, insert: insert, exists: exists))
        rowsInTable.append(0)
        ledger?.bind(target: targets.count - 1, table: table, columns: columns)
        return targets.count - 1
    }

    /// Rows `target`'s table holds now (inserted through this writer or loaded page by page).
    func rowCount(target: Int) -> Int { rowsInTable[target] }

    /// Counts `count` rows a bulk load wrote into `target`'s table behind SQLite.
    func addLoadedRows(_ count: Int, target: Int) { rowsInTable[target] += count }

    /// Fills `indexes` of `target`'s table after a bulk load wrote its rows without them
    /// (`SalvageBulkLoad`), or — `refused` — puts its rows back in through SQLite straight away,
    /// a UNIQUE index the load built having found a key twice. Called while no transaction is
    /// open.
    ///
    /// Each index is rebuilt by `REINDEX` in a transaction of its own with a rollback journal (a
    /// file beside the new database in the private folder, gone at commit), so that a UNIQUE
    /// index refusing (two rows copied with the same key: the damage made them) is rolled back
    /// whole. Not in memory: on a 1.2-million-row join table an in-memory journal took the
    /// salvage's peak from 48 MB to 103 MB. When one refuses,
    /// the table is emptied and its rows put back in rowid order through `INSERT OR IGNORE`,
    /// which keeps the first row of each key — what inserting them one by one would have kept —
    /// and fills every index as it goes.
    ///
    /// - Returns: the rows dropped because a unique index refused them (conflicts).
    func rebuildIndexes(target: Int, indexes: [String], refused alreadyRefused: Bool = false) throws -> Int {
        guard !indexes.isEmpty || alreadyRefused else { return 0 }
        try connection.setJournalMode("DELETE")
        var refused = alreadyRefused
        for index in indexes where !refused {
            do {
                try connection.execute("REINDEX main.\(index.quotedSQLIdentifier)")
            } catch let error as SQLiteError where error.primaryResultCode == SQLITE_CONSTRAINT {
                refused = true
                break
            }
        }
        try connection.setJournalMode("OFF")
        guard refused else { return 0 }

        let table = "main." + targets[target].name.quotedSQLIdentifier
        // The rowid too, where no column holds it (a join table).
        let columns = (targets[target].rowidColumn == nil ? ["rowid"] : []) + targets[target].columns
        let aliases = columns.indices.map { "c\($0)" }
        let copy = "temp.storerescue_bulk_rows"
        try connection.execute("""
            BEGIN;
            CREATE TABLE \(copy) AS SELECT rowid AS storerescue_order, \(zip(columns, aliases).map { "\($0.quotedSQLIdentifier) AS \($1)" }.joined(separator: ", ")) \
            FROM \(table) NOT INDEXED;
            DELETE FROM \(table);
            """)
        let rows = try connection.scalar("SELECT count(*) FROM \(copy)")?.int64 ?? 0
        try connection.execute("""
            INSERT OR IGNORE INTO \(table) (\(columns.map(\.quotedSQLIdentifier).joined(separator: ", "))) \
            SELECT \(aliases.joined(separator: ", ")) FROM \(copy) ORDER BY storerescue_order
            """)
        let kept = Int64(sqlite3_changes(connection.handle))
        try connection.execute("DROP TABLE \(copy); COMMIT")
        rowsInTable[target] -= Int(rows - kept)
        // Which rows were refused is not known here: the finish asks SQLite about this table.
        ledger?.forgetRows(ofTarget: target)
        return Int(rows - kept)
    }

    /// True when the target's table holds a row with this rowid.
    func contains(rowid: Int64, target: Int) throws -> Bool {
        guard let exists = targets[target].exists else { return false }
        sqlite3_bind_int64(exists.handle, 1, rowid)
        defer { exists.reset() }
        return try exists.step()
    }

    /// Finalizes every prepared statement: the database can then change journal mode and close.
    func finishInserting() {
        targets.removeAll()
    }

    /// Inserts one row of `record` (decoded from `payload`) as `route` says.
    func insert(
        route: RowRoute, rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer, context: Context
    ) throws -> Outcome {
        if let rules = route.rules, !fits(route: route, rules: rules, record: record, payload: payload) { return .notFitting }
        let target = targets[route.target]
        let statement = target.insert.handle
        sqlite3_reset(statement)
        bind(route: route, rowid: rowid, record: record, payload: payload, context: context, to: statement)
        if let rules = route.rules { applyFixes(route, rules, record: record, payload: payload, statement: statement) }
        let rc = sqlite3_step(statement)
        sqlite3_clear_bindings(statement)
        guard rc == SQLITE_DONE else { throw connection.lastError(rc, sql: target.insert.sql) }
        if sqlite3_changes(connection.handle) > 0 {
            rowsInTable[route.target] += 1
            ledger?.note(route: route, rowid: rowid, record: record, payload: payload)
            return .inserted
        }
        return try contains(rowid: rowid, target: route.target) ? .duplicate : .conflict
    }

    /// True when the target's table already holds this very row — the rowid and every value as
    /// `insert` would write it (`IS`, so NULLs compare) — not just a row with its rowid: what
    /// tells a second copy of a row from another row that happens to share its rowid. Plain
    /// mode only (Core Data's fixes are not applied).
    func holdsSameRow(route: RowRoute, rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer, context: Context) throws -> Bool {
        if targets[route.target].same == nil {
            let target = targets[route.target]
            let conditions = Self.allOf(target.columns.map { "\($0.quotedSQLIdentifier) IS ?" })
            // A statement SQLite will not take is not a reason to end the salvage: the row is then
            // kept apart, as one that differs.
            guard let same = try? connection.prepare("SELECT 1 FROM \(target.name.quotedSQLIdentifier) WHERE \(conditions) LIMIT 1") else {
                return false
            }
            targets[route.target].same = same
        }
        guard let same = targets[route.target].same else { return false }
        bind(route: route, rowid: rowid, record: record, payload: payload, context: context, to: same.handle)
        defer {
            same.reset()
            sqlite3_clear_bindings(same.handle)
        }
        return try same.step()
    }

    /// `conditions` joined by AND as a balanced tree, parenthesised: a table of 2,000 columns
    /// makes a tree 12 deep, where a chain is 2,000 deep, past SQLite's limit of 1,000.
    static func allOf(_ conditions: [String]) -> String {
        guard conditions.count > 1 else { return conditions.first ?? "1" }
        let middle = conditions.count / 2
        return "(\(allOf(Array(conditions[..<middle]))) AND \(allOf(Array(conditions[middle...]))))"
    }

    /// Binds a row's values to `statement`'s parameters, one per source of `route`, in order.
    private func bind(
        route: RowRoute, rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer, context: Context, to statement: OpaquePointer
    ) {
        for (offset, source) in route.sources.enumerated() {
            let index = Int32(offset + 1)
            switch source {
            case .rowid: sqlite3_bind_int64(statement, index, rowid)
            case .pageNumber: sqlite3_bind_int64(statement, index, Int64(context.pageNumber))
            case .rootPage:
                if let root = context.rootPage { sqlite3_bind_int64(statement, index, Int64(root)) } else { sqlite3_bind_null(statement, index) }
            case .likelyTable: bind(context.likelyTable.map(SQLiteValue.text) ?? .null, to: statement, at: index)
            case .constant(let value): bind(value, to: statement, at: index)
            case .wholeRecord:
                srsqlite_bind_blob_transient(statement, index, payload.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(payload.count))
            case .record(let column, let fallback):
                if column < record.count {
                    bind(record[column], payload: payload, to: statement, at: index)
                } else {
                    bind(fallback, to: statement, at: index)
                }
            }
        }
    }

    /// Core Data mode: every value's storage class must be one its column's declared type allows;
    /// `Z_ENT` must name an entity of the table (unless the table holds one entity only).
    func fits(route: RowRoute, rules: RowRoute.CoreDataRules, record: [RecordColumn], payload: UnsafeRawBufferPointer) -> Bool {
        for check in route.checkedColumns where check.column < record.count {
            let value = record[check.column]
            guard !value.isAvailable || check.allowed & value.storageClass.bit != 0 else { return false }
        }
        if let position = rules.entityPosition, rules.soleEntity == nil {
            guard let value = recordInteger(route.sources[position], record: record, payload: payload),
                rules.entityNumbers.contains(value)
            else { return false }
        }
        return true
    }

    /// Whether `applyFixes` would change a value of this row (a row copied as it is must not need it).
    func needsFixes(route: RowRoute, rules: RowRoute.CoreDataRules, record: [RecordColumn], payload: UnsafeRawBufferPointer) -> Bool {
        if let position = rules.entityPosition, let sole = rules.soleEntity,
            recordInteger(route.sources[position], record: record, payload: payload) != sole
        {
            return true
        }
        if let position = rules.optimisticLockPosition, recordInteger(route.sources[position], record: record, payload: payload) == nil {
            return true
        }
        return false
    }

    /// Sets a sole-entity table's `Z_ENT` and a non-integer `Z_OPT` to what Core Data expects.
    private func applyFixes(
        _ route: RowRoute, _ rules: RowRoute.CoreDataRules, record: [RecordColumn], payload: UnsafeRawBufferPointer,
        statement: OpaquePointer
    ) {
        if let position = rules.entityPosition, let sole = rules.soleEntity,
            recordInteger(route.sources[position], record: record, payload: payload) != sole
        {
            sqlite3_bind_int64(statement, Int32(position + 1), sole)
            valuesFixed[route.target, default: 0] += 1
        }
        if let position = rules.optimisticLockPosition,
            recordInteger(route.sources[position], record: record, payload: payload) == nil
        {
            sqlite3_bind_int64(statement, Int32(position + 1), 1)
            valuesFixed[route.target, default: 0] += 1
        }
    }

    private func recordInteger(_ source: RowRoute.ValueSource, record: [RecordColumn], payload: UnsafeRawBufferPointer) -> Int64? {
        guard case .record(let column, _) = source, column < record.count, record[column].isAvailable,
            record[column].storageClass == .integer
        else { return nil }
        return record[column].integer(in: payload)
    }

    private func bind(_ column: RecordColumn, payload: UnsafeRawBufferPointer, to statement: OpaquePointer, at index: Int32) {
        guard column.isAvailable else {
            sqlite3_bind_null(statement, index)
            return
        }
        switch column.storageClass {
        case .null: sqlite3_bind_null(statement, index)
        case .integer: sqlite3_bind_int64(statement, index, column.integer(in: payload))
        case .real: sqlite3_bind_double(statement, index, column.real(in: payload))
        case .text:
            let bytes = column.bytes(in: payload)
            if let base = bytes.baseAddress, bytes.count > 0 {
                // SQLITE_STATIC (nil): the buffer outlives the step that reads it.
                sqlite3_bind_text64(statement, index, base.assumingMemoryBound(to: CChar.self), UInt64(bytes.count), nil, sqliteEncoding)
            } else {
                Self.emptyText.withUTF8Buffer { empty in
                    _ = empty.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(statement, index, $0.baseAddress, 0, nil) }
                }
            }
        case .blob:
            let bytes = column.bytes(in: payload)
            if let base = bytes.baseAddress, bytes.count > 0 {
                sqlite3_bind_blob64(statement, index, base, UInt64(bytes.count), nil)
            } else {
                sqlite3_bind_zeroblob(statement, index, 0)
            }
        }
    }

    private func bind(_ value: SQLiteValue, to statement: OpaquePointer, at index: Int32) {
        switch value {
        case .null: sqlite3_bind_null(statement, index)
        case .integer(let v): sqlite3_bind_int64(statement, index, v)
        case .real(let v): sqlite3_bind_double(statement, index, v)
        case .text(let v): _ = v.withCString { srsqlite_bind_text_transient(statement, index, $0, Int32(strlen($0))) }
        case .blob(let v):
            _ = v.withUnsafeBytes { buffer in
                srsqlite_bind_blob_transient(statement, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count))
            }
        }
    }

    private var sqliteEncoding: UInt8 {
        switch textEncoding {
        case .utf8: return UInt8(SQLITE_UTF8)
        case .utf16le: return UInt8(SQLITE_UTF16LE)
        case .utf16be: return UInt8(SQLITE_UTF16BE)
        }
    }
}
