/// A model checked for what a layout needs (unique names, plain identifiers, known superentities
/// and destinations, no inheritance cycle) with Core Data's entity numbers assigned.
struct NumberedModel {
    /// Entities in `Z_ENT` order (1, 2, …).
    let entities: [EntityDescription]
    /// Entity name → `Z_ENT`.
    let numbers: [String: Int]
    let byName: [String: EntityDescription]
    /// Entity name → its direct subentities' names, in numbering order.
    let subentityNames: [String: [String]]
    /// Entity name → its root entity's name.
    private let rootNames: [String: String]
    /// Entity name → property name → the nearest declaration it sees (`ModelHierarchy`), so a
    /// question about inheritance is a lookup, not a walk up the chain for every property.
    private let declarations: [String: [String: ModelHierarchy.PropertyLocation]]
    /// The model as given (the locations in `declarations` index its entities).
    private let source: ManagedObjectModel
    /// Root name → the to-many relationships without an inverse (not redeclarations) whose
    /// destination is stored in that root's table, in numbering order: each gets a hidden column
    /// there (`HierarchyTableBuilder`).
    let inverselessToManyByDestinationRoot: [String: [(source: EntityDescription, relationship: RelationshipDescription)]]

    init(_ model: ManagedObjectModel) throws {
        var byName: [String: EntityDescription] = [:]
        for entity in model.entities {
            try Self.checkIdentifier(entity.name, kind: "entity", entity: nil)
            guard byName.updateValue(entity, forKey: entity.name) == nil else {
                throw LayoutError.duplicateEntity(name: entity.name)
            }
            for property in entity.properties {
                try Self.checkIdentifier(property.name, kind: "property", entity: entity.name)
            }
            for index in entity.fetchIndexes {
                try Self.checkIdentifier(index.name, kind: "fetch index", entity: entity.name)
            }
        }
        var children: [String: [String]] = [:]
        var roots: [String] = []
        for entity in model.entities {
            if let parent = entity.superentityName {
                guard byName[parent] != nil else {
                    throw LayoutError.unknownSuperentity(entity: entity.name, superentity: parent)
                }
                children[parent, default: []].append(entity.name)
            } else {
                roots.append(entity.name)
            }
        }
        for key in children.keys { children[key]?.sort(by: Self.precedesInNumbering) }
        roots.sort(by: Self.precedesInNumbering)

        var ordered: [EntityDescription] = []
        var stack = roots.reversed().map { $0 }
        while let name = stack.popLast() {
            guard let entity = byName[name] else { continue }
            ordered.append(entity)
            stack.append(contentsOf: (children[name] ?? []).reversed())
        }
        if ordered.count != model.entities.count {
            let reached = Set(ordered.map(\.name))
            let looping = model.entities.map(\.name).filter { !reached.contains($0) }
            throw LayoutError.inheritanceCycle(entities: looping.sorted(by: Self.precedesInNumbering))
        }
        guard ordered.count < PersistentHistoryLayout.firstEntityNumber else {
            throw LayoutError.tooManyEntities(count: ordered.count)
        }
        var tableOwners: [String: String] = [:]
        for root in roots {
            let table = Self.tableName(ofRoot: root)
            if let other = tableOwners.updateValue(root, forKey: table) {
                throw LayoutError.tableNameClash(table: table, entities: ["entity \"\(other)\"", "entity \"\(root)\""])
            }
        }
        self.entities = ordered
        self.byName = byName
        self.subentityNames = children
        var numbers: [String: Int] = [:]
        for (offset, entity) in ordered.enumerated() { numbers[entity.name] = offset + 1 }
        self.numbers = numbers
        // Names are unique and the chains acyclic here (both checked above).
        let hierarchy = ModelHierarchy(model)
        var rootNames: [String: String] = [:]
        for index in hierarchy.parentsFirst {
            let name = model.entities[index].name
            rootNames[name] = hierarchy.parent[index].map { rootNames[model.entities[$0].name] ?? name } ?? name
        }
        self.rootNames = rootNames
        var declarations: [String: [String: ModelHierarchy.PropertyLocation]] = [:]
        for (index, table) in hierarchy.visibleProperties(in: model).enumerated() {
            declarations[model.entities[index].name] = table
        }
        self.declarations = declarations
        source = model
        var inverseless: [String: [(source: EntityDescription, relationship: RelationshipDescription)]] = [:]
        for source in ordered {
            for relationship in source.relationships
            where relationship.isToMany && !relationship.isTransient && relationship.inverseName == nil
                && source.superentityName.map({ declarations[$0]?[relationship.name] == nil }) ?? true
            {
                let destinationRoot = rootNames[relationship.destinationEntityName] ?? relationship.destinationEntityName
                inverseless[destinationRoot, default: []].append((source, relationship))
            }
        }
        inverselessToManyByDestinationRoot = inverseless
        try checkRelationships()
    }

    // MARK: Queries

    func number(of name: String) -> Int { numbers[name] ?? 0 }

    func hasSubentities(_ name: String) -> Bool { !(subentityNames[name] ?? []).isEmpty }

    /// The chain from the root down to `name`: `[root, …, name]`.
    func lineage(of name: String) -> [EntityDescription] {
        var chain: [EntityDescription] = []
        var current = byName[name]
        while let entity = current {
            chain.append(entity)
            current = entity.superentityName.flatMap { byName[$0] }
        }
        return chain.reversed()
    }

    func root(of name: String) -> String { rootNames[name] ?? name }

    /// `name` and every entity below it, in numbering order (a contiguous run of `entities`).
    func hierarchy(of name: String) -> [EntityDescription] {
        var result: [EntityDescription] = []
        var stack = [name]
        while let next = stack.popLast() {
            guard let entity = byName[next] else { continue }
            result.append(entity)
            stack.append(contentsOf: (subentityNames[next] ?? []).reversed())
        }
        return result
    }

    /// The entity in `name`'s lineage that declares `property` nearest to it (a subentity's
    /// redeclaration wins), with that declaration.
    func declaration(of property: String, in name: String) -> (entity: EntityDescription, property: PropertyDescription)? {
        guard let location = declarations[name]?[property] else { return nil }
        let declaring = source.entities[location.entity]
        return (declaring, declaring.properties[location.position])
    }

    /// The relationship named `name` as `entity` sees it (declared or inherited).
    func relationship(_ name: String, of entity: String) -> RelationshipDescription? {
        guard case .relationship(let relationship)? = declaration(of: name, in: entity)?.property else { return nil }
        return relationship
    }

    /// True when an ancestor of `entity` declares a property named `name` (so `entity`'s own
    /// declaration is a redeclaration and shares the ancestor's storage).
    func isRedeclaration(_ name: String, in entity: EntityDescription) -> Bool {
        guard let parent = entity.superentityName else { return false }
        return declarations[parent]?[name] != nil
    }

    // MARK: Rules

    /// Core Data's entity order: names compared case-insensitively (ASCII letters folded to lower
    /// case, then UTF-16 code units), ties broken by the exact names. Checked on every sample:
    /// `NetworkAttachment` (12) before `NWActivityFragment` (13) in netusage,
    /// `SyncableSettingsMetadata` (1) before `SyncFeatureEntity` (2) in SyncMetadata.
    static func precedesInNumbering(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.lowercased().utf16), right = Array(rhs.lowercased().utf16)
        if left != right { return left.lexicographicallyPrecedes(right) }
        return Array(lhs.utf16).lexicographicallyPrecedes(Array(rhs.utf16))
    }

    /// `Z` + the root entity's name in upper case.
    static func tableName(ofRoot name: String) -> String { "Z" + name.uppercased() }

    /// True for `[A-Za-z_][A-Za-z0-9_]*`: a name that can be written into SQL unquoted.
    static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }

    static func checkIdentifier(_ name: String, kind: String, entity: String?) throws {
        guard isPlainIdentifier(name) else { throw LayoutError.invalidName(kind: kind, name: name, entity: entity) }
    }

    private func checkRelationships() throws {
        for entity in entities {
            for relationship in entity.relationships {
                guard byName[relationship.destinationEntityName] != nil else {
                    throw LayoutError.unknownDestination(
                        entity: entity.name, relationship: relationship.name, destination: relationship.destinationEntityName)
                }
                guard let inverse = relationship.inverseName else { continue }
                guard self.relationship(inverse, of: relationship.destinationEntityName) != nil else {
                    throw LayoutError.unknownInverse(
                        entity: entity.name, relationship: relationship.name,
                        destination: relationship.destinationEntityName, inverse: inverse)
                }
            }
        }
    }
}
