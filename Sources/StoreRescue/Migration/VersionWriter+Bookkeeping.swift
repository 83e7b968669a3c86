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
        let laidOut = Set((layout.tables + (layout.persistentHistory?.tables ?? [])).map { $0.name.uppercased() })
            .union(["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"])
        for table in basePhysical.tables where !laidOut.contains(table.name.uppercased()) {
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
            try connection.execute(sql)
            let columns = table.columns.map(\.name)
            var values = columns.map { SQLLiteral.column($0, of: "o") }
            if table.name.uppercased() == "ANSCKRECORDMETADATA", let index = columns.firstIndex(where: { $0.uppercased() == "ZENTITYID" }) {
                let mapped = state.entityOfBaseNumber.sorted { $0.key < $1.key }.compactMap { base, name in
                    layout.entityNumber(of: name).map { "WHEN \(base) THEN \($0)" }
                }
                values[index] = mapped.isEmpty ? values[index] : "CASE \(values[index]) \(mapped.joined(separator: " ")) ELSE \(values[index]) END"
            }
            try connection.execute("""
                INSERT INTO main.\(table.name.quotedSQLIdentifier) (\(columns.map(\.quotedSQLIdentifier).joined(separator: ", "))) \
                SELECT \(values.joined(separator: ", ")) FROM \(SQLLiteral.table(table.name, in: state.baseSchema)) o
                """)
            for index in basePhysical.indexes where index.table == table.name && index.isExplicit {
                if let indexSQL = index.sql, Self.isPlainCreateIndex(indexSQL) { try connection.execute(indexSQL) }
            }
            summary.carriedTables.append(table.name)
        }
        // Views and triggers are not carried (a trigger may name what the target no longer
        // has, and Core Data makes its own): left out, and said so (a review's were dropped
        // without a word).
        for view in basePhysical.views { summary.leftOutTables.append("view \(view.name)") }
        for trigger in basePhysical.triggers { summary.leftOutTables.append("trigger \(trigger.name)") }
    }

    /// True when the rows of base table `name` are some entity's at this version, or its links
    /// some relationship's (the link queries read it).
    private func isReadByThisVersion(_ name: String) -> Bool {
        if state.rowSources.contains(where: { $0.baseTable.uppercased() == name.uppercased() }) { return true }
        let read = SQLLiteral.table(name, in: state.baseSchema).uppercased()
        return state.links.contains { !$0.isEmpty && $0.query.uppercased().contains(read) }
    }

    /// One `CREATE TABLE` statement, no virtual table, nothing after it.
    ///
    /// Looked at byte for byte (`hasSemicolon`, `words`): Swift compares characters, and a `;`
    /// followed by a combining mark is another character than `;` — `contains(";")` was false
    /// for `CREATE TABLE t(a);\u{301} …`, which `execute` was then handed whole (SQLite stopped at
    /// the mark, a syntax error; the check must not rest on that).
    static func isPlainCreateTable(_ sql: String) -> Bool {
        let words = words(of: sql)
        return words.starts(with: ["CREATE", "TABLE"]) && !hasSemicolon(sql)
            && !zip(words, words.dropFirst()).contains { $0 == "AS" && $1.hasPrefix("SELECT") }
    }

    static func isPlainCreateIndex(_ sql: String) -> Bool {
        let words = words(of: sql)
        return (words.starts(with: ["CREATE", "INDEX"]) || words.starts(with: ["CREATE", "UNIQUE", "INDEX"])) && !hasSemicolon(sql)
    }

    private static func hasSemicolon(_ sql: String) -> Bool {
        sql.utf8.contains(UInt8(ascii: ";"))
    }

    /// `sql` in upper case, split at ASCII white space (SQLite's: space, tab, newline, form
    /// feed, carriage return), so `AS\nSELECT` is the two words it is to SQLite.
    private static func words(of sql: String) -> [String] {
        sql.uppercased().utf8.split { [9, 10, 12, 13, 32].contains($0) }.map { String(decoding: $0, as: UTF8.self) }
    }
}
