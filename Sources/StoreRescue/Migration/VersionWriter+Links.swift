/// Links whose place changed between the base and the version written: join tables, to-one
/// columns and hidden columns filled from the link sets, positions of ordered relationships,
/// and links to discarded objects cleared.
extension VersionWriter {
    /// `Z_PK IN (SELECT …)` over the rows of `entity`'s kind in the new file.
    private func existing(_ entity: String) -> String? {
        guard let table = layout.table(ofEntity: entity, in: model) else { return nil }
        let numbers = state.descendants(of: entity).compactMap { layout.entityNumber(of: $0) }.map(String.init).joined(separator: ", ")
        return "SELECT Z_PK FROM main.\(table.name.quotedSQLIdentifier) WHERE Z_ENT IN (\(numbers))"
    }

    func insertJoinRows(_ table: StoreLayout.Table, firstKeys: [Int: Int64], summary: inout Summary) throws {
        guard let (end, storage) = state.joinTableEnd(table.name), case .joinTable(_, let own, let other, let order, let inverseOrder) = storage,
            let (set, side) = state.linkSet(for: end), !set.isEmpty,
            let relationship = state.relationship(at: end), let thisRows = existing(end.entity),
            let otherRows = existing(relationship.destinationEntityName)
        else { return }
        let (this, that, thisOrder, thatOrder) = side == .a ? ("a", "b", "na", "nb") : ("b", "a", "nb", "na")
        let needsThis = side == .a ? set.needsOrderA : set.needsOrderB
        let needsThat = side == .a ? set.needsOrderB : set.needsOrderA
        var columns = [own, other]
        var values = ["this", "other"]
        if let order {
            columns.append(order)
            values.append(needsThis ? "row_number() OVER (PARTITION BY this ORDER BY other)" : "n_this")
        }
        if let inverseOrder {
            columns.append(inverseOrder)
            values.append(needsThat ? "row_number() OVER (PARTITION BY other ORDER BY this)" : "n_other")
        }
        let links = """
            SELECT DISTINCT \(this) AS this, \(that) AS other, \(thisOrder) AS n_this, \(thatOrder) AS n_other FROM (\(set.query)) \
            WHERE \(this) IS NOT NULL AND \(that) IS NOT NULL
            """
        let sql = """
            INSERT INTO main.\(table.name.quotedSQLIdentifier) (\(columns.map(\.quotedSQLIdentifier).joined(separator: ", "))) \
            SELECT \(values.joined(separator: ", ")) FROM (\(links)) WHERE this IN (\(thisRows)) AND other IN (\(otherRows))
            """
        try connection.execute(resolve(sql, firstKeys))
        let written = connection.changes
        summary.joinRows[table.name] = written
        let total = try connection.scalar("SELECT count(*) FROM (\(resolve(links, firstKeys)))")?.int64 ?? written
        if total > written { summary.clearedLinks[end.description, default: 0] += total - written }
    }

    func completeLinks(_ pending: PendingLinks, firstKeys: [Int: Int64]) throws {
        let grouped = Dictionary(grouping: pending.columns) { Key(table: $0.table, column: $0.column, end: $0.end, onOwnRows: $0.onOwnRows, role: $0.role) }
        // Keys first: entity numbers and positions are read from them.
        let ordered = grouped.keys.sorted { lhs, rhs in
            func rank(_ role: PendingLinks.Role) -> Int {
                switch role {
                case .key: return 0
                case .entity: return 1
                case .order: return 2
                }
            }
            return (rank(lhs.role), lhs.table, lhs.column) < (rank(rhs.role), rhs.table, rhs.column)
        }
        var linkTables: [String: String] = [:]
        for key in ordered {
            try checkCancellation()
            let numbers = Set((grouped[key] ?? []).flatMap(\.entityNumbers)).sorted().map(String.init).joined(separator: ", ")
            guard let (set, endSide) = state.linkSet(for: key.end) else { continue }
            let rowSide: LinkSet.Side = key.onOwnRows ? endSide : (endSide == .a ? .b : .a)
            let table = key.table.quotedSQLIdentifier
            let column = key.column.quotedSQLIdentifier
            guard let keyColumn = self.keyColumn(for: key) else { continue }
            switch key.role {
            case .key:
                let linkTable = try linkTable(for: set, rowSide: rowSide, firstKeys: firstKeys, cache: &linkTables)
                try connection.execute("""
                    UPDATE main.\(table) SET \(column) = (SELECT other FROM temp.\(linkTable) WHERE this = \(table).Z_PK) \
                    WHERE Z_ENT IN (\(numbers))
                    """)
            case .entity(let targetTable):
                try connection.execute("""
                    UPDATE main.\(table) SET \(column) = (SELECT t.Z_ENT FROM main.\(targetTable.quotedSQLIdentifier) t WHERE t.Z_PK = \(table).\(keyColumn.quotedSQLIdentifier)) \
                    WHERE Z_ENT IN (\(numbers)) AND \(keyColumn.quotedSQLIdentifier) IS NOT NULL
                    """)
            case .order:
                let needsNew = rowSide == .a ? set.needsOrderB : set.needsOrderA
                if needsNew {
                    let name = "storerescue_order_\(linkTables.count + 1)"
                    linkTables[name] = name
                    try connection.execute("""
                        CREATE TEMP TABLE \(name) (pk INTEGER PRIMARY KEY, n INTEGER); \
                        INSERT INTO temp.\(name) SELECT Z_PK, row_number() OVER (PARTITION BY \(keyColumn.quotedSQLIdentifier) ORDER BY Z_PK) \
                        FROM main.\(table) WHERE Z_ENT IN (\(numbers)) AND \(keyColumn.quotedSQLIdentifier) IS NOT NULL; \
                        UPDATE main.\(table) SET \(column) = (SELECT n FROM temp.\(name) WHERE pk = \(table).Z_PK) WHERE Z_ENT IN (\(numbers))
                        """)
                } else {
                    let linkTable = try linkTable(for: set, rowSide: rowSide, firstKeys: firstKeys, cache: &linkTables)
                    try connection.execute("""
                        UPDATE main.\(table) SET \(column) = (SELECT n FROM temp.\(linkTable) WHERE this = \(table).Z_PK) \
                        WHERE Z_ENT IN (\(numbers))
                        """)
                }
            }
        }
    }

    private struct Key: Hashable {
        var table: String
        var column: String
        var end: LinkSet.End
        var onOwnRows: Bool
        var role: PendingLinks.Role
    }

    /// The column of the same table holding the link's key, for an entity or order column.
    private func keyColumn(for key: Key) -> String? {
        if key.role == .key { return key.column }
        if key.onOwnRows {
            guard case .foreignKey(let column, _, _)? = layout.relationshipStorage[key.end.entity]?[key.end.relationship] else { return nil }
            return column
        }
        guard case .destinationColumn(_, let column, _)? = layout.relationshipStorage[key.end.entity]?[key.end.relationship] else { return nil }
        return column
    }

    /// A temporary table of (row key, linked key, position) for the rows on `rowSide`, made once.
    private func linkTable(for set: LinkSet, rowSide: LinkSet.Side, firstKeys: [Int: Int64], cache: inout [String: String]) throws -> String {
        let cacheKey = "\(set.a)|\(rowSide == .a ? "a" : "b")"
        if let name = cache[cacheKey] { return name }
        let name = "storerescue_link_\(cache.count + 1)"
        let (this, other, position) = rowSide == .a ? ("a", "b", "nb") : ("b", "a", "na")
        try connection.execute("""
            CREATE TEMP TABLE \(name) (this INTEGER PRIMARY KEY, other INTEGER, n INTEGER); \
            INSERT OR IGNORE INTO temp.\(name) SELECT \(this), \(other), \(position) FROM (\(resolve(set.query, firstKeys))) \
            WHERE \(this) IS NOT NULL AND \(other) IS NOT NULL
            """)
        cache[cacheKey] = name
        return name
    }

    /// Clears every to-one and hidden column whose value names no row of the destination's
    /// kind (an object a hop discarded, or a dangling value the store already had), counted;
    /// counts too the links held on rows that left the holding kind (no column to go to).
    func clearDanglingLinks(firstKeys: [Int: Int64], summary: inout Summary) throws {
        for (entity, relationships) in layout.relationshipStorage.sorted(by: { $0.key < $1.key }) {
            for (name, storage) in relationships.sorted(by: { $0.key < $1.key }) {
                guard let end = state.declaringEnd(name, of: entity), end.entity == entity, let relationship = state.relationship(at: end),
                    let targets = existing(relationship.destinationEntityName), let owners = existing(entity)
                else { continue }
                let numbers: (String) -> String = { kind in
                    state.descendants(of: kind).compactMap { layout.entityNumber(of: $0) }.map(String.init).joined(separator: ", ")
                }
                switch storage {
                case .foreignKey(let column, let entityColumn, let orderColumn):
                    guard let table = layout.table(ofEntity: entity, in: model) else { continue }
                    let clears = ([column] + [entityColumn, orderColumn].compactMap { $0 }).map { "\($0.quotedSQLIdentifier) = NULL" }
                    try connection.execute("""
                        UPDATE main.\(table.name.quotedSQLIdentifier) SET \(clears.joined(separator: ", ")) \
                        WHERE Z_ENT IN (\(numbers(entity))) AND \(column.quotedSQLIdentifier) IS NOT NULL AND \(column.quotedSQLIdentifier) NOT IN (\(targets))
                        """)
                    if connection.changes > 0 { summary.clearedLinks[end.description, default: 0] += connection.changes }
                    let left = try state.linksOnRowsThatLeft(end, onOwnRows: true, firstKeys: firstKeys, using: connection)
                    if left > 0 { summary.clearedLinks[end.description, default: 0] += left }
                case .destinationColumn(let table, let column, let orderColumn):
                    let clears = ([column] + [orderColumn].compactMap { $0 }).map { "\($0.quotedSQLIdentifier) = NULL" }
                    try connection.execute("""
                        UPDATE main.\(table.quotedSQLIdentifier) SET \(clears.joined(separator: ", ")) \
                        WHERE Z_ENT IN (\(numbers(relationship.destinationEntityName))) AND \(column.quotedSQLIdentifier) IS NOT NULL \
                        AND \(column.quotedSQLIdentifier) NOT IN (\(owners))
                        """)
                    if connection.changes > 0 { summary.clearedLinks[end.description, default: 0] += connection.changes }
                    let left = try state.linksOnRowsThatLeft(end, onOwnRows: false, firstKeys: firstKeys, using: connection)
                    if left > 0 { summary.clearedLinks[end.description, default: 0] += left }
                case .inverse, .joinTable:
                    continue
                }
            }
        }
    }
}
