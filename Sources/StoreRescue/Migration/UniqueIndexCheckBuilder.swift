/// The uniqueness checks a hop needs, one per unique index the destination's layout writes.
///
/// Core Data keeps a hierarchy in one table, and a constraint's `UNIQUE INDEX` is on that
/// table's columns (`Z_Dog_UNIQUE_name ON ZANIMAL (ZNAME)`, `Docs/LAYOUT.md`), so it holds the
/// values of every object whose entity stores a property in those columns: the declaring
/// entity's subentities, and — for a constraint declared on a subentity over an inherited
/// attribute — its siblings too. The check compares exactly those objects, as the written index
/// will (a review's dry runs checked the declaring entity's own objects, or skipped a new
/// abstract parent's constraint, and the runs then stopped on "UNIQUE constraint failed").
///
/// An index needs no check when the source store already held the same values under a unique
/// index of its own: every object it will hold comes from one source table whose unique index
/// is over the columns those values came from, copied unchanged, and no `create` step adds any.
/// For the hop that reads the store itself, that index must be one the store has, not only one
/// its version lays out: a store that lost it (drift `match` calls blocking) may hold shared
/// values (review cases c7, c9: the check was left out, and the run stopped on the index).
enum UniqueIndexCheckBuilder {
    /// The change a kept constraint's check names when the values are unchanged but its index
    /// holds objects no one unique index held together before.
    static let newlyTogether = "its unique index now holds objects whose values no one unique index held before"

    /// How the change a kept constraint's check names begins when the values are unchanged but
    /// the store lacks the unique index its version declares over them.
    static let storeLacksPrefix = "the store lacks "

    /// A unique index as `storeUniqueIndexes` names it: its table and its columns, sorted, in
    /// upper case (SQLite's names are case-insensitive).
    static func key(table: String, columns: [String]) -> [String] {
        [table.uppercased()] + columns.map { $0.uppercased() }.sorted()
    }

    /// The unique indexes of a store that enforce uniqueness as Core Data's do, as `key` names them.
    static func enforcedUniqueIndexes(of schema: PhysicalSchema?) -> Set<[String]> {
        guard let schema else { return [] }
        return Set(schema.indexes.filter { $0.isUnique && SchemaComparison.enforcesPlainUniqueness($0, in: schema) }.map { key(table: $0.table, columns: $0.columns) })
    }

    /// `Z_Item_UNIQUE_code on ZITEM (ZCODE)`.
    static func describe(_ index: StoreLayout.Index) -> String {
        "\(index.name) on \(index.table) (\(index.columns.joined(separator: ", ")))"
    }

    /// - Parameter storeUniqueIndexes: for the hop that reads the store itself, the unique indexes
    ///   it has (`enforcedUniqueIndexes`); nil where the hop's source is a version the migrator
    ///   wrote or checked, whose layout's unique indexes hold.
    static func checks(
        source: ManagedObjectModel, sourceLayout: StoreLayout, destination: ManagedObjectModel, destinationLayout: StoreLayout,
        correspondence: ModelCorrespondence, entities: [EntityMapping], creations: [Creation], sourceVersion: String = "the source version",
        storeUniqueIndexes: Set<[String]>? = nil
    ) -> [DataCheck] {
        var checks: [DataCheck] = []
        var seen: Set<[String]> = []
        for number in destinationLayout.entityNumbers {
            guard let entity = destination.entity(named: number.name),
                let table = destinationLayout.table(ofEntity: entity.name, in: destination)?.name
            else { continue }
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                guard let columns = optionalMap(constraint, { destinationLayout.propertyColumns[entity.name]?[$0] }) else { continue }
                // The same columns constrained twice (redeclared on a subentity) are one question.
                guard seen.insert([table] + columns.sorted()).inserted else { continue }
                let covered = coveredEntities(table: table, columns: columns, layout: destinationLayout, model: destination)
                let filled = covered.filter { name, _ in
                    entities.contains { $0.name == name && $0.source != nil } || creations.contains { $0.entity == name }
                }
                guard !filled.isEmpty else { continue }
                var changes: [String] = []
                var lacking: String?
                if let sourceIndex = alreadyUniqueIndex(filled, sourceLayout: sourceLayout, source: source, entities: entities, creations: creations) {
                    guard let storeUniqueIndexes, !storeUniqueIndexes.contains(key(table: sourceIndex.table, columns: sourceIndex.columns)) else { continue }
                    lacking = storeLacksPrefix + "\(sourceVersion)'s unique index \(describe(sourceIndex)), so nothing kept the values apart"
                }
                for name in filled.keys.sorted() {
                    guard let mapping = entities.first(where: { $0.name == name }) else { continue }
                    for property in filled[name, default: []] {
                        guard let attribute = mapping.attributes.first(where: { $0.name == property }) else { continue }
                        // An inherited attribute changes alike in every subentity: said once, of
                        // the entity declaring it (a `map` is one entity's, and says so).
                        var owner = name
                        if case .expression = attribute.value {} else { owner = declaringEntity(of: property, in: name, model: destination) }
                        if let change = valueChange(of: attribute, in: owner), !changes.contains(change) { changes.append(change) }
                    }
                }
                if let lacking {
                    // Kept, over unchanged values the store's own index should have kept apart.
                    changes = [lacking]
                } else if changes.isEmpty {
                    // Kept, over unchanged values, but the index now holds objects no unique index
                    // held together before (moved into the table, or from another column).
                    changes = [newlyTogether]
                }
                let isNew = !declaredAtSource(constraint, of: entity, source: source, correspondence: correspondence)
                checks.append(.duplicates(entity: entity.name, properties: constraint, valueChanges: isNew ? [] : changes, covered: covered))
            }
        }
        return checks
    }

    /// Every entity of `table` that stores a property in each of `columns` (its objects' values
    /// are in the index; any other object has NULL there, which a unique index lets repeat),
    /// with those properties in the order of `columns`.
    static func coveredEntities(table: String, columns: [String], layout: StoreLayout, model: ManagedObjectModel) -> [String: [String]] {
        var covered: [String: [String]] = [:]
        for number in layout.entityNumbers {
            guard layout.table(ofEntity: number.name, in: model)?.name == table, let byProperty = layout.propertyColumns[number.name] else { continue }
            let properties = columns.compactMap { column in byProperty.first { $0.value == column }?.key }
            if properties.count == columns.count { covered[number.name] = properties }
        }
        return covered
    }

    /// The source version's uniqueness constraints whose unique index the store lacks, as checks
    /// of the store's own values (`valueChanges`: the index, described): before a hop whose
    /// steps run on the store's version, the run writes that version out with its unique
    /// indexes, which shared values stop (review case c9: "breaks a constraint of V1").
    static func unenforcedInStore(source: ManagedObjectModel, sourceLayout: StoreLayout, storeUniqueIndexes: Set<[String]>) -> [DataCheck] {
        var checks: [DataCheck] = []
        var seen: Set<[String]> = []
        for number in sourceLayout.entityNumbers {
            guard let entity = source.entity(named: number.name), let table = sourceLayout.table(ofEntity: entity.name, in: source)?.name else { continue }
            for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                guard let columns = optionalMap(constraint, { sourceLayout.propertyColumns[entity.name]?[$0] }),
                    seen.insert(key(table: table, columns: columns)).inserted,
                    let index = sourceLayout.indexes.first(where: { $0.isUnique && key(table: $0.table, columns: $0.columns) == key(table: table, columns: columns) }),
                    !storeUniqueIndexes.contains(key(table: table, columns: columns))
                else { continue }
                checks.append(.duplicates(
                    entity: entity.name, properties: constraint, valueChanges: [describe(index)],
                    covered: coveredEntities(table: table, columns: columns, layout: sourceLayout, model: source)))
            }
        }
        return checks
    }

    /// The source table's unique index when every object the index will hold comes, with its
    /// values unchanged, from that one table and that index was over the columns they were read
    /// from; nil otherwise.
    private static func alreadyUniqueIndex(
        _ filled: [String: [String]], sourceLayout: StoreLayout, source: ManagedObjectModel, entities: [EntityMapping], creations: [Creation]
    ) -> StoreLayout.Index? {
        var sourceKeys: Set<[String]> = []
        for (name, properties) in filled {
            guard !creations.contains(where: { $0.entity == name }), let mapping = entities.first(where: { $0.name == name }),
                let sourceEntity = mapping.source, let sourceTable = sourceLayout.table(ofEntity: sourceEntity, in: source)?.name
            else { return nil }
            var sourceColumns: [String] = []
            for property in properties {
                guard let attribute = mapping.attributes.first(where: { $0.name == property }), valueChange(of: attribute, in: name) == nil,
                    case .copy(let from, _) = attribute.value, let column = sourceLayout.propertyColumns[sourceEntity]?[from]
                else { return nil }
                sourceColumns.append(column)
            }
            sourceKeys.insert([sourceTable] + sourceColumns.sorted())
        }
        guard sourceKeys.count == 1, let key = sourceKeys.first else { return nil }
        return sourceLayout.indexes.first { $0.isUnique && [$0.table] + $0.columns.sorted() == key }
    }

    /// True when the source declared the constraint on the entity's source or an ancestor of it
    /// (properties matched by renaming identifier): the destination keeps it.
    private static func declaredAtSource(
        _ constraint: [String], of entity: EntityDescription, source: ManagedObjectModel, correspondence: ModelCorrespondence
    ) -> Bool {
        guard let sourceEntity = correspondence.sourceEntity(of: entity.name) else { return false }
        let sources = correspondence.propertySources(of: entity, from: sourceEntity)
        let declared = Set(source.ancestry(of: sourceEntity).flatMap(\.uniquenessConstraints).map { constraint in
            constraint.map { name in sources.first { $0.value.name == name }?.key ?? "?" + name }.sorted()
        })
        return declared.contains(constraint.sorted())
    }

    /// The entity that declares `property` as `entity` sees it (itself or an ancestor).
    private static func declaringEntity(of property: String, in entity: String, model: ManagedObjectModel) -> String {
        guard let description = model.entity(named: entity) else { return entity }
        return model.ancestry(of: description).reversed().first { $0.attributes.contains { $0.name == property } }?.name ?? entity
    }

    /// How the hop may make an attribute's existing values equal, in words; nil when it copies
    /// them unchanged.
    static func valueChange(of attribute: AttributeMapping, in entity: String) -> String? {
        let name = "\(entity).\(attribute.name)"
        switch attribute.value {
        case .copy(_, let typeChange) where typeChange != .none:
            return "\(name) becomes \(attribute.type.modelFileName)"
        case .expression(_, let jsonPath):
            return "\(name) is computed by the custom stage (\(jsonPath))"
        case .defaultValue(let value):
            return "\(name) is added with the default \(SQLLiteral.value(value)) for every object"
        case .copy, .null, .missing:
            return attribute.nullReplacement.map { "\(name)'s NULLs take the default \(SQLLiteral.value($0))" }
        }
    }

    private static func optionalMap<T>(_ items: [String], _ transform: (String) -> T?) -> [T]? {
        var result: [T] = []
        for item in items {
            guard let value = transform(item) else { return nil }
            result.append(value)
        }
        return result
    }
}
