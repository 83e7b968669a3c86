import Foundation
import SRSQLite

/// After the last row: fix-ups, deferred indexes, `Z_MAX`, history tables, the model cache, counts,
/// the store back in WAL mode and checked.
extension CoreDataSalvageOutput {
    func finish(bookkeeping: BookkeepingRows) throws -> SalvageOutputSummary {
        writer.finishInserting()
        var results: [String: SalvageOutputSummary.TableResult] = [:]
        var notes: [String] = []
        // The indexes first: the fix-ups below then find the reference values in them (a scan
        // of a small covering index, not of every page of the table): on the benchmark store
        // the fix-ups took 110 ms instead of 144 ms, before `isDangling`'s lookups took them to
        // about 80 ms.
        for index in deferredIndexes { try connection.execute(index.sql) }
        var joinTables: [String] = []
        for end in references.joinEnds where !joinTables.contains(end.table) { joinTables.append(end.table) }
        for table in joinTables {
            let ends = references.joinEnds.filter { $0.table == table }
            let quoted = table.quotedSQLIdentifier
            if let rows = try danglingRowsByKey(in: table, references: ends, nullDangles: true) {
                results[table, default: .init(rows: 0)].danglingRowsDropped += try changeEach(rows, "DELETE FROM \(quoted) WHERE rowid = ?")
                continue
            }
            for end in ends {
                try connection.execute("""
                    DELETE FROM \(quoted) WHERE \(end.column.quotedSQLIdentifier) IS NULL OR \
                    \(Self.isDangling(end, everyTargetRowQualifies: try Self.everyRowQualifies(end, connection: connection)))
                    """)
                results[table, default: .init(rows: 0)].danglingRowsDropped += Int(sqlite3Changes)
            }
        }
        for reference in references.toOne {
            let quoted = reference.table.quotedSQLIdentifier
            let cleared = ([reference.column] + reference.companions).map { "\($0.quotedSQLIdentifier) = NULL" }.joined(separator: ", ")
            if let rows = try danglingRowsByKey(in: reference.table, references: [reference], nullDangles: false) {
                results[reference.table, default: .init(rows: 0)].danglingCleared += try changeEach(rows, "UPDATE \(quoted) SET \(cleared) WHERE rowid = ?")
                continue
            }
            let condition = Self.isDangling(reference, everyTargetRowQualifies: try Self.everyRowQualifies(reference, connection: connection))
            try connection.execute("UPDATE \(quoted) SET \(cleared) WHERE \(condition)")
            results[reference.table, default: .init(rows: 0)].danglingCleared += Int(sqlite3Changes)
        }
        try updatePrimaryKeyMaxima(bookkeeping: bookkeeping)
        var leftOut: [String: String] = [:]
        let includesHistory = try settleHistory(bookkeeping: bookkeeping, notes: &notes, leftOut: &leftOut)
        let modelCache = bookkeeping.modelCache(matching: version.versionHashes)
        if let modelCache {
            let insert = try connection.prepare("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)")
            try insert.bind([.blob(modelCache)])
            _ = try insert.step()
        }
        // Pages freed by the dropped indexes (and history tables) go back to the file system.
        try connection.execute("COMMIT; PRAGMA incremental_vacuum")
        // Every row and index is in the file: let the disk take it while the rest is done. (With
        // a check running the store is in WAL mode, so no descriptor of another may be closed
        // under this connection's lock: the bulk load's pages were handed over as it ended,
        // `PageAppender.finish`, and SQLite's since are in the `-wal` until the checkpoint.)
        if backgroundCheck == nil {
            Writeback.start(path: connection.path)
            flush?.request()
        }

        let names = Dictionary(layout.entityNumbers.map { ($0.ent, $0.name) }, uniquingKeysWith: { first, _ in first })
        for table in allTables where includesHistory || layout.persistentHistory?.tables.contains(table) != true {
            let quoted = table.name.quotedSQLIdentifier
            var result = results[table.name] ?? .init(rows: 0)
            let entities = table.rootEntity == nil ? [] : entityNumbers(of: table) ?? []
            if table.rootEntity != nil, let presence = writer.ledger?.presence(ofTable: table.name) {
                // Every row that went in was noted with its entity, and none has left since.
                result.entities = presence.rowsByEntity.map { entry in
                    SalvageReport.EntityCount(name: names[Int(entry.entity)] ?? "?", ent: Int(entry.entity), rows: entry.rows)
                }
                result.rows = result.entities.reduce(0) { $0 + $1.rows }
            } else if entities.count > 1 {
                // One pass gives both: the rows are the entities' rows.
                result.entities = try connection.rows("SELECT Z_ENT, count(*) FROM \(quoted) GROUP BY Z_ENT ORDER BY Z_ENT").map { row in
                    let ent = Int(row[0].int64 ?? 0)
                    return SalvageReport.EntityCount(name: names[ent] ?? "?", ent: ent, rows: Int(row[1].int64 ?? 0))
                }
                result.rows = result.entities.reduce(0) { $0 + $1.rows }
            } else {
                result.rows = Int(try connection.scalar("SELECT count(*) FROM \(quoted)")?.int64 ?? 0)
                // A table of one entity holds that entity's rows only: a row goes in with its
                // `Z_ENT` set to it (`SalvageRowWriter.needsFixes`), so no pass groups them.
                if let ent = entities.first, result.rows > 0 {
                    result.entities = [SalvageReport.EntityCount(name: names[Int(ent)] ?? "?", ent: Int(ent), rows: result.rows)]
                }
            }
            results[table.name] = result
        }
        for (table, gaps) in try requiredValuesMissing().sorted(by: { $0.key < $1.key }) {
            results[table, default: .init(rows: 0)].requiredValuesMissing = gaps
            for gap in gaps {
                let objects = "table \(table): \(gap.objects) \(gap.entity) object\(gap.objects == 1 ? " has" : "s have") no value for the required attribute "
                    + "\"\(gap.attribute)\" (column \(gap.column))"
                let unsaved = "Core Data will not save \(gap.objects == 1 ? "it until it has" : "them until each has") a value"
                if tablesReadAsTheVersions.contains(table) {
                    notes.append(
                        objects + "; \(unsaved) (the damaged schema does not describe the table, so its rows were read as version \"\(version.name)\"'s: "
                            + "if another version wrote the store, salvage with that one, then upgrade)")
                } else {
                    notes.append(
                        objects + ", which the damaged store's table does not have: version \"\(version.name)\" is not the one that wrote the store, "
                            + "or its schema row is damaged; \(unsaved) (salvage with the store's own version, then upgrade)")
                }
            }
        }
        try enterWALMode()
        // SQLite vouches for every page salvage wrote itself: the check begun when the last of
        // them was in the file (`OutputCheck`), or, when none was, one of the finished file.
        let check = try backgroundCheck?.wait(cancellation: cancellation) ?? OutputCheck.verdict(of: connection, cancellation: cancellation)
        backgroundCheck = nil
        if let refusal = OutputCheck.refusal(check, path: connection.path) { throw refusal }
        _ = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        for (table, columns) in ownColumnsLeftOut.sorted(by: { $0.key < $1.key }) {
            notes.append(
                "\(table) has columns the \(version.name) layout does not have (the app's own, or a later version's): \(columns.joined(separator: ", ")); Core Data mode writes "
                    + "the version's columns only, so their values are not in the new store — salvage without --catalog keeps every column")
        }
        if !metadataRecovered { notes.append("no readable Z_METADATA row: the store was stamped fresh for \"\(version.name)\" with a new UUID") }
        let metadata = SalvageReport.MetadataSummary(
            source: metadataRecovered ? "recovered" : "stamped", uuid: creation.uuid, frameworkVersion: creation.frameworkVersion,
            modelCache: modelCache == nil ? "empty" : "recovered", includesPersistentHistory: includesHistory)
        return SalvageOutputSummary(tables: results, metadata: metadata, notes: notes, tablesLeftOut: leftOut)
    }

    private var sqlite3Changes: Int32 { sqlite3_changes(connection.handle) }

    /// Per entity table, the objects written without a value for one of their entity's required
    /// (non-optional) attributes because the damaged store's table has no column for it
    /// (`absentColumns`): a `--version` newer than the store, or a damaged `CREATE TABLE`. Core
    /// Data validates required values when an object is saved, so such objects open but cannot
    /// be saved until each gets one. One read of each such table; none at all when every table
    /// had every column, the usual case (so a salvage of the store's own version pays nothing).
    ///
    /// For a table the damaged schema does not describe (page 1 lost, or the schema leaf that
    /// named it) nothing says which columns the store lacked: it is the version's own, and a row
    /// of an older version reads as a shorter record, NULL in the columns after its last. Every
    /// required attribute's column of such a table is counted (one read of each that has one;
    /// a lost schema is rare, and this is its cost).
    func requiredValuesMissing() throws -> [String: [SalvageReport.RequiredValueGap]] {
        var gaps: [String: [SalvageReport.RequiredValueGap]] = [:]
        let model = version.model
        for table in layout.tables where table.rootEntity != nil {
            let absent = absentColumns[table.name] ?? []
            let readAsTheVersions = tablesReadAsTheVersions.contains(table.name)
            guard readAsTheVersions || !absent.isEmpty else { continue }
            var wanted: [(entity: String, ent: Int, attribute: String, column: String)] = []
            for entity in model.entities where !entity.isAbstract && layout.table(ofEntity: entity.name, in: model)?.name == table.name {
                guard let ent = layout.entityNumber(of: entity.name) else { continue }
                // The census's rule for what is required (`migrate` and `match` ask it too).
                for case .attribute(let attribute) in RequiredValueCensus.requiredProperties(of: entity, in: model) {
                    guard let column = layout.propertyColumns[entity.name]?[attribute.name], readAsTheVersions || absent.contains(column) else { continue }
                    wanted.append((entity.name, ent, attribute.name, column))
                }
            }
            guard !wanted.isEmpty else { continue }
            let sums = wanted.map { "sum(Z_ENT = \($0.ent) AND \($0.column.quotedSQLIdentifier) IS NULL)" }.joined(separator: ", ")
            guard let row = try connection.rows("SELECT \(sums) FROM \(table.name.quotedSQLIdentifier)").first else { continue }
            for (index, item) in wanted.enumerated() {
                let objects = Int(row[index].int64 ?? 0)
                guard objects > 0 else { continue }
                gaps[table.name, default: []].append(
                    SalvageReport.RequiredValueGap(entity: item.entity, attribute: item.attribute, column: item.column, objects: objects))
            }
        }
        return gaps
    }

    /// Rows of a table at most this many are fixed one by one, by rowid (`changeEach`); past
    /// it, one statement over the whole table (`isDangling`) is quicker.
    static let maximumDanglingRowsFixedByKey = 1 << 13

    /// The rowids, in order, of `table`'s rows with a dangling value in one of `references`: from
    /// the candidates the ledger kept as rows went in (`KeyLedger`), else from one read of the
    /// reference columns (`knownDanglingRows`); nil when neither knows, or when there are more
    /// than `maximumDanglingRowsFixedByKey`.
    func danglingRowsByKey(in table: String, references: [LayoutReferences.Reference], nullDangles: Bool) throws -> [Int64]? {
        guard let rows = try writer.ledger?.danglingRows(of: references) ?? knownDanglingRows(in: table, references: references, nullDangles: nullDangles),
            rows.count <= Self.maximumDanglingRowsFixedByKey
        else { return nil }
        return rows
    }

    /// The rowids of `table`'s rows with a dangling value in one of `references` (all on
    /// `table`), from one read of the reference columns — a covering index's, when there is one:
    /// Core Data indexes every to-one column and each join table's key — with each value looked
    /// up in the keys the writer noted for its target (`RowPresence`), not in the target's
    /// b-tree. NULL dangles when `nullDangles` (a join row needs both ends).
    ///
    /// Nil when SQLite must answer instead (`isDangling`): a target table not tracked (a row went
    /// in with a key or entity that could not be kept, or its rows went back through SQLite
    /// after a unique index refused some), a value that is not an integer (`fits` lets none in;
    /// `isDangling` says how SQLite compares one), or more rows than
    /// `maximumDanglingRowsFixedByKey`.
    func knownDanglingRows(in table: String, references: [LayoutReferences.Reference], nullDangles: Bool) throws -> [Int64]? {
        var targets: [(presence: RowPresence, entities: [Int64]?)] = []
        for reference in references {
            guard let target = writer.ledger?.target(of: reference) else { return nil }
            targets.append(target)
        }
        let columns = references.map(\.column.quotedSQLIdentifier).joined(separator: ", ")
        let statement = try connection.prepare("SELECT \(columns), rowid FROM \(table.quotedSQLIdentifier)")
        let handle = statement.handle
        let rowidColumn = Int32(targets.count)
        var rows: [Int64] = []
        while try statement.step() {
            var dangles = false
            for (offset, target) in targets.enumerated() {
                switch sqlite3_column_type(handle, Int32(offset)) {
                case SQLITE_NULL: dangles = dangles || nullDangles
                case SQLITE_INTEGER:
                    dangles = dangles || !target.presence.contains(key: sqlite3_column_int64(handle, Int32(offset)), entities: target.entities)
                default: return nil
                }
            }
            guard dangles else { continue }
            rows.append(sqlite3_column_int64(handle, rowidColumn))
            if rows.count > Self.maximumDanglingRowsFixedByKey { return nil }
        }
        return rows.sorted()
    }

    /// Runs `sql` (one `?`, the rowid) for each of `rows`; returns the rows it changed.
    private func changeEach(_ rows: [Int64], _ sql: String) throws -> Int {
        guard !rows.isEmpty else { return 0 }
        let statement = try connection.prepare(sql)
        var changed = 0
        for rowid in rows {
            statement.reset()
            sqlite3_bind_int64(statement.handle, 1, rowid)
            _ = try statement.step()
            changed += Int(sqlite3Changes)
        }
        return changed
    }

    /// The condition on a row of `reference.table` whose `reference.column` names no row it may
    /// point to: a value, and no row of the target table with that `Z_PK` and one of the allowed
    /// `Z_ENT`s.
    ///
    /// `NOT IN` a list SQLite builds once from the target (read in file order), not a
    /// `NOT EXISTS` lookup per row, which jumps about a large target table (0.33 s against
    /// about 0.13 s for 150,000 orders pointing into 50,000 customers). The rows are the same:
    /// `IN` compares as `t.Z_PK = value` did (numeric text such as '5' equals 5 either way; a
    /// real equal to a key matches it). `EXCEPT` would not: it compares without conversion, and
    /// the '5' it keeps would then match the rows holding 5. `Z_PK` is never NULL, so `NOT IN`
    /// never yields NULL.
    ///
    /// When `everyTargetRowQualifies` (no row of the target table has another `Z_ENT`: the usual
    /// case, a reference to a hierarchy's root entity, or an entity without subentities), the
    /// `Z_ENT` test is left out: `NOT IN (SELECT Z_PK FROM target)` is then a lookup of each
    /// value in the table's own b-tree, with no list to build (on the benchmark store: 41 → 13 ms
    /// for 150,000 orders' customers, 41 → 19 ms for 120,000 join rows' orders). It compares as
    /// the list does (`DanglingReferenceTests` checks both forms against the per-row lookup).
    static func isDangling(_ reference: LayoutReferences.Reference, everyTargetRowQualifies: Bool = false) -> String {
        let column = reference.column.quotedSQLIdentifier
        let filter = everyTargetRowQualifies ? "" : " WHERE Z_ENT IN (\(reference.targetEntities.map(String.init).joined(separator: ",")))"
        return "(\(column) IS NOT NULL AND \(column) NOT IN (SELECT Z_PK FROM \(reference.targetTable.quotedSQLIdentifier)\(filter)))"
    }

    /// True when every row of `reference.targetTable` has one of `reference.targetEntities` (read
    /// from the table itself, not assumed: one indexed or sequential read of `Z_ENT`).
    static func everyRowQualifies(_ reference: LayoutReferences.Reference, connection: SQLiteConnection) throws -> Bool {
        let entities = reference.targetEntities.map(String.init).joined(separator: ",")
        let other = try connection.scalar("""
            SELECT EXISTS (SELECT 1 FROM \(reference.targetTable.quotedSQLIdentifier) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(entities)))
            """)
        return other?.int64 == 0
    }

    /// `Z_MAX` of each root entity: at least the largest `Z_PK` recovered in its table and the
    /// damaged store's own `Z_MAX`, so Core Data never hands out a key already used.
    private func updatePrimaryKeyMaxima(bookkeeping: BookkeepingRows) throws {
        let recovered = Dictionary(bookkeeping.primaryKeys.values.map { ($0.name, $0.max) }, uniquingKeysWith: { first, second in max(first, second) })
        let update = try connection.prepare("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?")
        for entity in layout.entityNumbers where entity.superEnt == 0 {
            let table = NumberedModel.tableName(ofRoot: entity.name).quotedSQLIdentifier
            let largest = try connection.scalar("SELECT max(Z_PK) FROM \(table)")?.int64 ?? 0
            update.reset()
            try update.bind([.integer(max(largest, recovered[entity.name] ?? 0, 0)), .integer(Int64(entity.ent))])
            _ = try update.step()
        }
    }

    /// Keeps the history tables (with their `Z_PRIMARYKEY` rows once they hold rows) when the
    /// store had them; drops provisional ones nothing shows the store had, each named in
    /// `leftOut` with why (the report lists them as skipped: they were read, but not written).
    /// Returns whether the store keeps them.
    private func settleHistory(bookkeeping: BookkeepingRows, notes: inout [String], leftOut: inout [String: String]) throws -> Bool {
        guard let history = layout.persistentHistory else { return false }
        let recovered = Dictionary(bookkeeping.primaryKeys.values.filter { $0.ent >= 16000 }.map { ($0.ent, $0.max) },
                                   uniquingKeysWith: { first, second in max(first, second) })
        // Entity number → largest Z_PK, for the history tables that hold rows.
        var largest: [Int64: Int64] = [:]
        for (table, entity) in zip(history.tables, history.entityNumbers) {
            if let value = try connection.scalar("SELECT max(Z_PK) FROM \(table.name.quotedSQLIdentifier)")?.int64 {
                largest[Int64(entity.ent)] = value
            }
        }
        if historyIsProvisional, recovered.isEmpty, largest.isEmpty {
            for table in history.tables {
                try connection.execute("DROP TABLE \(table.name.quotedSQLIdentifier)")
                leftOut[table.name.uppercased()] = "left out of the new store: persistent history, added because the damaged schema was "
                    + "unreadable, and dropped since no history row or Z_PRIMARYKEY entry showed the store had it"
            }
            notes.append("the damaged schema was unreadable and no history row was found: the store is written without history tables")
            return false
        }
        let insert = try connection.prepare("INSERT OR REPLACE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, 0, ?)")
        for entity in history.entityNumbers {
            let ent = Int64(entity.ent)
            guard recovered[ent] != nil || largest[ent] != nil else { continue }
            insert.reset()
            try insert.bind([.integer(ent), .text(entity.name), .integer(max(recovered[ent] ?? 0, largest[ent] ?? 0))])
            _ = try insert.step()
        }
        return true
    }
}
