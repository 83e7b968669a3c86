import Foundation

/// Writes one version's objects and links (a `VirtualVersion`) into a new, empty database file,
/// laid out exactly as that version: every table with `INSERT … SELECT` from the base (one pass
/// per table, whatever the number of hops composed into the expressions), then the links that
/// changed place, the bookkeeping rows, the history and other tables, and finally the indexes.
///
/// The connection's `main` database is the new file; the base is attached under
/// `state.baseSchema`. Nothing else is touched.
struct VersionWriter {
    let connection: SQLiteConnection
    let state: VirtualVersion
    /// The base's tables, for the history and non-Core-Data tables it carries over.
    let basePhysical: PhysicalSchema
    let basePrimaryKeys: [PrimaryKeyEntry]
    /// `Z_METADATA` to write, and `Z_MODELCACHE`'s content when known.
    let metadata: StoreMetadata
    let modelCache: Data?
    /// Polled between statements; a running statement is interrupted through the connection.
    let cancellation: CancellationFlag?

    /// What was written.
    struct Summary: Sendable, Equatable {
        /// Rows written per destination entity.
        var rowsByEntity: [String: Int64] = [:]
        /// Links cleared because the object at the other end was discarded, per relationship.
        var clearedLinks: [String: Int64] = [:]
        /// Join-table rows written, per table.
        var joinRows: [String: Int64] = [:]
        /// History change rows dropped because their entity no longer exists.
        var droppedHistoryChanges: Int64 = 0
        /// Tables Core Data does not write that were carried over, and those left out.
        var carriedTables: [String] = []
        var leftOutTables: [String] = []
        /// An app's own columns of entity tables carried over (`ZENTRY.ZAPPNOTE`, named at the
        /// target), with their values.
        var carriedColumns: [String] = []
        /// Indexes of the base this version does not lay out: carried (`OwnIndex`, an app's
        /// own table's), and left out with why.
        var carriedIndexes: [MigrationAnalysis.CarriedIndex] = []
        var leftOutIndexes: [MigrationAnalysis.LeftOutIndex] = []
    }

    var alias: String { RowSource.alias }
    var layout: StoreLayout { state.layout }
    var model: ManagedObjectModel { state.version.model }

    func write() throws -> Summary {
        var summary = Summary()
        try createTables()
        let ownColumns = state.ownColumnsByTable()
        try addOwnColumns(ownColumns, summary: &summary)
        let firstKeys = try state.firstFreeKeys(using: connection)
        var pending = PendingLinks()
        for table in layout.tables where table.rootEntity != nil {
            try checkCancellation()
            try insertRows(of: table, ownColumns: ownColumns[table.name] ?? [], firstKeys: firstKeys, pending: &pending, summary: &summary)
        }
        for table in layout.tables where table.rootEntity == nil {
            try checkCancellation()
            try insertJoinRows(table, firstKeys: firstKeys, summary: &summary)
        }
        try completeLinks(pending, firstKeys: firstKeys)
        try clearDanglingLinks(firstKeys: firstKeys, summary: &summary)
        try writePrimaryKeys()
        if layout.persistentHistory != nil { try copyHistory(summary: &summary) }
        try copyOtherTables(summary: &summary)
        try checkCancellation()
        for statement in layout.indexes.map(\.createStatement) + (layout.persistentHistory?.indexes.map(\.createStatement) ?? []) {
            try connection.execute(statement)
        }
        // The app's own indexes of its own columns, once the rows are in (as the layout's).
        let carriage = try state.indexCarriage(physical: basePhysical)
        for (report, statement) in carriage.carried {
            try connection.execute(statement)
            summary.carriedIndexes.append(report)
        }
        summary.leftOutIndexes += carriage.leftOut
        try writeBookkeepingRows()
        return summary
    }

    func checkCancellation() throws {
        if cancellation?.isCancelled == true { throw CancellationError() }
    }

    private func createTables() throws {
        var statements = layout.tables.map(\.createStatement)
        statements += layout.persistentHistory?.tables.map(\.createStatement) ?? []
        statements += StoreLayout.bookkeepingStatements
        for statement in statements { try connection.execute(statement) }
    }

    /// An app's own columns, added to the tables their rows go to as nullable columns of their
    /// declared type (or none): the name quoted, nothing else of the store's definition taken.
    private func addOwnColumns(_ columns: [String: [OwnColumn]], summary: inout Summary) throws {
        for table in layout.tables {
            for column in columns[table.name] ?? [] {
                let type = column.type.map { $0.isEmpty ? "" : " " + $0 } ?? ""
                try connection.execute("ALTER TABLE main.\(table.name.quotedSQLIdentifier) ADD COLUMN \(column.name.quotedSQLIdentifier)\(type)")
                summary.carriedColumns.append(table.name + "." + column.name)
            }
        }
    }

    /// `sql` with every first-key token replaced by its value (see `VirtualVersion.resolve`).
    func resolve(_ sql: String, _ firstKeys: [Int: Int64]) -> String { VirtualVersion.resolve(sql, firstKeys) }

    // MARK: - Rows

    /// Links a row source does not hold itself, filled once every table has its rows.
    struct PendingLinks {
        struct Column: Hashable {
            var table: String
            var column: String
            /// The end whose links fill it, and whether the column is on the end's own rows
            /// (a to-one) or on the other side's (a hidden to-many column).
            var end: LinkSet.End
            var onOwnRows: Bool
            var role: Role
            /// The `Z_ENT`s of the rows the column is filled on.
            var entityNumbers: [Int]
        }

        enum Role: Hashable {
            case key
            case entity(targetTable: String)
            case order
        }

        var columns: [Column] = []
    }

    private func insertRows(
        of table: StoreLayout.Table, ownColumns: [OwnColumn], firstKeys: [Int: Int64], pending: inout PendingLinks, summary: inout Summary
    ) throws {
        guard let root = table.rootEntity else { return }
        let members = Set(state.descendants(of: root))
        let sources = state.rowSources.filter { members.contains($0.entity) }
        let columns = table.columns.dropFirst(3).map(\.name)
        let roles = columnRoles(table: table, members: members)
        var queued: Set<PendingLinks.Column> = []
        // Row sources reading plain rows of one base table are written by one statement.
        var groups: [[RowSource]] = []
        for source in sources {
            if source.createdFrom == nil, source.baseEntityNumber != nil,
                let index = groups.firstIndex(where: { $0[0].createdFrom == nil && $0[0].from == source.from && $0[0].baseEntityNumber != nil })
            {
                groups[index].append(source)
            } else {
                groups.append([source])
            }
        }
        for group in groups {
            var values: [String] = []
            for column in columns {
                var expressions: [String] = []
                for source in group {
                    let (expression, missing) = valueExpression(column: column, roles: roles[column] ?? [:], source: source, table: table.name)
                    expressions.append(expression)
                    if let missing { queued.insert(missing) }
                }
                values.append(combine(expressions, group: group))
            }
            for column in ownColumns {
                let expressions = group.map { source in
                    source.ownColumns.first { OwnColumn.isSameName($0.name, column.name) }?.expression ?? "NULL"
                }
                values.append(combine(expressions, group: group))
            }
            let entityNumber = combine(group.map { String(layout.entityNumber(of: $0.entity) ?? 0) }, group: group)
            let condition = group.count == 1
                ? group[0].condition
                : "\(alias).Z_ENT IN (\(group.compactMap(\.baseEntityNumber).map(String.init).joined(separator: ", ")))"
            let names = (["Z_PK", "Z_ENT", "Z_OPT"] + columns + ownColumns.map(\.name)).map(\.quotedSQLIdentifier).joined(separator: ", ")
            let sql = """
                INSERT INTO main.\(table.name.quotedSQLIdentifier) (\(names)) \
                SELECT \(([group[0].pk, entityNumber, group[0].opt] + values).joined(separator: ", ")) \
                FROM \(group[0].from) \(alias) WHERE \(condition)
                """
            try connection.execute(resolve(sql, firstKeys))
            if group.count == 1 {
                summary.rowsByEntity[group[0].entity, default: 0] += connection.changes
            } else {
                let numbers = group.compactMap { layout.entityNumber(of: $0.entity) }.map(String.init).joined(separator: ", ")
                for row in try connection.rows(
                    "SELECT Z_ENT, count(*) FROM main.\(table.name.quotedSQLIdentifier) WHERE Z_ENT IN (\(numbers)) GROUP BY Z_ENT")
                {
                    if let ent = row[0].int64, let name = layout.entityNumbers.first(where: { Int64($0.ent) == ent })?.name {
                        summary.rowsByEntity[name, default: 0] += row[1].int64 ?? 0
                    }
                }
            }
        }
        pending.columns += queued.sorted { ($0.table, $0.column) < ($1.table, $1.column) }
    }

    /// One expression per row source of a group: the same one for all, or a `CASE` on `Z_ENT`.
    private func combine(_ expressions: [String], group: [RowSource]) -> String {
        guard let first = expressions.first else { return "NULL" }
        if expressions.allSatisfy({ $0 == first }) { return first }
        let cases = zip(group, expressions).map { "WHEN \($0.baseEntityNumber ?? -1) THEN \($1)" }.joined(separator: " ")
        return "CASE \(alias).Z_ENT \(cases) END"
    }

    /// What a column of an entity table holds, for each entity of the hierarchy.
    enum ColumnRole {
        case attribute(String)
        case foreignKey(end: LinkSet.End, role: PendingLinks.Role)
        case hidden(end: LinkSet.End, role: PendingLinks.Role)
    }

    private func columnRoles(table: StoreLayout.Table, members: Set<String>) -> [String: [String: ColumnRole]] {
        var roles: [String: [String: ColumnRole]] = [:]
        for entity in members {
            for (attribute, column) in layout.propertyColumns[entity] ?? [:] {
                if let description = model.entity(named: entity), case .attribute? = model.allProperties(of: description).last(where: { $0.name == attribute }) {
                    roles[column, default: [:]][entity] = .attribute(attribute)
                }
            }
            for (relationship, storage) in layout.relationshipStorage[entity] ?? [:] {
                guard case .foreignKey(let column, let entityColumn, let orderColumn) = storage, let end = state.declaringEnd(relationship, of: entity) else { continue }
                roles[column, default: [:]][entity] = .foreignKey(end: end, role: .key)
                if let entityColumn, let target = targetTable(of: end) { roles[entityColumn, default: [:]][entity] = .foreignKey(end: end, role: .entity(targetTable: target)) }
                if let orderColumn { roles[orderColumn, default: [:]][entity] = .foreignKey(end: end, role: .order) }
            }
        }
        // Hidden columns: a to-many with no inverse keeps the owner's key on the destination's rows.
        for (owner, relationships) in layout.relationshipStorage {
            for (relationship, storage) in relationships {
                guard case .destinationColumn(let tableName, let column, let orderColumn) = storage, tableName == table.name,
                    let end = state.declaringEnd(relationship, of: owner), end.entity == owner
                else { continue }
                for entity in members {
                    roles[column, default: [:]][entity] = .hidden(end: end, role: .key)
                    if let orderColumn { roles[orderColumn, default: [:]][entity] = .hidden(end: end, role: .order) }
                }
            }
        }
        return roles
    }

    /// The SQL for `column` on the rows of `source`, and the pending fill when the row source
    /// does not hold the value itself.
    private func valueExpression(
        column: String, roles: [String: ColumnRole], source: RowSource, table: String
    ) -> (String, PendingLinks.Column?) {
        guard let role = roles[source.entity] else { return ("NULL", nil) }
        let entityNumbers = [layout.entityNumber(of: source.entity) ?? 0]
        switch role {
        case .attribute(let name):
            return (source.attributes[name] ?? "NULL", nil)
        case .foreignKey(let end, let linkRole), .hidden(let end, let linkRole):
            let onOwnRows: Bool
            if case .foreignKey = role { onOwnRows = true } else { onOwnRows = false }
            guard let (set, endSide) = state.linkSet(for: end) else { return ("NULL", nil) }
            // The side the row is on: its own end for a to-one, the other end for a hidden column.
            let rowSide: LinkSet.Side = onOwnRows ? endSide : (endSide == .a ? .b : .a)
            let pendingFill = PendingLinks.Column(
                table: table, column: column, end: end, onOwnRows: onOwnRows, role: linkRole, entityNumbers: entityNumbers)
            guard let held = set.held[source.id], held.side == rowSide else {
                if set.isEmpty { return ("NULL", nil) }
                return ("NULL", pendingFill)
            }
            switch linkRole {
            case .key:
                return (held.other, nil)
            case .entity:
                guard let otherEntity = held.otherEntity else { return ("NULL", pendingFill) }
                let cases = state.entityOfBaseNumber.sorted { $0.key < $1.key }.compactMap { base, name in
                    layout.entityNumber(of: name).map { "WHEN \(base) THEN \($0)" }
                }
                return (cases.isEmpty ? "NULL" : "CASE \(otherEntity) \(cases.joined(separator: " ")) END", nil)
            case .order:
                let needsNew = rowSide == .a ? set.needsOrderB : set.needsOrderA
                if needsNew { return ("NULL", pendingFill) }
                return (held.order ?? "NULL", held.order == nil ? pendingFill : nil)
            }
        }
    }

    /// The table of the destination of the relationship at `end`.
    func targetTable(of end: LinkSet.End) -> String? {
        guard let relationship = state.relationship(at: end) else { return nil }
        return layout.table(ofEntity: relationship.destinationEntityName, in: model)?.name
    }
}
