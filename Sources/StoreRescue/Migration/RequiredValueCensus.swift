/// The objects of a store that have no value for a required attribute or relationship, per
/// entity and property, counted against one version's model and layout, with the rows per
/// entity the same scan counts.
///
/// The final check takes it of the written store; taken of the store as it was read (at the
/// source version) it tells which of those gaps the store already had: Core Data validates
/// required values only when an object is saved, so a store can hold such objects on disk, and
/// a migration carries them as they are (`MigrationVerifier`).
struct RequiredValueCensus: Sendable, Equatable {
    /// Objects of one entity without a value for one of its required properties.
    struct Gap: Sendable, Equatable {
        var entity: String
        var property: String
        var kind: PropertyKind
        var objects: Int64
    }

    enum PropertyKind: String, Sendable {
        case attribute, relationship
    }

    /// Rows whose `Z_ENT` names no entity of their table's hierarchy.
    struct StrayRows: Sendable, Equatable {
        var table: String
        var entityNumber: Int64?
    }

    /// Rows per entity (its own rows, not its subentities').
    var rowsByEntity: [String: Int64]
    /// Only properties some object lacks, attributes table by table, then relationships.
    var gaps: [Gap]
    var strayRows: [StrayRows]

    /// Counts in the database `connection` opened (schema `main`).
    ///
    /// - Parameters:
    ///   - physical: the database's tables when they may lack what the layout has (the store as
    ///     read): a property stored in a missing table or column is not counted. Nil for a store
    ///     written from the layout.
    ///   - linksMustReachAnObject: count a link only when it names an existing object of the
    ///     destination (a dangling link is no value: the migration clears it). The written store
    ///     has none (the final check counts them apart), so it need not pay for the lookup.
    static func take(
        connection: SQLiteConnection, model: ManagedObjectModel, layout: StoreLayout, physical: PhysicalSchema?, linksMustReachAnObject: Bool
    ) throws -> RequiredValueCensus {
        let isStored = storedIn(physical)
        func has(_ table: String, _ columns: [String] = []) -> Bool { isStored(table, columns) }

        var census = RequiredValueCensus(rowsByEntity: [:], gaps: [], strayRows: [])
        // Rows and required attributes: one scan per table (rows per Z_ENT, NULLs per column).
        for table in layout.tables where table.rootEntity != nil && has(table.name) {
            var required: [(entity: String, ent: Int, property: String, column: String)] = []
            for entity in model.entities where !entity.isAbstract && layout.table(ofEntity: entity.name, in: model)?.name == table.name {
                guard let ent = layout.entityNumber(of: entity.name) else { continue }
                for case .attribute(let attribute) in requiredProperties(of: entity, in: model) {
                    if let column = layout.propertyColumns[entity.name]?[attribute.name], has(table.name, [column]) {
                        required.append((entity.name, ent, attribute.name, column))
                    }
                }
            }
            let nullCounts = required.map { "sum(Z_ENT = \($0.ent) AND \($0.column.quotedSQLIdentifier) IS NULL)" }
            let scan = try connection.rows(
                "SELECT Z_ENT, count(*)\(nullCounts.map { ", " + $0 }.joined()) FROM \(table.name.quotedSQLIdentifier) GROUP BY Z_ENT",
                maximumRows: 100_000)
            var nulls = Array(repeating: Int64(0), count: required.count)
            for row in scan {
                if let ent = row[0].int64, let name = layout.entityNumbers.first(where: { Int64($0.ent) == ent })?.name {
                    census.rowsByEntity[name] = row[1].int64 ?? 0
                } else {
                    census.strayRows.append(StrayRows(table: table.name, entityNumber: row[0].int64))
                }
                for index in required.indices { nulls[index] += row[index + 2].int64 ?? 0 }
            }
            for (index, item) in required.enumerated() where nulls[index] > 0 {
                census.gaps.append(Gap(entity: item.entity, property: item.property, kind: .attribute, objects: nulls[index]))
            }
        }

        // Required relationships: objects with no link at all.
        for entity in model.entities where !entity.isAbstract {
            guard let table = layout.table(ofEntity: entity.name, in: model)?.name, let ent = layout.entityNumber(of: entity.name),
                (census.rowsByEntity[entity.name] ?? 0) > 0
            else { continue }
            for case .relationship(let relationship) in requiredProperties(of: entity, in: model) {
                guard let linked = linkedKeys(
                    entity: entity.name, relationship: relationship, layout: layout, model: model, isStored: has, mustReachAnObject: linksMustReachAnObject)
                else { continue }
                let count = try connection.scalar("SELECT count(*) FROM \(table.quotedSQLIdentifier) WHERE Z_ENT = \(ent) AND Z_PK NOT IN (\(linked))")?.int64 ?? 0
                if count > 0 { census.gaps.append(Gap(entity: entity.name, property: relationship.name, kind: .relationship, objects: count)) }
            }
        }
        for entity in model.entities where census.rowsByEntity[entity.name] == nil { census.rowsByEntity[entity.name] = 0 }
        return census
    }

    /// Whether a table, and those of its columns, are in the database `physical` describes (any
    /// is, when nil: a store written from the layout).
    static func storedIn(_ physical: PhysicalSchema?) -> (_ table: String, _ columns: [String]) -> Bool {
        let columnsByTable = physical.map { schema in
            Dictionary(schema.tables.map { ($0.name.uppercased(), Set($0.columns.map { $0.name.uppercased() })) }, uniquingKeysWith: { first, _ in first })
        }
        return { table, columns in
            guard let columnsByTable else { return true }
            guard let present = columnsByTable[table.uppercased()] else { return false }
            return columns.allSatisfy { present.contains($0.uppercased()) }
        }
    }

    /// The properties the census counts for `entity`: its persistent ones (inherited included)
    /// that are not optional. The one rule: `migrate --dry-run`'s forecast asks it too.
    static func requiredProperties(of entity: EntityDescription, in model: ManagedObjectModel) -> [PropertyDescription] {
        ModelCorrespondence.persistentProperties(of: entity, in: model).filter { property in
            switch property {
            case .attribute(let attribute): !attribute.isOptional
            case .relationship(let relationship): !relationship.isOptional
            }
        }
    }

    /// The condition that the `entity` object in row `alias` of its table has no value for its
    /// required `property` (the census's own test, object by object), reading links in the
    /// database attached as `schema`; nil when the layout keeps the property nowhere `isStored`
    /// finds.
    static func lackingCondition(
        entity: String, property: String, kind: PropertyKind, alias: String, schema: String, layout: StoreLayout, model: ManagedObjectModel,
        isStored: (String, [String]) -> Bool, mustReachAnObject: Bool
    ) -> String? {
        guard let description = model.entity(named: entity), let table = layout.table(ofEntity: entity, in: model)?.name else { return nil }
        let declared = ModelCorrespondence.persistentProperties(of: description, in: model)
        switch kind {
        case .attribute:
            guard declared.contains(where: { if case .attribute(let attribute) = $0 { attribute.name == property } else { false } }),
                let column = layout.propertyColumns[entity]?[property], isStored(table, [column])
            else { return nil }
            return SQLLiteral.column(column, of: alias) + " IS NULL"
        case .relationship:
            let relationship = declared.lazy.compactMap { if case .relationship(let relationship) = $0, relationship.name == property { relationship } else { nil } }.first
            guard let relationship, let linked = linkedKeys(
                entity: entity, relationship: relationship, layout: layout, model: model, isStored: isStored, mustReachAnObject: mustReachAnObject,
                schema: schema)
            else { return nil }
            return "\(alias).Z_PK NOT IN (\(linked))"
        }
    }

    /// `SELECT` of the keys of `entity` objects that have at least one link through
    /// `relationship` (with `mustReachAnObject`, to an existing object of its destination), from
    /// the database attached as `schema`; nil when the layout keeps it nowhere `isStored` finds.
    static func linkedKeys(
        entity: String, relationship: RelationshipDescription, layout: StoreLayout, model: ManagedObjectModel,
        isStored: (String, [String]) -> Bool, mustReachAnObject: Bool, schema: String = "main"
    ) -> String? {
        guard let storage = layout.relationshipStorage[entity]?[relationship.name], let table = layout.table(ofEntity: entity, in: model)?.name else { return nil }
        let destination = relationship.destinationEntityName
        let targetTable = layout.table(ofEntity: destination, in: model)?.name
        let kinds = entityAndSubentities(destination, in: model).compactMap { layout.entityNumber(of: $0) }.map(String.init).joined(separator: ", ")
        let ofDestination = " AND Z_ENT IN (\(kinds.isEmpty ? "NULL" : kinds))"
        // Only asked when links must reach an object (where the destination has no table, none does).
        let targets = targetTable.map { "SELECT Z_PK FROM \(SQLLiteral.table($0, in: schema)) WHERE 1" + ofDestination } ?? "SELECT NULL WHERE 0"
        switch storage {
        case .foreignKey(let column, _, _):
            guard isStored(table, [column]) else { return nil }
            let c = column.quotedSQLIdentifier
            return "SELECT Z_PK FROM \(SQLLiteral.table(table, in: schema)) WHERE \(c) IS NOT NULL" + (mustReachAnObject ? " AND \(c) IN (\(targets))" : "")
        case .inverse:
            guard let inverse = relationship.inverseName, case .foreignKey(let column, _, _)? = layout.relationshipStorage[destination]?[inverse],
                let targetTable, isStored(targetTable, [column])
            else { return nil }
            let c = column.quotedSQLIdentifier
            return "SELECT \(c) FROM \(SQLLiteral.table(targetTable, in: schema)) WHERE \(c) IS NOT NULL" + (mustReachAnObject ? ofDestination : "")
        case .joinTable(let join, let own, let other, _, _):
            guard isStored(join, [own, other]) else { return nil }
            return "SELECT \(own.quotedSQLIdentifier) FROM \(SQLLiteral.table(join, in: schema))"
                + (mustReachAnObject ? " WHERE \(other.quotedSQLIdentifier) IN (\(targets))" : "")
        case .destinationColumn(let hidden, let column, _):
            guard isStored(hidden, [column]) else { return nil }
            let c = column.quotedSQLIdentifier
            return "SELECT \(c) FROM \(SQLLiteral.table(hidden, in: schema)) WHERE \(c) IS NOT NULL" + (mustReachAnObject ? ofDestination : "")
        }
    }

    /// `entity` and every entity below it (each once, whatever a malformed model's parents say).
    static func entityAndSubentities(_ entity: String, in model: ManagedObjectModel) -> [String] {
        var result = [entity]
        var index = 0
        while index < result.count {
            for child in model.subentities(of: result[index]) where !result.contains(child.name) { result.append(child.name) }
            index += 1
        }
        return result
    }
}
