/// Lays out the one table that holds an inheritance hierarchy: `Z_PK`, `Z_ENT`, `Z_OPT`, then a
/// column for every stored attribute and to-one relationship of every entity in it, plus the
/// hidden columns of to-many relationships without an inverse that point into it.
///
/// Column order (checked, position by position, on every sample with a model cache): storage
/// groups first — integers and booleans with every relationship column; dates, doubles and
/// floats; decimals; strings; URIs; UUIDs; binary data and transformables — then, inside a
/// group, entities in numbering order, attributes before relationships, names in code-point
/// order. A to-one's `Z<n>_` and `Z_FOK_` columns follow it.
///
/// Names: `Z` + the property name in upper case; a name already taken in the table by another
/// entity of the hierarchy (a sibling declaring the same property name) gets the first free
/// numeric suffix, entities taking names in numbering order (`ZPASSCODE`, `ZPASSCODE1`,
/// `ZPASSCODE2` in RMAdminStore's `ZCOREORGANIZATIONSETTINGS`). A subentity redeclaring an
/// inherited property shares the ancestor's column.
struct HierarchyTableBuilder {
    struct Result {
        var table: StoreLayout.Table
        var foreignKeyIndexes: [StoreLayout.Index]
        var entityColumnIndex: StoreLayout.Index?
        /// Entity name → property name → column, for every entity of the hierarchy (inherited
        /// properties included): attributes and to-one relationships.
        var columnsByEntity: [String: [String: String]]
        /// Entity name → relationship → storage for the to-one relationships of the hierarchy's
        /// entities (inherited included), and for the to-many relationships without an inverse
        /// (of any entity) whose hidden column is in this table.
        var relationshipStorage: [String: [String: StoreLayout.RelationshipStorage]]
    }

    /// One column before sorting, with the key that puts it in Core Data's place.
    private struct Candidate {
        var group: Int
        var entityIndex: Int
        /// 0 attribute, 1 relationship, 2 hidden to-many column.
        var kind: Int
        var name: String
        /// 0 the column itself, 1 its `Z<n>_` column, 2 its `Z_FOK_` column.
        var companion: Int
        var column: StoreLayout.Column
        var isForeignKey: Bool

        func precedes(_ other: Candidate) -> Bool {
            if group != other.group { return group < other.group }
            if entityIndex != other.entityIndex { return entityIndex < other.entityIndex }
            if kind != other.kind { return kind < other.kind }
            if name != other.name { return name.utf8.lexicographicallyPrecedes(other.name.utf8) }
            return companion < other.companion
        }
    }

    let model: NumberedModel
    let root: EntityDescription

    private static let fixedColumns = [
        StoreLayout.Column(name: "Z_PK", type: "INTEGER"), StoreLayout.Column(name: "Z_ENT", type: "INTEGER"),
        StoreLayout.Column(name: "Z_OPT", type: "INTEGER"),
    ]

    func build() throws -> Result {
        let tableName = NumberedModel.tableName(ofRoot: root.name)
        let hierarchy = model.hierarchy(of: root.name)
        var taken = Set(Self.fixedColumns.map(\.name))
        var candidates: [Candidate] = []
        var columnsByEntity: [String: [String: String]] = [:]
        var storage: [String: [String: StoreLayout.RelationshipStorage]] = [:]

        for (entityIndex, entity) in hierarchy.enumerated() {
            var columns = entity.superentityName.flatMap { columnsByEntity[$0] } ?? [:]
            var relationshipStorage = entity.superentityName.flatMap { storage[$0] } ?? [:]
            let attributes = entity.attributes.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            for attribute in attributes where !attribute.isTransient {
                if model.isRedeclaration(attribute.name, in: entity), columns[attribute.name] != nil { continue }
                guard let group = Self.storageGroup(of: attribute.type) else {
                    throw LayoutError.unsupportedAttributeType(
                        entity: entity.name, property: attribute.name, type: attribute.type.modelFileName)
                }
                let name = Self.claim("Z" + attribute.name.uppercased(), in: &taken)
                columns[attribute.name] = name
                candidates.append(Candidate(
                    group: group, entityIndex: entityIndex, kind: 0, name: attribute.name, companion: 0,
                    column: StoreLayout.Column(name: name, type: attribute.type.columnType), isForeignKey: false))
            }
            let relationships = entity.relationships.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            for relationship in relationships where !relationship.isTransient && !relationship.isToMany {
                if model.isRedeclaration(relationship.name, in: entity), columns[relationship.name] != nil { continue }
                let name = Self.claim("Z" + relationship.name.uppercased(), in: &taken)
                columns[relationship.name] = name
                let base = Candidate(
                    group: 0, entityIndex: entityIndex, kind: 1, name: relationship.name, companion: 0,
                    column: StoreLayout.Column(name: name, type: "INTEGER"), isForeignKey: true)
                candidates.append(base)
                let destination = relationship.destinationEntityName
                var entityColumnName: String?
                var orderColumnName: String?
                if model.hasSubentities(destination) {
                    var entColumn = base
                    entColumn.companion = 1
                    entColumn.isForeignKey = false
                    entColumn.column.name = Self.claim("Z\(model.number(of: destination))_" + name.dropFirst(), in: &taken)
                    entityColumnName = entColumn.column.name
                    candidates.append(entColumn)
                }
                if let inverseName = relationship.inverseName,
                    let inverse = model.relationship(inverseName, of: destination),
                    inverse.isToMany, inverse.isOrdered, !inverse.isTransient
                {
                    var orderColumn = base
                    orderColumn.companion = 2
                    orderColumn.isForeignKey = false
                    orderColumn.column.name = Self.claim("Z_FOK_" + name.dropFirst(), in: &taken)
                    orderColumnName = orderColumn.column.name
                    candidates.append(orderColumn)
                }
                relationshipStorage[relationship.name] = .foreignKey(
                    column: name, entityColumn: entityColumnName, inverseOrderColumn: orderColumnName)
            }
            // A to-many whose inverse is a to-one is kept by the inverse's column.
            for relationship in entity.relationships where !relationship.isTransient && relationship.isToMany {
                let inverse = relationship.inverseName.flatMap { model.relationship($0, of: relationship.destinationEntityName) }
                if let inverse, !inverse.isToMany, !inverse.isTransient { relationshipStorage[relationship.name] = .inverse }
            }
            columnsByEntity[entity.name] = columns
            storage[entity.name] = relationshipStorage
        }
        candidates += hiddenColumns(hierarchy: hierarchy, taken: &taken, storage: &storage)

        candidates.sort { $0.precedes($1) }
        let table = StoreLayout.Table(
            name: tableName, columns: Self.fixedColumns + candidates.map(\.column), primaryKey: ["Z_PK"],
            rootEntity: root.name)
        let foreignKeys = candidates.filter(\.isForeignKey).map { candidate in
            StoreLayout.Index(
                name: "\(tableName)_\(candidate.column.name)_INDEX", table: tableName, columns: [candidate.column.name],
                isUnique: false)
        }
        let entIndex = hierarchy.count > 1
            ? StoreLayout.Index(name: "\(tableName)_Z_ENT_INDEX", table: tableName, columns: ["Z_ENT"], isUnique: false)
            : nil
        return Result(
            table: table, foreignKeyIndexes: foreignKeys, entityColumnIndex: entIndex, columnsByEntity: columnsByEntity,
            relationshipStorage: storage)
    }

    /// `Z<n><REL>` (n: the source entity's number) for each to-many relationship without an
    /// inverse whose destination is stored in this table (CartKit: `Z3ITEMS`, `Z2MODIFIERS`),
    /// plus `Z_FOK_<n><REL>` when it is ordered (no sample has one).
    private func hiddenColumns(
        hierarchy: [EntityDescription], taken: inout Set<String>, storage: inout [String: [String: StoreLayout.RelationshipStorage]]
    ) -> [Candidate] {
        let tableName = NumberedModel.tableName(ofRoot: root.name)
        let members = Dictionary(uniqueKeysWithValues: hierarchy.enumerated().map { ($1.name, $0) })
        var result: [Candidate] = []
        for (source, relationship) in model.inverselessToManyByDestinationRoot[root.name] ?? [] {
            guard let entityIndex = members[relationship.destinationEntityName] else { continue }
            let base = "Z\(model.number(of: source.name))" + relationship.name.uppercased()
            let name = Self.claim(base, in: &taken)
            let candidate = Candidate(
                group: 0, entityIndex: entityIndex, kind: 2, name: name, companion: 0,
                column: StoreLayout.Column(name: name, type: "INTEGER"), isForeignKey: true)
            result.append(candidate)
            var orderColumnName: String?
            if relationship.isOrdered {
                var order = candidate
                order.companion = 2
                order.isForeignKey = false
                order.column.name = Self.claim("Z_FOK_" + name.dropFirst(), in: &taken)
                orderColumnName = order.column.name
                result.append(order)
            }
            storage[source.name, default: [:]][relationship.name] = .destinationColumn(
                table: tableName, column: name, orderColumn: orderColumnName)
        }
        return result
    }

    /// `base` if free in the table, else `base1`, `base2`, … (the first free one); marks it taken.
    static func claim(_ base: String, in taken: inout Set<String>) -> String {
        if taken.insert(base).inserted { return base }
        var suffix = 1
        while !taken.insert("\(base)\(suffix)").inserted { suffix += 1 }
        return "\(base)\(suffix)"
    }

    /// The storage group that orders columns; nil for a type with no column of its own.
    static func storageGroup(of type: AttributeType) -> Int? {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return 0
        case .date, .double, .float: return 1
        case .decimal: return 2
        case .string: return 3
        case .uri: return 4
        case .uuid: return 5
        case .binaryData, .transformable: return 6
        case .undefined, .objectID, .composite: return nil
        }
    }
}
