/// The version a base database is at, read from its own layout: every row source a plain
/// column read, every link set a read of the place the layout keeps it.
extension VirtualVersion {
    /// - Parameters:
    ///   - schema: the base database's schema name in the connection that will run the SQL.
    ///   - physical: the base's actual tables and columns; a column the layout has and the base
    ///     lacks reads as NULL (only benign drift reaches a migration).
    ///   - primaryKeys: the base's `Z_PRIMARYKEY`, for each root's `Z_MAX`.
    static func base(
        version: CatalogVersion, layout: StoreLayout, schema: String, physical: PhysicalSchema, primaryKeys: [PrimaryKeyEntry]
    ) -> VirtualVersion {
        let model = version.model
        let alias = RowSource.alias
        var columnsByTable: [String: Set<String>] = [:]
        for table in physical.tables { columnsByTable[table.name.uppercased()] = Set(table.columns.map { $0.name.uppercased() }) }
        func has(_ table: String, _ column: String) -> Bool { columnsByTable[table.uppercased()]?.contains(column.uppercased()) ?? false }
        func read(_ table: String, _ column: String?) -> String? {
            guard let column, has(table, column) else { return nil }
            return SQLLiteral.column(column, of: alias)
        }

        var rowSources: [RowSource] = []
        var entityOfBaseNumber: [Int64: String] = [:]
        var ownColumns: [String: (carried: [OwnColumn], generated: [OwnColumn])] = [:]
        for table in layout.tables where table.rootEntity != nil {
            ownColumns[table.name] = Self.ownColumns(of: table, physical: physical)
        }
        var leftOut: [LeftOutOwnColumn] = []
        for number in layout.entityNumbers {
            guard let entity = model.entity(named: number.name), let table = layout.table(ofEntity: entity.name, in: model),
                columnsByTable[table.name.uppercased()] != nil
            else { continue }
            entityOfBaseNumber[Int64(number.ent)] = entity.name
            var attributes: [String: String] = [:]
            for property in ModelCorrespondence.persistentProperties(of: entity, in: model) {
                guard case .attribute(let attribute) = property else { continue }
                attributes[attribute.name] = read(table.name, layout.propertyColumns[entity.name]?[attribute.name]) ?? "NULL"
            }
            rowSources.append(RowSource(
                id: rowSources.count + 1, entity: entity.name, baseTable: table.name, from: SQLLiteral.table(table.name, in: schema),
                condition: "\(alias).Z_ENT = \(number.ent)", pk: "\(alias).Z_PK", opt: "\(alias).Z_OPT",
                baseEntityNumber: Int64(number.ent), attributes: attributes, createdFrom: nil,
                ownColumns: ownColumns[table.name]?.carried ?? []))
            for column in ownColumns[table.name]?.generated ?? [] {
                let source = rowSources[rowSources.count - 1]
                leftOut.append(LeftOutOwnColumn(column: column, reason: .generated, from: source.from, condition: source.condition))
            }
        }

        // A join table's own columns: the links are written again as pairs of keys (and
        // orders), with no place for them; left out and counted at the first hop (they were
        // dropped without a word).
        for table in layout.tables where table.rootEntity == nil {
            guard let stored = physical.table(named: table.name) else { continue }
            for column in Self.ownColumns(of: table, physical: physical).carried {
                leftOut.append(LeftOutOwnColumn(
                    column: column, reason: .joinTable(table: stored.name), from: SQLLiteral.table(stored.name, in: schema), condition: "1"))
            }
        }

        var version = VirtualVersion(
            version: version, layout: layout, baseSchema: schema, rowSources: rowSources, links: [],
            entityOfBaseNumber: entityOfBaseNumber, carriedMaximumKeys: [:], nondeterministicAttributes: [], leftOutOwnColumns: leftOut,
            ownIndexes: ownIndexes(layout: layout, physical: physical))
        for entry in primaryKeys where entry.superEnt == 0 && !entry.isHistoryEntity {
            if let name = entityOfBaseNumber[entry.ent] { version.carriedMaximumKeys[name] = entry.max }
        }

        for entity in model.entities {
            for relationship in entity.relationships where !relationship.isTransient {
                if model.ancestry(of: entity).dropFirst().contains(where: { $0.relationships.contains { $0.name == relationship.name } }) { continue }
                let end = LinkSet.End(entity: entity.name, relationship: relationship.name)
                guard let storage = layout.relationshipStorage[entity.name]?[relationship.name] else { continue }
                let inverse = Self.inverseEnd(of: relationship, in: model)
                if case .foreignKey(let column, let entityColumn, let orderColumn) = storage,
                    let index = version.links.firstIndex(where: { $0.b == end }),
                    let table = layout.table(ofEntity: entity.name, in: model), let value = read(table.name, column)
                {
                    // A one-to-one keeps a column on both sides: the second side only adds what its rows hold.
                    for source in version.rowSources(ofKind: entity.name) {
                        version.links[index].held[source.id] = LinkSet.Held(
                            side: .b, other: value, order: read(table.name, orderColumn), otherEntity: read(table.name, entityColumn))
                    }
                    continue
                }
                guard version.linkSet(for: end) == nil else { continue }
                switch storage {
                case .inverse:
                    continue  // built from the inverse's column
                case .foreignKey(let column, let entityColumn, let orderColumn):
                    guard let table = layout.table(ofEntity: entity.name, in: model), let value = read(table.name, column) else { continue }
                    let order = read(table.name, orderColumn)
                    let held = LinkSet.Held(side: .a, other: value, order: order, otherEntity: read(table.name, entityColumn))
                    let owners = version.rowSources(ofKind: entity.name)
                    let kinds = owners.compactMap(\.baseEntityNumber).map(String.init).joined(separator: ", ")
                    let query = """
                        SELECT \(alias).Z_PK AS a, \(value) AS b, NULL AS na, \(order ?? "NULL") AS nb \
                        FROM \(SQLLiteral.table(table.name, in: schema)) \(alias) \
                        WHERE \(alias).Z_ENT IN (\(kinds.isEmpty ? "NULL" : kinds)) AND \(value) IS NOT NULL
                        """
                    var set = LinkSet(a: end, b: inverse, query: query, held: [:], mayDangle: false)
                    for source in owners { set.held[source.id] = held }
                    version.links.append(set)
                case .joinTable(let table, let own, let other, let order, let inverseOrder):
                    guard has(table, own), has(table, other) else { continue }
                    let join = "j"
                    func joinRead(_ column: String?) -> String {
                        guard let column, has(table, column) else { return "NULL" }
                        return SQLLiteral.column(column, of: join)
                    }
                    let query = """
                        SELECT \(joinRead(own)) AS a, \(joinRead(other)) AS b, \(joinRead(order)) AS na, \(joinRead(inverseOrder)) AS nb \
                        FROM \(SQLLiteral.table(table, in: schema)) \(join)
                        """
                    version.links.append(LinkSet(a: end, b: inverse, query: query, held: [:], mayDangle: false))
                case .destinationColumn(let table, let column, let orderColumn):
                    guard let value = read(table, column) else { continue }
                    let order = read(table, orderColumn)
                    let targets = version.rowSources(ofKind: relationship.destinationEntityName)
                    let kinds = targets.compactMap(\.baseEntityNumber).map(String.init).joined(separator: ", ")
                    let query = """
                        SELECT \(value) AS a, \(alias).Z_PK AS b, \(order ?? "NULL") AS na, NULL AS nb \
                        FROM \(SQLLiteral.table(table, in: schema)) \(alias) \
                        WHERE \(alias).Z_ENT IN (\(kinds.isEmpty ? "NULL" : kinds)) AND \(value) IS NOT NULL
                        """
                    var set = LinkSet(a: end, b: nil, query: query, held: [:], mayDangle: false)
                    for target in targets { set.held[target.id] = LinkSet.Held(side: .b, other: value, order: order, otherEntity: nil) }
                    version.links.append(set)
                }
            }
        }
        return version
    }

    /// The inverse of `relationship`, by the entity that declares it.
    static func inverseEnd(of relationship: RelationshipDescription, in model: ManagedObjectModel) -> LinkSet.End? {
        guard let inverseName = relationship.inverseName, let destination = model.entity(named: relationship.destinationEntityName) else { return nil }
        for ancestor in model.ancestry(of: destination).reversed() {
            if let inverse = ancestor.relationships.first(where: { $0.name == inverseName }), !inverse.isTransient {
                return LinkSet.End(entity: ancestor.name, relationship: inverseName)
            }
        }
        return nil
    }

    /// The relationship at `end` in this version's model.
    func relationship(at end: LinkSet.End) -> RelationshipDescription? {
        version.model.entity(named: end.entity)?.relationships.first { $0.name == end.relationship }
    }
}
