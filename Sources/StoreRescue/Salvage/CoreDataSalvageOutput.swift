import Foundation

/// A Core Data store of one catalog version holding what was recovered, ready for `upgrade`.
///
/// The empty store is made by `StoreCreator` — the layout, bookkeeping rows and metadata `create`
/// writes — then filled: each recovered table's rows go into the version's table of the same
/// name, column by column name, `Z_PK` from the rowid; a row goes in only if every value's
/// storage class fits its column's declared type and its `Z_ENT` names an entity of the table.
/// Then the fix-ups Core Data relies on: dangling to-one values cleared, join rows with a missing
/// end dropped, `Z_MAX` at least the largest `Z_PK` of each hierarchy, the store's own model cache
/// kept when it is this version's.
///
/// Speed: the non-unique indexes `create` made are dropped while rows go in and recreated after,
/// with the same statements, in the same order (an index built once over sorted keys is cheaper
/// than one kept up to date row by row); unique indexes stay, so a row that breaks one is
/// refused as it arrives. A table whose rows are about to be copied page by page
/// (`SalvageBulkLoad`) gets its indexes back just before, while it is still empty: the load
/// builds their trees from the keys of the rows it copies, before any other row goes in. (Only
/// created, never dropped, once roots are read: in an auto-vacuum file, dropping an index moves
/// the last root page into its place; creating one moves no root.)
///
/// Metadata: the damaged store's UUID, framework version and app-defined keys are kept when its
/// `Z_METADATA` row was recovered; otherwise the store is stamped fresh (new UUID) and the report
/// says so.
final class CoreDataSalvageOutput: SalvageOutput {
    var flush: BackgroundFlush?
    let writer: SalvageRowWriter
    let version: CatalogVersion
    let layout: StoreLayout
    let connection: SQLiteConnection
    let creation: StoreCreationResult
    let metadataRecovered: Bool
    /// History tables were added because the store's schema could not be read: they are dropped
    /// again if nothing in the store shows it had them.
    let historyIsProvisional: Bool
    let looseTables: [String] = []
    /// Indexes dropped while loading (their table and `CREATE INDEX` statement), in creation
    /// order; those of a table loaded page by page are created again before its load
    /// (`pauseForBulkLoad`).
    private(set) var deferredIndexes: [(table: String, sql: String)]
    private(set) var bulkTargets: [Int: BulkTarget] = [:]
    /// The table of each bulk target.
    private var bulkTables: [Int: String] = [:]
    /// The version's references: checked as rows go in (`KeyLedger`), fixed in `finish`.
    let references: LayoutReferences
    /// SQLite's check of the pages the bulk load wrote, running while the rest is written
    /// (`resumeAfterBulkLoad`); nil when no table was loaded page by page (`finish` checks then).
    var backgroundCheck: OutputCheck?
    /// Stops the wait for `backgroundCheck` (SIGINT, SIGTERM).
    let cancellation: CancellationFlag?
    /// Columns of the version's tables that a recovered table of the same name lacks (table →
    /// column names): every row from it goes in with NULL there. `finish` looks among them for
    /// required attributes (`requiredValuesMissing`), so that a `--version` newer than the store
    /// does not leave objects Core Data will not save without a word.
    private(set) var absentColumns: [String: Set<String>] = [:]
    /// Tables the damaged schema does not describe (page 1 lost, or the schema leaf naming them):
    /// defined from the version's layout, so which columns the store lacked is unknown — an
    /// older row reads as a shorter record, NULL in the columns after its last. `finish` counts
    /// every required attribute of theirs (`requiredValuesMissing`).
    private(set) var tablesReadAsTheVersions: Set<String> = []
    /// An app's own columns of entity tables (table → the damaged schema's column names that
    /// the version's table lacks): Core Data mode writes the version's columns only, so their
    /// values are not in the new store. `finish` says so in a note (they used to go without a
    /// word); plain mode keeps them.
    private(set) var ownColumnsLeftOut: [String: [String]] = [:]

    private static let bookkeeping: [String: BookkeepingRows.Table] = [
        "Z_PRIMARYKEY": .primaryKey, "Z_METADATA": .metadata, "Z_MODELCACHE": .modelCache,
    ]

    /// - Parameters:
    ///   - layout: the version's layout, built with history tables when `includesHistory`.
    init(
        path: String, version: CatalogVersion, layout: StoreLayout, metadata: StoreMetadata?, historyIsProvisional: Bool,
        textEncoding: DatabaseGeometry.TextEncoding, cancellation: CancellationFlag?
    ) throws {
        self.cancellation = cancellation
        self.version = version
        self.layout = layout
        self.historyIsProvisional = historyIsProvisional
        var options = StoreCreationOptions(includesPersistentHistory: layout.persistentHistory != nil)
        if let metadata {
            options.storeUUID = metadata.uuid.flatMap(UUID.init(uuidString:))
            if let framework = metadata.frameworkVersion, (1...99_999).contains(framework) { options.frameworkVersion = Int(framework) }
            if let maximum = metadata.maximumFrameworkVersion, (1...99_999).contains(maximum) { options.maximumFrameworkVersion = Int(maximum) }
            options.additionalMetadata = metadata.plist
        }
        metadataRecovered = metadata != nil && options.storeUUID != nil
        // A store on the way (in salvage's workspace), not the command's result.
        creation = try StoreCreator.create(
            model: version.model, versionIdentifiers: version.versionIdentifiers, at: path, options: options, result: nil, faultInjection: nil)
        // A private file under construction: a crash discards it anyway, so no journal while
        // loading, and out of WAL mode so pages can be appended behind SQLite (`SalvageBulkLoad`);
        // WAL mode (Core Data's) is restored in `finish`.
        connection = try SQLiteConnection.openForBulkLoad(path: path)
        // SQLite's own work (set-aside rows, deferred indexes, fix-ups, its check) stops within
        // milliseconds of a cancellation, not at its end (up to a second on a 765 MB store).
        if let cancellation { connection.setProgressHandler { cancellation.isCancelled } }
        try connection.execute("PRAGMA cache_size = -8192; BEGIN")
        let indexes = try connection.rows(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND sql NOT LIKE 'CREATE UNIQUE%' ORDER BY rowid")
        for index in indexes {
            if let name = index[0].string { try connection.execute("DROP INDEX \(name.quotedSQLIdentifier)") }
        }
        deferredIndexes = indexes.compactMap { row in row[2].string.map { (row[1].string ?? "", $0) } }
        writer = SalvageRowWriter(connection: connection, textEncoding: textEncoding)
        references = try LayoutReferences(model: version.model, layout: layout)
        let entityTables = layout.tables.filter { $0.rootEntity != nil }
        writer.ledger = KeyLedger(
            entityTables: entityTables.map { ($0.name, entityNumbers(of: $0) ?? []) }, toOne: references.toOne, joinEnds: references.joinEnds)
    }

    var allTables: [StoreLayout.Table] { layout.tables + (layout.persistentHistory?.tables ?? []) }

    func role(for table: TableDefinition) throws -> TableRole {
        if let kind = Self.bookkeeping[table.name.uppercased()] { return .collect(kind) }
        if table.isSQLiteInternal { return .skip(reason: "SQLite's own table, not part of the version's layout (the new store's tables are laid out for the version)") }
        guard let target = allTables.first(where: { $0.name.uppercased() == table.name.uppercased() }) else {
            return .skip(reason: "not a table of version \"\(version.name)\"")
        }
        return .write(try route(from: table, into: target))
    }

    /// Values by column name; `Z_PK` from the rowid; what the source lacks is NULL.
    private func route(from source: TableDefinition, into target: StoreLayout.Table) throws -> RowRoute {
        if source.isDefinedByLayout { tablesReadAsTheVersions.insert(target.name) }
        var columns: [String] = []
        var sources: [RowRoute.ValueSource] = []
        var allowed: [UInt8] = []
        for column in target.columns {
            columns.append(column.name)
            allowed.append(Self.allowedClasses(column.type).reduce(0) { $0 | $1.bit })
            if target.primaryKey == [column.name] {
                sources.append(.rowid)
            } else if let index = source.columns.firstIndex(where: { $0.name.uppercased() == column.name.uppercased() }),
                index != source.rowidColumn
            {
                sources.append(.record(index: index, fallback: source.columns[index].defaultValue))
            } else {
                sources.append(.constant(.null))
                absentColumns[target.name, default: []].insert(column.name)
            }
        }
        if target.rootEntity != nil, !source.isDefinedByLayout {
            let own = source.columns.map(\.name).filter { name in !target.columns.contains { OwnColumn.isSameName($0.name, name) } }
            for name in own where !(ownColumnsLeftOut[target.name] ?? []).contains(where: { $0.hasSameBytes(as: name) }) {
                ownColumnsLeftOut[target.name, default: []].append(name)
            }
        }
        let entities = entityNumbers(of: target) ?? []
        let rules = RowRoute.CoreDataRules(
            allowedClasses: allowed, entityPosition: entities.isEmpty ? nil : columns.firstIndex(of: "Z_ENT"),
            entityNumbers: entities, soleEntity: entities.count == 1 ? entities.first : nil,
            // History tables keep Z_OPT NULL (every sample): only entity tables get it fixed.
            optimisticLockPosition: target.rootEntity == nil ? nil : columns.firstIndex(of: "Z_OPT"))
        // Join tables have no rowid column of their own: the rowid is kept anyway, so a copy of a
        // row found twice is known as such, and the rows are the damaged store's exactly.
        if target.primaryKey.count != 1 {
            columns.append("rowid")
            sources.append(.rowid)
            allowed.append(RecordColumn.StorageClass.integer.bit)
        }
        let rowid = target.primaryKey.count == 1 ? target.primaryKey[0] : "rowid"
        let index = try writer.addTarget(table: target.name, columns: columns, rowidColumn: rowid)
        // Records copy as they are only when their text is in the new store's encoding (UTF-8,
        // as `create` writes it); a UTF-16 store's rows go through SQLite, which converts them.
        if writer.textEncoding == .utf8, let empty = try Self.emptyTable(target.name, connection: connection),
            let positions = Self.bulkPositions(sources: sources, source: source, target: target)
        {
            bulkTargets[index] = BulkTarget.make(rootPage: empty.root, positions: positions, indexes: empty.indexes)
            bulkTables[index] = target.name
        }
        return RowRoute(target: index, sources: sources, rules: rules)
    }

    /// Column `j` of the version's table from column `j` of the damaged one, with the same
    /// affinity (or the rowid, or NULL); nil when the columns are not the same in the same order.
    private static func bulkPositions(sources: [RowRoute.ValueSource], source: TableDefinition, target: StoreLayout.Table) -> [BulkTarget.Position]? {
        var positions: [BulkTarget.Position] = []
        for index in target.columns.indices {
            switch sources[index] {
            case .rowid: positions.append(.rowid)
            case .constant(.null): positions.append(.null)
            case .record(let column, let fallback) where column == index:
                guard TableDefinition.affinity(of: source.columns[column].declaredType) == TableDefinition.affinity(of: target.columns[index].type)
                else { return nil }
                positions.append(.record(fallbackIsNull: fallback == .null))
            default: return nil
            }
        }
        return positions
    }

    /// Gives the tables about to be loaded their deferred indexes back (empty, as the tables
    /// are), then ends SQLite's transaction. A table whose index cannot be filled after the load
    /// (`BulkIndex.read`: none that `create` makes) takes no bulk load.
    func pauseForBulkLoad(targets: [Int]) throws {
        for target in targets {
            guard let table = bulkTables[target], deferredIndexes.contains(where: { $0.table == table }) else { continue }
            for index in deferredIndexes where index.table == table { try connection.execute(index.sql) }
            deferredIndexes.removeAll { $0.table == table }
            if let indexes = try BulkIndex.read(table: table, connection: connection) {
                bulkTargets[target]?.indexes = indexes
            } else {
                bulkTargets[target] = nil
            }
        }
        try connection.execute("COMMIT")
    }

    /// The last page salvage writes itself is in the file: from here SQLite writes the rest. The
    /// store goes back to WAL mode now (not in `finish`), and SQLite's check of the file as it
    /// stands begins on a thread of its own (`OutputCheck`), while this connection goes on
    /// writing into the `-wal`.
    func resumeAfterBulkLoad() throws {
        try enterWALMode()
        backgroundCheck = try OutputCheck(path: connection.path)
        try connection.execute("BEGIN")
    }

    func enterWALMode() throws {
        guard try connection.setJournalMode("WAL") == "wal" else {
            throw SalvageError.verificationFailed(path: connection.path, reason: "SQLite would not switch the new store back to WAL mode")
        }
    }

    /// Stops the check, if one runs (the salvage failed before it waited for it). When SQLite's
    /// own work met a damaged page of the new file first ("malformed"), the page is one salvage
    /// wrote — SQLite's own are sound — and the check, which reads them all, says which: its
    /// verdict is waited for and reported (exit 70, a bug) instead of SQLite's error, which
    /// would read as a write failure (exit 74, advising free space).
    func abandon(after error: any Error) -> any Error {
        defer {
            backgroundCheck?.stop()
            backgroundCheck = nil
        }
        guard let check = backgroundCheck, (error as? SQLiteError)?.isCorruption == true else { return error }
        backgroundCheck = nil
        guard let verdict = try? check.wait(cancellation: cancellation) else { return error }
        return OutputCheck.refusal(verdict, path: connection.path) ?? error
    }

    deinit { backgroundCheck?.stop() }

    /// Tables rows point at before the tables whose rows point at them (a cycle keeps the
    /// layout's order), join tables last: so that when a row comes in, the row its reference
    /// names is mostly there already, and the ledger keeps few candidates (`KeyLedger`: a table
    /// read before its target makes every value one, past its bound).
    func loadRank(ofTarget target: Int) -> Int {
        guard let table = bulkTables[target]?.uppercased() else { return Int.max }
        return loadOrder.firstIndex(of: table) ?? Int.max
    }

    /// The tables of the layout in `loadRank`'s order (upper-cased names).
    private lazy var loadOrder: [String] = {
        let edges = references.toOne.map { ($0.table.uppercased(), $0.targetTable.uppercased()) }.filter { $0.0 != $0.1 }
        var remaining = layout.tables.filter { $0.rootEntity != nil }.map { $0.name.uppercased() }
        var order: [String] = []
        while !remaining.isEmpty {
            // The first table whose targets are all placed; in a cycle, the first table left.
            let next = remaining.firstIndex { table in edges.allSatisfy { $0.0 != table || !remaining.contains($0.1) } } ?? 0
            order.append(remaining.remove(at: next))
        }
        return order + allTables.filter { $0.rootEntity == nil }.map { $0.name.uppercased() }
    }()

    /// `Z_ENT` values a table's rows may hold: its hierarchy's entities, or the history entity.
    func entityNumbers(of table: StoreLayout.Table) -> Set<Int64>? {
        if let root = table.rootEntity {
            let numbers = Dictionary(layout.entityNumbers.map { ($0.ent, $0) }, uniquingKeysWith: { first, _ in first })
            func rootName(_ entry: StoreLayout.EntityNumber) -> String {
                var current = entry
                for _ in 0..<numbers.count {
                    guard current.superEnt != 0, let parent = numbers[current.superEnt] else { break }
                    current = parent
                }
                return current.name
            }
            return Set(layout.entityNumbers.filter { rootName($0) == root }.map { Int64($0.ent) })
        }
        let history = layout.persistentHistory?.entityNumbers ?? []
        let names = ["ACHANGE": "CHANGE", "ATRANSACTION": "TRANSACTION", "ATRANSACTIONSTRING": "TRANSACTIONSTRING"]
        return names[table.name].flatMap { name in history.first { $0.name == name } }.map { [Int64($0.ent)] }
    }

    /// What Core Data stores in a column of each declared type. `BLOB` columns take anything:
    /// history tombstones (`ACHANGE.ZTOMBSTONE<n>`) keep deleted values of every type
    /// (RMAdminStore: text and integers).
    static func allowedClasses(_ declaredType: String) -> Set<RecordColumn.StorageClass> {
        switch declaredType.uppercased() {
        case "INTEGER": return [.null, .integer]
        case "FLOAT", "TIMESTAMP": return [.null, .integer, .real]
        case "DECIMAL": return [.null, .integer, .real, .text]
        case "VARCHAR": return [.null, .text]
        default: return [.null, .integer, .real, .text, .blob]
        }
    }

    func lostRoute(columnCount: Int) throws -> RowRoute? { nil }
    func deletedRoute(columnCount: Int) throws -> RowRoute? { nil }
}
