import Foundation

/// `Z_PRIMARYKEY`, `Z_METADATA`, `Z_MODELCACHE`, the persistent history and the tables Core
/// Data does not write.
extension VersionWriter {
    /// One row per entity: a root's `Z_MAX` is at least its largest `Z_PK` and never below the
    /// base's counter (keys of deleted objects are not handed out again); subentities share
    /// the root's counter. History entities keep theirs.
    func writePrimaryKeys() throws {
        let insert = try connection.prepare("INSERT INTO main.Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)")
        for number in layout.entityNumbers {
            var maximum: Int64 = 0
            if number.superEnt == 0, let table = layout.table(ofEntity: number.name, in: model) {
                let largest = try connection.scalar("SELECT max(Z_PK) FROM main.\(table.name.quotedSQLIdentifier)")?.int64 ?? 0
                maximum = max(largest, state.carriedMaximumKeys[number.name] ?? 0)
            }
            insert.reset()
            try insert.bind([.integer(Int64(number.ent)), .text(number.name), .integer(Int64(number.superEnt)), .integer(maximum)])
            _ = try insert.step()
        }
        guard layout.persistentHistory != nil else { return }
        for entry in basePrimaryKeys where entry.isHistoryEntity {
            insert.reset()
            try insert.bind([.integer(entry.ent), .text(entry.name), .integer(entry.superEnt), .integer(entry.max)])
            _ = try insert.step()
        }
    }

    func writeBookkeepingRows() throws {
        let insert = try connection.prepare("INSERT INTO main.Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)")
        try insert.bind([metadata.uuid.map(SQLiteValue.text) ?? .null, .blob(StoreMetadataWriter.encode(metadata.plist))])
        _ = try insert.step()
        if let modelCache {
            let cache = try connection.prepare("INSERT INTO main.Z_MODELCACHE (Z_CONTENT) VALUES (?)")
            try cache.bind([.blob(modelCache)])
            _ = try cache.step()
        }
    }

    /// The base's history rows, with each change's entity renumbered; changes of entities
    /// that no longer exist are dropped (their numbers may now name other entities), counted.
    func copyHistory(summary: inout Summary) throws {
        guard let history = layout.persistentHistory else { return }
        for table in history.tables {
            guard let base = basePhysical.table(named: table.name) else { continue }
            let baseColumns = Set(base.columns.map { $0.name.uppercased() })
            let columns = table.columns.map(\.name).filter { baseColumns.contains($0.uppercased()) }
            var values = columns.map { SQLLiteral.column($0, of: "h") }
            var condition = "1"
            if table.name == "ACHANGE", let index = columns.firstIndex(of: "ZENTITY") {
                let mapped = state.entityOfBaseNumber.sorted { $0.key < $1.key }.compactMap { base, name in
                    layout.entityNumber(of: name).map { (base, $0) }
                }
                values[index] = mapped.isEmpty ? "NULL" : "CASE h.ZENTITY " + mapped.map { "WHEN \($0.0) THEN \($0.1)" }.joined(separator: " ") + " END"
                condition = "h.ZENTITY IN (\(mapped.map { String($0.0) }.joined(separator: ", ")))"
            }
            try connection.execute("""
                INSERT INTO main.\(table.name) (\(columns.map(\.quotedSQLIdentifier).joined(separator: ", "))) \
                SELECT \(values.joined(separator: ", ")) FROM \(SQLLiteral.table(base.name, in: state.baseSchema)) h WHERE \(condition)
                """)
            if table.name == "ACHANGE" {
                let total = try connection.scalar("SELECT count(*) FROM \(SQLLiteral.table(base.name, in: state.baseSchema))")?.int64 ?? 0
                summary.droppedHistoryChanges = total - (try connection.scalar("SELECT count(*) FROM main.ACHANGE")?.int64 ?? 0)
            }
        }
    }

    /// Tables Core Data does not lay out (CloudKit mirroring's `ANSCK*`, an app's own) are
    /// carried over as they are, with their indexes; CloudKit's record metadata gets the new
    /// entity numbers. A virtual table, or a definition that is not one plain statement, is
    /// left out (and reported): the migrator runs no SQL from a store beyond a table's shape.
    func copyOtherTables(summary: inout Summary) throws {
        // Names compared as SQLite compares them (bytes, ASCII folded): a store's own table
        // whose name only Swift's `uppercased()` took for a laid-out one was skipped without a
        // word (`Z_PR\u{131}MARYKEY`).
        let laidOut = Set(((layout.tables + (layout.persistentHistory?.tables ?? [])).map(\.name)
            + ["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"]).map(\.sqliteNameKey))
        for table in basePhysical.tables where !laidOut.contains(table.name.sqliteNameKey) {
            guard table.category == .other || table.category == .cloudKit || table.category == .entity || table.category == .joinTable else { continue }
            guard table.category == .other || table.category == .cloudKit else {
                // An entity or join table of no entity of this version: left out, unless its rows
                // or links went into this version's tables (a renamed entity or relationship).
                if !isReadByThisVersion(table.name) { summary.leftOutTables.append(table.name) }
                continue
            }
            guard let sql = table.sql, Self.isPlainCreateTable(sql) else {
                summary.leftOutTables.append(table.name)
                continue
            }
            try runOneStatement(sql)
            let columns = table.columns.map(\.name)
            var values = columns.map { SQLLiteral.column($0, of: "o") }
            if table.name.sqliteNameKey == "ANSCKRECORDMETADATA".sqliteNameKey,
               let index = columns.firstIndex(where: { $0.sqliteNameKey == "ZENTITYID".sqliteNameKey }) {
                let mapped = state.entityOfBaseNumber.sorted { $0.key < $1.key }.compactMap { base, name in
                    layout.entityNumber(of: name).map { "WHEN \(base) THEN \($0)" }
                }
                values[index] = mapped.isEmpty ? values[index] : "CASE \(values[index]) \(mapped.joined(separator: " ")) ELSE \(values[index]) END"
            }
            try connection.execute("""
                INSERT INTO main.\(table.name.quotedSQLIdentifier) (\(columns.map(\.quotedSQLIdentifier).joined(separator: ", "))) \
                SELECT \(values.joined(separator: ", ")) FROM \(SQLLiteral.table(table.name, in: state.baseSchema)) o
                """)
            for (_, decision) in try Self.appTableIndexes(of: table, physical: basePhysical) {
                if case .success(let indexSQL) = decision { try runOneStatement(indexSQL) }
            }
            summary.carriedTables.append(table.name)
        }
        // Views and triggers are not carried (a trigger may name what the target no longer
        // has, and Core Data makes its own): left out, and said so (a review's were dropped
        // without a word).
        for view in basePhysical.views { summary.leftOutTables.append("view \(view.name)") }
        for trigger in basePhysical.triggers { summary.leftOutTables.append("trigger \(trigger.name)") }
    }

    /// The explicit indexes of an app's table that `copyOtherTables` carries, each with the
    /// statement that makes it, or why it is left out: its definition is not one plain `CREATE
    /// INDEX`, or SQLite cannot make it in the migrated store (a collation or function the app
    /// registers itself: tried on the table's definition in an empty database). A partial,
    /// expression, `COLLATE` or `UNIQUE` index SQLite makes is carried as the store has it: its
    /// rows are copied as they are. The dry run asks the same (`indexCarriage`); such an index
    /// used to stop the whole migration ("no such collation sequence"), or — not plain — be
    /// dropped without a word.
    static func appTableIndexes(
        of table: PhysicalSchema.Table, physical: PhysicalSchema
    ) throws -> [(index: PhysicalSchema.Index, decision: Result<String, OwnIndex.NotPlain>)] {
        let indexes = physical.indexes.filter { $0.table.hasSameBytes(as: table.name) && $0.isExplicit }
        guard !indexes.isEmpty, let tableSQL = table.sql else { return [] }
        let scratch = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        do {
            _ = try scratch.prepare(tableSQL).step()
        } catch let error as SQLiteError {
            // The run stops on the table itself; the dry run says why its indexes cannot follow.
            return indexes.map { ($0, .failure(OwnIndex.NotPlain(reason: "SQLite cannot make its table in the migrated store: \(error.message)"))) }
        }
        return indexes.map { index in
            guard let sql = index.sql, isPlainCreateIndex(sql) else {
                return (index, .failure(OwnIndex.NotPlain(reason: "its definition is not one plain CREATE INDEX statement")))
            }
            do {
                _ = try scratch.prepare(sql).step()
                return (index, .success(sql))
            } catch let error as SQLiteError {
                return (index, .failure(OwnIndex.NotPlain(reason: "SQLite cannot make it in the migrated store: \(error.message)")))
            } catch {
                return (index, .failure(OwnIndex.NotPlain(reason: "SQLite cannot make it in the migrated store: \(error)")))
            }
        }
    }

    /// Runs the first statement of `sql` and nothing after it (a prepared statement is one
    /// statement; `execute` runs them all): the checks above refuse a second one, and should
    /// they ever miss one, it is not run.
    private func runOneStatement(_ sql: String) throws {
        _ = try connection.prepare(sql).step()
    }

    /// True when the rows of base table `name` are some entity's at this version, or its links
    /// some relationship's (the link queries read it).
    private func isReadByThisVersion(_ name: String) -> Bool {
        if state.rowSources.contains(where: { $0.baseTable.sqliteNameKey == name.sqliteNameKey }) { return true }
        let read = SQLLiteral.table(name, in: state.baseSchema)
        return state.links.contains { !$0.isEmpty && $0.query.containsASCIICaseInsensitiveBytes(read) }
    }

    /// Whether `sql` is one plain `CREATE TABLE`: `CREATE TABLE [IF NOT EXISTS]`, an unqualified
    /// name, then the definition in parentheses; no virtual or temporary table, no `AS` query,
    /// nothing after it.
    ///
    /// Read as SQLite reads it (`SQLToken`): a `;` in a quoted name is part of the name (a table
    /// `notes;x` was left out, its rows only in the backup), and a comment between `AS` and its
    /// query separates them as white space does (`AS/**/SELECT` was taken for plain). Any `;`
    /// outside quotes and comments, or text SQLite would not read, is not plain; the text is read
    /// as bytes (a `;` followed by a combining mark is still a `;`, which `contains(";")` missed).
    /// (That the text creates the table the schema names, SQLite checks as it opens the store.)
    static func isPlainCreateTable(_ sql: String) -> Bool {
        var rest = statementTokens(sql)[...]
        guard consume(["CREATE", "TABLE"], from: &rest) else { return false }
        _ = consume(["IF", "NOT", "EXISTS"], from: &rest)
        guard rest.popFirst()?.isName == true, rest.first?.isPunctuation("(") == true else { return false }
        // `CREATE TABLE t AS …` in any spelling: an `AS` outside the parentheses (inside them it
        // is a column's: `GENERATED ALWAYS AS (…)`, `CAST(x AS …)`).
        var depth = 0
        for token in rest {
            if token.isPunctuation("(") { depth += 1 } else if token.isPunctuation(")") { depth -= 1 }
            if depth <= 0, token.isKeyword("AS") { return false }
        }
        return true
    }

    /// Whether `sql` is one plain `CREATE [UNIQUE] INDEX [IF NOT EXISTS] name ON table (…)`
    /// (both names unqualified), nothing after it; read as `isPlainCreateTable` reads a table's.
    static func isPlainCreateIndex(_ sql: String) -> Bool {
        var rest = statementTokens(sql)[...]
        guard consume(["CREATE", "INDEX"], from: &rest) || consume(["CREATE", "UNIQUE", "INDEX"], from: &rest) else { return false }
        _ = consume(["IF", "NOT", "EXISTS"], from: &rest)
        return rest.popFirst()?.isName == true && consume(["ON"], from: &rest)
            && rest.popFirst()?.isName == true && rest.first?.isPunctuation("(") == true
    }

    /// The tokens of one statement; none when SQLite would not read it, or it holds a `;`.
    private static func statementTokens(_ sql: String) -> [SQLToken] {
        guard let tokens = SQLToken.tokens(of: sql), !tokens.contains(where: { $0.kind == .semicolon }) else { return [] }
        return tokens
    }

    /// Removes `keywords` from the start of `tokens` when they are there, in order.
    private static func consume(_ keywords: [String], from tokens: inout ArraySlice<SQLToken>) -> Bool {
        guard tokens.count >= keywords.count, zip(tokens, keywords).allSatisfy({ $0.isKeyword($1) }) else { return false }
        tokens.removeFirst(keywords.count)
        return true
    }
}
