/// A managed object model: the schema one version of an app declares, however it was read
/// (a store's model cache, a compiled `.mom`, an `.xcdatamodel` file, a catalog file).
///
/// Entities hold only the properties they declare; inherited ones are reached through
/// `allProperties(of:)`.
public struct ManagedObjectModel: Sendable, Equatable, Codable {
    public var entities: [EntityDescription]
    /// `NSStoreModelVersionIdentifiers` as the model declares them.
    public var versionIdentifiers: [String]

    public init(entities: [EntityDescription], versionIdentifiers: [String] = []) {
        self.entities = entities
        self.versionIdentifiers = versionIdentifiers
    }

    /// The entity named `name`, if the model has one.
    public func entity(named name: String) -> EntityDescription? {
        entities.first { $0.name == name }
    }

    /// The chain from `entity` up to its root: `[entity, parent, …, root]`. Stops at a cycle or a
    /// missing parent (a malformed model), so it always terminates.
    public func ancestry(of entity: EntityDescription) -> [EntityDescription] {
        var chain = [entity]
        var seen: Set<String> = [entity.name]
        var current = entity
        while let parentName = current.superentityName, let parent = self.entity(named: parentName),
            seen.insert(parent.name).inserted
        {
            chain.append(parent)
            current = parent
        }
        return chain
    }

    /// Every property of `entity`, inherited ones first (root's first), then its own.
    public func allProperties(of entity: EntityDescription) -> [PropertyDescription] {
        ancestry(of: entity).reversed().flatMap(\.properties)
    }

    /// The direct subentities of the entity named `name`, sorted by name.
    public func subentities(of name: String) -> [EntityDescription] {
        entities.filter { $0.superentityName == name }.sorted { $0.name < $1.name }
    }
}

/// One entity of a model.
public struct EntityDescription: Sendable, Equatable, Codable {
    public var name: String
    public var superentityName: String?
    public var isAbstract: Bool
    public var versionHashModifier: String?
    /// The renaming identifier (`elementID` in an `.xcdatamodel`).
    public var renamingIdentifier: String?
    public var className: String?
    /// The properties this entity declares itself (not inherited ones).
    public var properties: [PropertyDescription]
    /// Uniqueness constraints, each a list of property names.
    public var uniquenessConstraints: [[String]]
    public var fetchIndexes: [FetchIndexDescription]

    public init(
        name: String, superentityName: String? = nil, isAbstract: Bool = false,
        versionHashModifier: String? = nil, renamingIdentifier: String? = nil, className: String? = nil,
        properties: [PropertyDescription] = [], uniquenessConstraints: [[String]] = [],
        fetchIndexes: [FetchIndexDescription] = []
    ) {
        self.name = name
        self.superentityName = superentityName
        self.isAbstract = isAbstract
        self.versionHashModifier = versionHashModifier
        self.renamingIdentifier = renamingIdentifier
        self.className = className
        self.properties = properties
        self.uniquenessConstraints = uniquenessConstraints
        self.fetchIndexes = fetchIndexes
    }

    public var attributes: [AttributeDescription] {
        properties.compactMap { if case .attribute(let a) = $0 { return a } else { return nil } }
    }

    public var relationships: [RelationshipDescription] {
        properties.compactMap { if case .relationship(let r) = $0 { return r } else { return nil } }
    }
}

/// A property: an attribute or a relationship.
public enum PropertyDescription: Sendable, Hashable, Codable {
    case attribute(AttributeDescription)
    case relationship(RelationshipDescription)

    public var name: String {
        switch self {
        case .attribute(let a): return a.name
        case .relationship(let r): return r.name
        }
    }

    public var isTransient: Bool {
        switch self {
        case .attribute(let a): return a.isTransient
        case .relationship(let r): return r.isTransient
        }
    }
}

/// An attribute and every option that affects its hash, its column or its migration.
public struct AttributeDescription: Sendable, Hashable, Codable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    public var isTransient: Bool
    public var isReadOnly: Bool
    /// The default value as a string (`defaultValueString` in an `.xcdatamodel`), when declared.
    public var defaultValue: String?
    public var versionHashModifier: String?
    public var renamingIdentifier: String?
    public var allowsExternalBinaryDataStorage: Bool
    public var preservesValueInHistoryOnDeletion: Bool
    /// `NSIsIndexed`: the property gets its own `Z_<Entity>_<name>` index.
    public var isIndexed: Bool
    public var valueTransformerName: String?

    public init(
        name: String, type: AttributeType, isOptional: Bool = true, isTransient: Bool = false,
        isReadOnly: Bool = false, defaultValue: String? = nil, versionHashModifier: String? = nil,
        renamingIdentifier: String? = nil, allowsExternalBinaryDataStorage: Bool = false,
        preservesValueInHistoryOnDeletion: Bool = false, isIndexed: Bool = false,
        valueTransformerName: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.isReadOnly = isReadOnly
        self.defaultValue = defaultValue
        self.versionHashModifier = versionHashModifier
        self.renamingIdentifier = renamingIdentifier
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.isIndexed = isIndexed
        self.valueTransformerName = valueTransformerName
    }
}

/// How deleting the source object affects the destination objects of a relationship.
public enum DeleteRule: Int, Sendable, Hashable, Codable {
    case noAction = 0
    case nullify = 1
    case cascade = 2
    case deny = 3
}

/// A relationship and every option that affects its hash or its columns.
public struct RelationshipDescription: Sendable, Hashable, Codable {
    public var name: String
    public var destinationEntityName: String
    public var inverseName: String?
    public var minCount: Int
    /// 1 for a to-one; 0 for an unbounded to-many.
    public var maxCount: Int
    public var isToMany: Bool
    public var isOrdered: Bool
    public var isOptional: Bool
    public var isTransient: Bool
    public var isReadOnly: Bool
    public var deleteRule: DeleteRule
    public var versionHashModifier: String?
    public var renamingIdentifier: String?
    public var isIndexed: Bool

    public init(
        name: String, destinationEntityName: String, inverseName: String? = nil, minCount: Int = 0,
        maxCount: Int = 1, isToMany: Bool = false, isOrdered: Bool = false, isOptional: Bool = true,
        isTransient: Bool = false, isReadOnly: Bool = false, deleteRule: DeleteRule = .nullify,
        versionHashModifier: String? = nil, renamingIdentifier: String? = nil, isIndexed: Bool = false
    ) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.inverseName = inverseName
        self.minCount = minCount
        self.maxCount = maxCount
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.isReadOnly = isReadOnly
        self.deleteRule = deleteRule
        self.versionHashModifier = versionHashModifier
        self.renamingIdentifier = renamingIdentifier
        self.isIndexed = isIndexed
    }
}

/// A fetch index: a named, ordered list of elements (`Z_<Entity>_<name>` in the store).
public struct FetchIndexDescription: Sendable, Equatable, Codable {
    public struct Element: Sendable, Equatable, Codable {
        public var propertyName: String
        public var isAscending: Bool
        public init(propertyName: String, isAscending: Bool = true) {
            self.propertyName = propertyName
            self.isAscending = isAscending
        }
    }

    public var name: String
    public var elements: [Element]

    public init(name: String, elements: [Element]) {
        self.name = name
        self.elements = elements
    }
}
