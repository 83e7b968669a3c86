import Foundation
/// Compares a store's physical schema with the layout Core Data gives a version: tables,
/// columns (name and declared type) and explicit indexes, names compared as SQLite does
/// (`String.sqliteNameKey`: bytes, ASCII letters without case; Swift's case folding took a
/// store's `Z_1TAG\u{17F}` for the layout's `Z_1TAGS`). Works on domain values (`PhysicalSchema`, `StoreLayout`), so `match`
/// and the migration planner see the same differences.
enum SchemaComparison {
    /// Tables that belong to the model's layout (entity and join tables); history, CloudKit and
    /// SQLite's own tables are not part of a version's layout.
    static func comparableTables(_ schema: PhysicalSchema) -> [PhysicalSchema.Table] {
        schema.tables.filter { $0.category == .entity || $0.category == .joinTable || $0.category == .other }
    }

    static func differences(store schema: PhysicalSchema, layout: StoreLayout) -> [Difference] {
        var result: [Difference] = []
        let storeTables = Dictionary(
            comparableTables(schema).map { ($0.name.sqliteNameKey, $0) }, uniquingKeysWith: { first, _ in first })
        let layoutTables = Dictionary(layout.tables.map { ($0.name.sqliteNameKey, $0) }, uniquingKeysWith: { first, _ in first })

        for (key, table) in layoutTables.sorted(by: { SQLiteNameKey.precedes($0.key, $1.key) }) {
            guard let stored = storeTables[key] else {
                result.append(Difference(
                    kind: .tableMissing, impact: .blocking, entity: table.rootEntity, table: table.name, column: nil,
                    detail: "table \(table.name) is missing"))
                continue
            }
            let storedColumns = Dictionary(stored.columns.map { ($0.name.sqliteNameKey, $0) }, uniquingKeysWith: { first, _ in first })
            let layoutColumns = Dictionary(table.columns.map { ($0.name.sqliteNameKey, $0) }, uniquingKeysWith: { first, _ in first })
            for (columnKey, column) in layoutColumns.sorted(by: { SQLiteNameKey.precedes($0.key, $1.key) }) {
                guard let storedColumn = storedColumns[columnKey] else {
                    result.append(Difference(
                        kind: .columnMissing, impact: .blocking, entity: table.rootEntity, table: table.name, column: column.name,
                        detail: "column \(table.name).\(column.name) (\(column.type)) is missing: fetches that read it fail"))
                    continue
                }
                if !storedColumn.type.isSameSQLiteName(as: column.type) {
                    result.append(Difference(
                        kind: .columnTypeDiffers, impact: .blocking, entity: table.rootEntity, table: table.name, column: column.name,
                        detail: "column \(table.name).\(column.name) is \(storedColumn.type), the version declares \(column.type)"))
                }
            }
            for (columnKey, column) in storedColumns.sorted(by: { SQLiteNameKey.precedes($0.key, $1.key) }) where layoutColumns[columnKey] == nil {
                result.append(Difference(
                    kind: .columnExtra, impact: .benign, entity: table.rootEntity, table: table.name, column: column.name,
                    detail: "column \(table.name).\(column.name) (\(column.type)) is not in this version: Core Data ignores it"))
            }
        }
        for (key, table) in storeTables.sorted(by: { SQLiteNameKey.precedes($0.key, $1.key) }) where layoutTables[key] == nil {
            result.append(Difference(
                kind: .tableExtra, impact: .benign, entity: nil, table: table.name, column: nil,
                detail: "table \(table.name) is not in this version"))
        }
        result += indexDifferences(store: schema, layout: layout, tables: Set(layoutTables.keys))
        return result
    }

    /// Whether a unique index enforces uniqueness as Core Data's does: over every row (no
    /// `WHERE`) and comparing bytes (no collation but BINARY, in the index or, for the automatic
    /// index of a `UNIQUE` column constraint, in the table). A partial or NOCASE index was taken
    /// for "the same uniqueness" (a review).
    static func enforcesPlainUniqueness(_ index: PhysicalSchema.Index, in schema: PhysicalSchema) -> Bool {
        func plain(_ sql: String?) -> Bool {
            guard let sql else { return true }
            // Whole words only: a column named ZCOLLATERALID is no COLLATE clause, and WHERE
            // may follow ")" or a tab (a review found both).
            let options: NSRegularExpression.Options = [.caseInsensitive]
            let whole = NSRange(sql.startIndex..., in: sql)
            if let partial = try? NSRegularExpression(pattern: #"\bWHERE\b"#, options: options), partial.firstMatch(in: sql, range: whole) != nil {
                return false
            }
            guard let collate = try? NSRegularExpression(pattern: #"\bCOLLATE\s+["'`\[]?(\w+)"#, options: options) else { return false }
            return collate.matches(in: sql, range: whole).allSatisfy { match in
                Range(match.range(at: 1), in: sql).map { String(sql[$0]).isSameSQLiteName(as: "BINARY") } ?? false
            }
        }
        if index.isExplicit { return plain(index.sql) }
        return plain(schema.table(named: index.table)?.sql)
    }

    private static func indexDifferences(store schema: PhysicalSchema, layout: StoreLayout, tables: Set<[UInt8]>) -> [Difference] {
        var result: [Difference] = []
        let stored = Dictionary(
            schema.indexes.filter { $0.isExplicit && tables.contains($0.table.sqliteNameKey) }.map { ($0.name.sqliteNameKey, $0) },
            uniquingKeysWith: { first, _ in first })
        let expected = Dictionary(layout.indexes.map { ($0.name.sqliteNameKey, $0) }, uniquingKeysWith: { first, _ in first })
        for (key, index) in expected.sorted(by: { SQLiteNameKey.precedes($0.key, $1.key) }) {
            let impact: Difference.Impact = index.isUnique ? .blocking : .benign
            guard let found = stored[key] else {
                // Uniqueness may be enforced another way: a UNIQUE column constraint's automatic
                // index (how framework 851 wrote a single-property constraint: knowledgeC 10.13,
                // LAYOUT.md), or a unique index of another name on the same columns. Then only the
                // form differs; a review saw Apple's own store get a blocking difference.
                let columns = index.columns.map(\.sqliteNameKey)
                if index.isUnique, let enforcing = schema.indexes.first(where: { other in
                    other.isUnique && other.table.isSameSQLiteName(as: index.table) && other.columns.map(\.sqliteNameKey) == columns
                        && Self.enforcesPlainUniqueness(other, in: schema)
                }) {
                    result.append(Difference(
                        kind: .indexMissing, impact: .benign, entity: nil, table: index.table, column: nil,
                        detail: "index \(index.name) on \(index.table)(\(index.columns.joined(separator: ", "))) is missing, but \(enforcing.name) enforces the same uniqueness (an older form)"))
                    continue
                }
                let effect = index.isUnique ? "uniqueness is not enforced" : "only performance suffers"
                result.append(Difference(
                    kind: .indexMissing, impact: impact, entity: nil, table: index.table, column: nil,
                    detail: "index \(index.name) on \(index.table)(\(index.columns.joined(separator: ", "))) is missing: \(effect)"))
                continue
            }
            if found.columns.map(\.sqliteNameKey) != index.columns.map(\.sqliteNameKey) || found.isUnique != index.isUnique {
                result.append(Difference(
                    kind: .indexDiffers, impact: impact, entity: nil, table: index.table, column: nil,
                    detail: "index \(index.name) is \(found.isUnique ? "UNIQUE " : "")(\(found.columns.joined(separator: ", "))), the version declares \(index.isUnique ? "UNIQUE " : "")(\(index.columns.joined(separator: ", ")))"))
            }
        }
        for (key, index) in stored.sorted(by: { SQLiteNameKey.precedes($0.key, $1.key) }) where expected[key] == nil {
            result.append(Difference(
                kind: .indexExtra, impact: .benign, entity: nil, table: index.table, column: nil,
                detail: "index \(index.name) on \(index.table)(\(index.columns.joined(separator: ", "))) is not in this version"))
        }
        return result
    }
}
