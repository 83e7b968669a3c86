import Foundation
import SRSQLite

/// Reads a `CREATE TABLE` statement recovered from a damaged file with SQLite's own parser: the
/// statement is run in a private in-memory database and the columns read back with
/// `PRAGMA table_xinfo`, so quoting, comments, constraints and generated columns are understood
/// exactly as SQLite understands them.
///
/// The text is hostile: only a single `CREATE TABLE` is run (no `AS SELECT` — an authorizer
/// refuses every query), statements are limited to 1 MB, nothing else is ever executed, and
/// defaults are taken only when they are literals (never evaluated). Functions and collations an
/// app made for its own connections are placeholders here (never called: no row is written).
final class TableDefinitionParser {
    private let connection: SQLiteConnection
    private static let maximumStatementBytes: Int32 = 1 << 20

    init() throws {
        connection = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        sqlite3_limit(connection.handle, SQLITE_LIMIT_SQL_LENGTH, Self.maximumStatementBytes)
        sqlite3_limit(connection.handle, SQLITE_LIMIT_LENGTH, Self.maximumStatementBytes)
        // A column `COLLATE LOCALIZED` (Android) or an app's own collation: made on demand, so
        // the statement is understood rather than refused (its rows went to lost and found).
        srsqlite_accept_any_collation(connection.handle)
    }

    /// Placeholders made for functions the recovered statements name (`madeFunctions`), at most
    /// this many in all, and `maximumPlaceholdersPerStatement` for one statement: each costs one
    /// more compile of a statement of up to 1 MB (a review's 0.9 MB table of 400 calls took a
    /// salvage from 0.25 s to 33 s under the first, total-only bound).
    static let maximumPlaceholderFunctions = 256
    static let maximumPlaceholdersPerStatement = 16
    private var madeFunctions = 0

    /// Compiles the recovered statement with every query refused: `CREATE TABLE … AS SELECT`
    /// would run a query (possibly an endless recursive one). Authorization happens when a
    /// statement is compiled, so the authorizer is removed again before anything else runs.
    /// A function SQLite does not know (an app's own, in a `CHECK` or a generated column) is
    /// made a placeholder returning NULL and the statement compiled again: the table's columns
    /// are what is read here, and a `CREATE TABLE` runs no expression.
    private func prepareRefusingReads(_ sql: String) -> SQLiteStatement? {
        sqlite3_set_authorizer(connection.handle, { _, action, _, _, _, _ in
            // CREATE TABLE itself reads sqlite_schema (SQLITE_READ) but never runs a SELECT.
            action == SQLITE_SELECT || action == SQLITE_RECURSIVE ? SQLITE_DENY : SQLITE_OK
        }, nil)
        defer { sqlite3_set_authorizer(connection.handle, nil, nil) }
        var madeHere = 0
        while true {
            do {
                return try connection.prepare(sql)
            } catch let error as SQLiteError {
                let prefix = "no such function: "
                guard error.message.hasPrefix(prefix), madeFunctions < Self.maximumPlaceholderFunctions,
                      madeHere < Self.maximumPlaceholdersPerStatement,
                      srsqlite_create_placeholder_function(connection.handle, String(error.message.dropFirst(prefix.count))) == SQLITE_OK
                else { return nil }
                madeFunctions += 1
                madeHere += 1
            } catch {
                return nil
            }
        }
    }

    /// The definition of table `name` whose `sqlite_schema.sql` is `sql`; nil when the text is not
    /// a plain `CREATE TABLE` SQLite accepts (damaged text, a virtual table, `AS SELECT`).
    func parse(name: String, sql: String, rootPage: UInt32) -> TableDefinition? {
        let trimmed = sql.drop { $0.isWhitespace }
        guard trimmed.prefix(6).uppercased() == "CREATE", !trimmed.uppercased().hasPrefix("CREATE VIRTUAL") else { return nil }
        guard let statement = prepareRefusingReads(sql), (try? statement.step()) != nil else { return nil }
        // An AUTOINCREMENT table also creates `sqlite_sequence`, which stays (SQLite will not drop
        // it) and is not the table parsed.
        let created = (try? connection.rows(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'sqlite_sequence'", maximumRows: 4)) ?? []
        defer {
            for row in created {
                if let table = row.first?.string { try? connection.execute("DROP TABLE \(table.quotedSQLIdentifier)") }
            }
        }
        guard created.count == 1, let actualName = created.first?.first?.string else { return nil }
        let quoted = actualName.quotedSQLIdentifier
        guard let info = try? connection.rows("PRAGMA table_xinfo(\(quoted))", maximumRows: 40_000),
            let list = try? connection.rows("PRAGMA table_list(\(quoted))", maximumRows: 4).first
        else { return nil }
        let isWithoutRowid = list.count > 4 && list[4].int64 == 1
        var columns: [TableDefinition.Column] = []
        var primaryKey: [(position: Int64, column: Int, type: String)] = []
        var columnOfCid: [Int64: Int] = [:]
        for row in info where row.count >= 7 {
            // hidden: 0 normal, 2 virtual generated (not stored), 3 stored generated.
            guard row[6].int64 != 2, let columnName = row[1].string else { continue }
            if let cid = row[0].int64 { columnOfCid[cid] = columns.count }
            let type = row[2].string ?? ""
            if let position = row[5].int64, position > 0 { primaryKey.append((position, columns.count, type)) }
            columns.append(TableDefinition.Column(
                name: columnName, declaredType: type, defaultValue: Self.literal(row[4].string)))
        }
        guard !columns.isEmpty else { return nil }
        // A single INTEGER primary key is the rowid, except where SQLite keeps it in the record
        // and gives it an index of its own (`INTEGER PRIMARY KEY DESC` written on the column).
        let keyIndexes = (try? connection.rows("PRAGMA index_list(\(quoted))", maximumRows: 40_000)) ?? []
        let keyIsIndexed = keyIndexes.contains { $0.count > 3 && $0[3].string == "pk" }
        let rowid = !isWithoutRowid && !keyIsIndexed && primaryKey.count == 1 && primaryKey[0].type.uppercased() == "INTEGER"
            ? primaryKey[0].column : nil
        var definition = TableDefinition(name: name, columns: columns, rowidColumn: rowid, isWithoutRowid: isWithoutRowid, rootPage: rootPage)
        if let rowid { definition.isAutoincrement = isAutoincrement(table: actualName, column: columns[rowid].name) }
        if isWithoutRowid { (definition.recordColumns, definition.primaryKeyColumns) = withoutRowidLayout(keyIndexes, columnOfCid: columnOfCid) }
        return definition
    }

    /// Whether SQLite parsed `column` of `table` as `AUTOINCREMENT` (its own answer, so a word
    /// in a comment, a quoted name or a default is never taken for the keyword).
    private func isAutoincrement(table: String, column: String) -> Bool {
        var autoincrement: Int32 = 0
        let status = sqlite3_table_column_metadata(connection.handle, "main", table, column, nil, nil, nil, nil, &autoincrement)
        return status == SQLITE_OK && autoincrement != 0
    }

    /// A `WITHOUT ROWID` table's record layout, from its primary key index as SQLite describes it
    /// (`PRAGMA index_xinfo`: every stored column, key columns first): which column each record
    /// value is, and the key's columns. Nils when SQLite does not describe every column.
    private func withoutRowidLayout(_ indexes: [[SQLiteValue]], columnOfCid: [Int64: Int]) -> ([Int]?, [Int]?) {
        guard let index = indexes.first(where: { $0.count > 3 && $0[3].string == "pk" })?[1].string,
            let rows = try? connection.rows("PRAGMA index_xinfo(\(index.quotedSQLIdentifier))", maximumRows: 40_000)
        else { return (nil, nil) }
        var order: [Int] = [], key: [Int] = []
        for row in rows where row.count >= 6 {
            guard let cid = row[1].int64, cid >= 0 else { continue }
            guard let column = columnOfCid[cid], !order.contains(column) else { return (nil, nil) }
            order.append(column)
            if row[5].int64 == 1 { key.append(column) }
        }
        guard order.count == columnOfCid.count, !key.isEmpty else { return (nil, nil) }
        return (order, key)
    }

    /// A default written as a literal (`0`, `-1.5`, `'text'`, `X'00FF'`, `NULL`, `TRUE`), else NULL:
    /// expressions are never evaluated.
    static func literal(_ text: String?) -> SQLiteValue {
        guard var text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return .null }
        while text.hasPrefix("("), text.hasSuffix(")") { text = String(text.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces) }
        switch text.uppercased() {
        case "NULL": return .null
        case "TRUE": return .integer(1)
        case "FALSE": return .integer(0)
        default: break
        }
        if let integer = Int64(text) { return .integer(integer) }
        if text.hasPrefix("+"), let integer = Int64(text.dropFirst()) { return .integer(integer) }
        if text.contains(where: { $0.isNumber }), text.allSatisfy({ "0123456789+-.eE".contains($0) }), let real = Double(text) {
            return .real(real)
        }
        if text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") {
            return .text(String(text.dropFirst().dropLast()).replacingLiterally("''", with: "'"))
        }
        if text.count >= 3, text.uppercased().hasPrefix("X'"), text.hasSuffix("'") {
            let hex = Array(text.dropFirst(2).dropLast())
            guard hex.count % 2 == 0 else { return .null }
            var bytes = Data()
            for index in stride(from: 0, to: hex.count, by: 2) {
                guard let byte = UInt8(String(hex[index...index + 1]), radix: 16) else { return .null }
                bytes.append(byte)
            }
            return .blob(bytes)
        }
        return .null
    }
}
