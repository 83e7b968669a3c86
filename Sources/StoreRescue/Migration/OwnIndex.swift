/// An index a store holds that its version's layout does not make — one an app created itself
/// (`CREATE INDEX ZAPPNOTE_IDX ON ZENTRY(ZAPPNOTE)`) — on a table of that layout (an entity or
/// join table). Core Data neither makes nor needs it; the migrator carries it when it is a
/// plain index of the app's own columns (`OwnColumn`) that reach one table of the target, and
/// reports it as left out otherwise (`Docs/MIGRATE.md#an-apps-own-columns`): it was dropped
/// without a word.
///
/// Nothing of the store's `CREATE INDEX` text is run: the statement is written anew from the
/// parsed names (quoted), the collation (one of SQLite's own) and the order.
struct OwnIndex: Equatable {
    /// The name in the store, byte for byte.
    var name: String
    /// The store's table it is on.
    var baseTable: String
    /// What the store's statement says, when it is a plain index (`OwnIndex.parse`); else why not.
    var definition: Result<Definition, NotPlain>
    /// Its columns by name (an expression's left out), and those the base version's layout
    /// lays out itself (not the app's own).
    var columns: [String]
    var modelColumns: [String]

    struct Definition: Equatable {
        var isUnique: Bool
        var elements: [Element]
    }

    /// One column of a plain index: its name, and `COLLATE …` / `ASC`/`DESC` as written.
    struct Element: Equatable {
        var column: String
        /// `BINARY`, `NOCASE` or `RTRIM` (the collations SQLite always has), upper-cased.
        var collation: String?
        var isDescending: Bool?
    }

    struct NotPlain: Error, Equatable {
        var reason: String
    }

    /// The collations every SQLite connection has: an index naming another cannot be created
    /// where the app's own collation is not registered.
    static let builtInCollations = ["BINARY", "NOCASE", "RTRIM"]

    /// `sql` read as SQLite reads it (`SQLToken`) when it is
    /// `CREATE [UNIQUE] INDEX [IF NOT EXISTS] name ON table (column [COLLATE c] [ASC|DESC], …)`
    /// with nothing after it; else why it is not plain.
    static func parse(_ sql: String?) -> Result<Definition, NotPlain> {
        guard let sql, let tokens = SQLToken.tokens(of: sql), !tokens.contains(where: { $0.kind == .semicolon }) else {
            return .failure(NotPlain(reason: "its definition is not one statement SQLite reads"))
        }
        var rest = tokens[...]
        func take(_ keywords: String...) -> Bool {
            guard rest.count >= keywords.count, zip(rest, keywords).allSatisfy({ $0.isKeyword($1) }) else { return false }
            rest.removeFirst(keywords.count)
            return true
        }
        guard take("CREATE") else { return .failure(NotPlain(reason: "its definition is not a CREATE INDEX")) }
        let isUnique = take("UNIQUE")
        guard take("INDEX") else { return .failure(NotPlain(reason: "its definition is not a CREATE INDEX")) }
        _ = take("IF", "NOT", "EXISTS")
        guard rest.popFirst()?.isName == true, take("ON"), rest.popFirst()?.isName == true, rest.first?.isPunctuation("(") == true else {
            return .failure(NotPlain(reason: "its definition is not a plain CREATE INDEX"))
        }
        rest.removeFirst()
        var elements: [Element] = []
        while true {
            guard let token = rest.popFirst(), token.kind == .word || token.kind == .quotedName, let name = token.unquotedName,
                let next = rest.first, !next.isPunctuation("(")
            else { return .failure(NotPlain(reason: "an index on an expression")) }
            var element = Element(column: name)
            if take("COLLATE") {
                guard let collation = rest.popFirst(), let collationName = collation.unquotedName,
                    let builtIn = builtInCollations.first(where: { $0.sqliteNameKey == collationName.sqliteNameKey })
                else { return .failure(NotPlain(reason: "an index with a collation of the app's own (not BINARY, NOCASE or RTRIM)")) }
                element.collation = builtIn
            }
            if take("ASC") { element.isDescending = false } else if take("DESC") { element.isDescending = true }
            elements.append(element)
            guard let separator = rest.popFirst() else { return .failure(NotPlain(reason: "its definition is not a plain CREATE INDEX")) }
            if separator.isPunctuation(",") { continue }
            guard separator.isPunctuation(")") else { return .failure(NotPlain(reason: "an index on an expression")) }
            break
        }
        if rest.first?.isKeyword("WHERE") == true { return .failure(NotPlain(reason: "a partial index (WHERE …)")) }
        guard rest.isEmpty else { return .failure(NotPlain(reason: "its definition is not a plain CREATE INDEX")) }
        return .success(Definition(isUnique: isUnique, elements: elements))
    }

    /// `CREATE [UNIQUE] INDEX main."name" ON "table" ("column" COLLATE c ASC, …)`: every name
    /// quoted (SQLite takes the schema on the index's name, not the table's).
    func createStatement(on table: String, definition: Definition) -> String {
        let elements = definition.elements.map { element in
            var text = element.column.quotedSQLIdentifier
            if let collation = element.collation { text += " COLLATE " + collation }
            if let isDescending = element.isDescending { text += isDescending ? " DESC" : " ASC" }
            return text
        }
        return "CREATE \(definition.isUnique ? "UNIQUE " : "")INDEX main.\(name.quotedSQLIdentifier) ON \(table.quotedSQLIdentifier) (\(elements.joined(separator: ", ")))"
    }
}

extension SQLToken {
    /// The name a word or quoted name stands for: a quoted one without its quotes (a doubled
    /// quote read as one); nil for other tokens.
    var unquotedName: String? {
        switch kind {
        case .word:
            return text
        case .quotedName:
            let inner = Array(bytes.dropFirst().dropLast())
            guard let open = bytes.first else { return nil }
            if open == UInt8(ascii: "[") { return String(decoding: inner, as: UTF8.self) }
            var result: [UInt8] = []
            var index = 0
            while index < inner.count {
                result.append(inner[index])
                index += inner[index] == open && index + 1 < inner.count && inner[index + 1] == open ? 2 : 1
            }
            return String(decoding: result, as: UTF8.self)
        default:
            return nil
        }
    }
}

extension MigrationAnalysis {
    /// An index of the store carried into the migrated store (`OwnIndex`).
    public struct CarriedIndex: Sendable, Equatable, Encodable {
        /// Its name, as in the store.
        public var index: String
        /// Its table in the store, and the table it is made on at the target.
        public var table: String
        public var to: String
    }

    /// An index of the store the migrated store neither lays out nor carries, and why.
    public struct LeftOutIndex: Sendable, Equatable, Encodable {
        public var index: String
        /// Its table in the store.
        public var table: String
        public var reason: String
    }
}

/// What becomes of the indexes of a store a version does not lay out: those carried (with the
/// statement that makes each at the target) and those left out.
struct IndexCarriage {
    var carried: [(report: MigrationAnalysis.CarriedIndex, statement: String)] = []
    var leftOut: [MigrationAnalysis.LeftOutIndex] = []
}

extension VirtualVersion {
    /// The indexes of `physical` on tables of `layout` (entity and join tables) that the layout
    /// does not make itself: an app's own, or drift (`OwnIndex`). SQLite's automatic indexes
    /// are made again by the tables' own definitions.
    static func ownIndexes(layout: StoreLayout, physical: PhysicalSchema) -> [OwnIndex] {
        let laidOut = Set(layout.indexes.map(\.name.sqliteNameKey))
        var result: [OwnIndex] = []
        for table in layout.tables {
            guard let stored = physical.table(named: table.name) else { continue }
            for index in physical.indexes where index.isExplicit && index.table.hasSameBytes(as: stored.name) && !laidOut.contains(index.name.sqliteNameKey) {
                let definition = OwnIndex.parse(index.sql)
                let columns = (try? definition.get())?.elements.map(\.column) ?? index.columns.filter { $0 != "<expr>" }
                let modelColumns = columns.filter { name in table.columns.contains { OwnColumn.isSameName($0.name, name) } }
                result.append(OwnIndex(name: index.name, baseTable: stored.name, definition: definition, columns: columns, modelColumns: modelColumns))
            }
        }
        return result
    }

    /// Every name the written version holds besides the own indexes: its tables and indexes,
    /// the history's, the bookkeeping tables, and the app's tables carried with their indexes
    /// (tables and indexes share one namespace in SQLite).
    func namesTaken(physical: PhysicalSchema) -> Set<[UInt8]> {
        var names = layout.tables.map(\.name) + layout.indexes.map(\.name) + ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
        names += (layout.persistentHistory?.tables.map(\.name) ?? []) + (layout.persistentHistory?.indexes.map(\.name) ?? [])
        for table in appTables(physical: physical) {
            guard let sql = table.sql, VersionWriter.isPlainCreateTable(sql) else { continue }
            names.append(table.name)
            names += physical.indexes.filter { $0.table.hasSameBytes(as: table.name) && $0.isExplicit }.map(\.name)
        }
        return Set(names.map(\.sqliteNameKey))
    }

    /// The tables of `physical` this version does not lay out that `VersionWriter.copyOtherTables`
    /// carries when their definition is plain: CloudKit's and the app's own.
    func appTables(physical: PhysicalSchema) -> [PhysicalSchema.Table] {
        let laidOut = Set(((layout.tables + (layout.persistentHistory?.tables ?? [])).map(\.name)
            + ["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"]).map(\.sqliteNameKey))
        return physical.tables.filter { ($0.category == .other || $0.category == .cloudKit) && !laidOut.contains($0.name.sqliteNameKey) }
    }

    /// What becomes of the base's own indexes (`ownIndexes`, carried through the hops) at this
    /// version: a plain index whose columns are all the app's own, carried to the one table
    /// their rows go to, is made there after the rows are in; any other is left out, with why.
    /// The dry run and the writer ask the same question of the same store.
    func indexCarriage(physical: PhysicalSchema) throws -> IndexCarriage {
        var carriage = IndexCarriage()
        // The app's own tables (`VersionWriter.copyOtherTables`): an index SQLite cannot make
        // there, or not plain, is left out; one of a table left out goes with it.
        for table in appTables(physical: physical) {
            guard let sql = table.sql, VersionWriter.isPlainCreateTable(sql) else {
                for index in physical.indexes where index.table.hasSameBytes(as: table.name) && index.isExplicit {
                    carriage.leftOut.append(.init(index: index.name, table: table.name, reason: "its table is left out (not one plain CREATE TABLE)"))
                }
                continue
            }
            for (index, decision) in try VersionWriter.appTableIndexes(of: table, physical: physical) {
                if case .failure(let notPlain) = decision {
                    carriage.leftOut.append(.init(index: index.name, table: table.name, reason: notPlain.reason))
                }
            }
        }
        var taken = namesTaken(physical: physical)
        let ownColumnsByTable = ownColumnsByTable()
        for index in ownIndexes {
            func leave(_ reason: String) {
                carriage.leftOut.append(.init(index: index.name, table: index.baseTable, reason: reason))
            }
            // The same index made by this version's layout (drift the store had ahead of it).
            if let laidOut = layout.indexes.first(where: { $0.name.sqliteNameKey == index.name.sqliteNameKey }),
                laidOut.columns.map(\.sqliteNameKey) == index.columns.map(\.sqliteNameKey), index.modelColumns.count == index.columns.count
            {
                continue
            }
            let definition: OwnIndex.Definition
            switch index.definition {
            case .failure(let notPlain):
                leave("\(notPlain.reason): only a plain index of the app's own columns is carried")
                continue
            case .success(let parsed):
                definition = parsed
            }
            guard index.modelColumns.isEmpty else {
                // Said without a version: a version written on the way says what the target would.
                leave("it indexes \(index.modelColumns.joined(separator: ", ")), a column of the model: the version's layout makes the indexes of those")
                continue
            }
            let names = definition.elements.map(\.column)
            func isIndexed(_ column: OwnColumn) -> Bool {
                column.baseTable.sqliteNameKey == index.baseTable.sqliteNameKey && names.contains { OwnColumn.isSameName($0, column.name) }
            }
            // The tables the rows holding its columns go to.
            var targets: [String] = []
            for source in rowSources where source.ownColumns.contains(where: isIndexed) {
                if let table = layout.table(ofEntity: source.entity, in: version.model), !targets.contains(table.name) { targets.append(table.name) }
            }
            guard let target = targets.first else {
                leave("its columns reach no table of \(version.name)")
                continue
            }
            guard targets.count == 1 else {
                leave("the rows holding its columns go to several tables at \(version.name) (\(targets.joined(separator: ", ")))")
                continue
            }
            let there = ownColumnsByTable[target] ?? []
            let missing = names.filter { name in !there.contains { OwnColumn.isSameName($0.name, name) } }
            guard missing.isEmpty else {
                leave("\(missing.joined(separator: ", ")) is not carried to \(target)")
                continue
            }
            // A unique index keeps values apart only among the rows it held: not where the
            // table also takes a column of that name from another table's rows.
            if definition.isUnique {
                let others = rowSources.filter { layout.table(ofEntity: $0.entity, in: version.model)?.name == target }
                    .flatMap(\.ownColumns).filter { column in
                        names.contains { OwnColumn.isSameName($0, column.name) } && column.baseTable.sqliteNameKey != index.baseTable.sqliteNameKey
                    }
                if let other = others.first {
                    leave("a UNIQUE index, and \(target) at \(version.name) also takes \(other.qualifiedName)'s values, which it never held apart")
                    continue
                }
            }
            if let laidOut = layout.indexes.first(where: { $0.name.sqliteNameKey == index.name.sqliteNameKey }) {
                leave("\(version.name) lays out an index of that name (on \(laidOut.table))")
                continue
            }
            guard !taken.contains(index.name.sqliteNameKey) else {
                leave("\(version.name) has a table or index of that name")
                continue
            }
            taken.insert(index.name.sqliteNameKey)
            carriage.carried.append((.init(index: index.name, table: index.baseTable, to: target), index.createStatement(on: target, definition: definition)))
        }
        return carriage
    }
}
