/// What one hop does to every entity, attribute and relationship: Core Data's inferred mapping
/// from the hop's source version to its destination version (`migration-semantics.md` §2),
/// with a custom stage's `map` and `create` on top. Built from the two models alone
/// (`HopMappingBuilder`); the data decides the rest (`MigrationAnalyzer`).
public struct HopMapping: Sendable {
    public var hop: MigrationHop
    /// One per destination entity, in destination numbering order.
    public var entities: [EntityMapping]
    /// Source entities no destination entity maps from: their rows are discarded.
    public var removedEntities: [RemovedEntity]
    /// Objects a custom stage's `create` adds.
    public var creations: [Creation]
    /// What the inferred mapping cannot do, found from the models alone (the data may add more).
    public var refusals: [MigrationRefusal]
    /// Questions only the data answers (rows that need a value, values that must convert…).
    var checks: [DataCheck]
    /// For the hop that reads the store itself: its version's uniqueness constraints whose
    /// unique index the store lacks (`.duplicates`, `valueChanges` the index described). They
    /// matter when steps run before this hop's copy: the run then writes the store's version
    /// out, with those indexes (`MigrationAnalyzer`).
    var storeChecks: [DataCheck] = []

    public func entity(named name: String) -> EntityMapping? { entities.first { $0.name == name } }
}

/// One destination entity and where its objects come from.
public struct EntityMapping: Sendable {
    public var name: String
    /// The source entity its objects come from; nil for a new entity (no objects).
    public var source: String?
    public var isAbstract: Bool
    /// `Z_ENT` in the source and destination numbering.
    public var sourceNumber: Int?
    public var destinationNumber: Int
    /// The tables holding its rows before and after (they differ when the hierarchy changes).
    public var sourceTable: String?
    public var destinationTable: String
    public var attributes: [AttributeMapping]
    public var relationships: [RelationshipMapping]
    /// Source attributes and relationships with no destination counterpart.
    public var removedAttributes: [String]
    public var removedRelationships: [String]
    /// An attribute removed and one of the same type added, with no renaming identifier
    /// linking them: probably a rename that will lose the values.
    public var likelyRenames: [LikelyRename]

    public var isRenamed: Bool { source != nil && source != name }
    public var movesTable: Bool { source != nil && sourceTable != destinationTable }
}

/// Where one destination attribute's value comes from.
public struct AttributeMapping: Sendable {
    public enum Value: Sendable, Equatable {
        /// The source attribute's value, converted when the type changes.
        case copy(from: String, typeChange: TypeChange)
        /// A custom stage's `map` expression, over the source object's attributes.
        case expression(String, jsonPath: String)
        /// The destination's default (a new attribute with a default).
        case defaultValue(SQLiteValue)
        /// NULL (a new optional attribute without a default).
        case null
        /// A new required attribute with no default and no `map`: every existing row lacks a
        /// value (134110 when the entity has rows).
        case missing
    }

    public var name: String
    public var type: AttributeType
    public var isRequired: Bool
    public var value: Value
    /// The destination's default, written where the value is NULL (optional → required, or a
    /// required attribute whose source rows hold NULLs).
    public var nullReplacement: SQLiteValue?
    /// The destination's default, whatever the value's origin: what an object a custom stage's
    /// `create` step makes gets where the step does not set the attribute (the writer and the
    /// plan both read it here).
    public var defaultValue: SQLiteValue?
    /// How it relates to the source attribute, for the report.
    public var change: PropertyChange
}

/// How a destination relationship relates to the source.
public struct RelationshipMapping: Sendable {
    public var name: String
    /// The source relationship (of the source entity) whose links it takes; nil when new.
    public var source: String?
    public var destinationEntity: String
    public var isToMany: Bool
    public var isOrdered: Bool
    public var isRequired: Bool
    public var change: PropertyChange
    /// True when a source to-many becomes a to-one: each object must have at most one link.
    public var narrowsToOne: Bool
    /// True when a custom stage's `create` links new objects through it.
    public var isFilledByCreate: Bool
}

/// What happened to a property between two versions (the report's vocabulary).
public enum PropertyChange: Sendable, Equatable {
    case kept
    case renamed(from: String)
    case added
    case typeChanged(from: AttributeType, to: AttributeType)
    case becameRequired
    case becameOptional
    case cardinalityChanged(String)
    case orderingChanged(String)
    case mapped(jsonPath: String)

    public var summary: String {
        switch self {
        case .kept: return "kept"
        case .renamed(let from): return "renamed from \(from)"
        case .added: return "added"
        case .typeChanged(let from, let to): return "type \(from.modelFileName) → \(to.modelFileName)"
        case .becameRequired: return "now required"
        case .becameOptional: return "now optional"
        case .cardinalityChanged(let what): return what
        case .orderingChanged(let what): return what
        case .mapped(let path): return "computed by the custom stage (\(path))"
        }
    }
}

public struct RemovedEntity: Sendable, Equatable {
    public var name: String
    public var table: String?
    public var number: Int?
}

public struct LikelyRename: Sendable, Equatable, Encodable {
    public var removed: String
    public var added: String
    public var type: AttributeType
}

/// A `create` step resolved against the models.
public struct Creation: Sendable {
    public var step: CustomStageDefinition.CreateStep
    /// The new objects' entity and its source-side `forEach` entity.
    public var entity: String
    public var forEach: String
    /// Destination attribute → expression over the `forEach` object (source names).
    public var assignments: [CustomStageDefinition.Assignment]
    /// Relationships of the new object pointing at the migrated `forEach` object.
    public var links: [String]
}

/// Something the migration cannot do, named the way the app would fail.
public struct MigrationRefusal: Sendable, Equatable, Codable {
    public enum Code: String, Sendable, Codable {
        /// A required attribute or relationship has no value for existing rows (134110).
        case mandatoryValueMissing
        /// A type change whose stored values cannot all be converted (134140 on the device:
        /// no mapping can be inferred).
        case typeChangeNotInferable
        /// Two hierarchies merged, an entity split, a relationship's destination narrowed:
        /// beyond lightweight migration (134140).
        case structureNotInferable
        /// A to-many became a to-one while objects have several links.
        case toManyHasSeveralLinks
        /// A new uniqueness constraint that objects already break.
        case uniquenessViolated
        /// A custom stage names an entity or property the models do not have, or an expression
        /// SQLite rejects.
        case invalidCustomStage
        /// The stage plan itself (see `PlanIssue`).
        case plan
        /// The store's version cannot be told: ambiguous, unknown, or drifted beyond adoption.
        case storeNotIdentified
        /// `upgrade` only: an undamaged store names its version by its stored hashes, and no
        /// version of the catalog has them: the catalog lacks the store's version.
        case versionNotInCatalog
        /// `upgrade` only: an undamaged store has the hashes of several versions of the catalog
        /// (`match`: ambiguous), and the plan cannot tell which of them to start from (the
        /// models differ in what hashes leave out, or several are staged): the catalog must give
        /// them distinct hashes, or `--from` name the version the store is.
        case versionsShareHashes
        /// The store is newer than the target: never downgrade.
        case storeNewer
        /// `upgrade` only: the store cannot be read as a store (damaged, truncated, not SQLite).
        case storeDamaged
    }

    // The optional fields are written `null` when absent, never left out: a refusal that names
    // no entity (`storeDamaged`, `plan`, …) has the same keys as one that does (JSON-OUTPUT.md).
    public var code: Code
    /// The hop, as `V1 → V2`.
    public var hop: String
    @NullEncoded public var entity: String?
    @NullEncoded public var property: String?
    /// Rows concerned, when the data was counted.
    @NullEncoded public var rowCount: Int64?
    public var message: String
    /// What Core Data would do on the device, and what to do instead.
    public var remedy: String
    /// `attribute` or `relationship`, when a property is named.
    @NullEncoded public var propertyKind: String?
    /// The version the hop leads to, when the refusal is a hop's.
    @NullEncoded public var destinationVersion: String?

    public init(
        code: Code, hop: String, entity: String?, property: String?, rowCount: Int64?, message: String, remedy: String,
        propertyKind: String? = nil, destinationVersion: String? = nil
    ) {
        self.code = code
        self.hop = hop
        self.entity = entity
        self.property = property
        self.rowCount = rowCount
        self.message = message
        self.remedy = remedy
        self.propertyKind = propertyKind
        self.destinationVersion = destinationVersion
    }

    /// True for the refusals the catalog must change for, not the store: a custom stage or
    /// default of the models that does not hold, a stage plan that does not hold, a store newer
    /// than the catalog's versions or of a version it lacks, an undamaged store whose version
    /// the catalog's identical hashes hide. The clean fallback never applies to them.
    public var isCatalogsFault: Bool {
        [.invalidCustomStage, .plan, .storeNewer, .versionNotInCatalog, .versionsShareHashes].contains(code)
    }

    /// The Core Data error the app would report for it.
    public var coreDataErrorCode: Int? {
        switch code {
        case .mandatoryValueMissing: return 134110
        case .typeChangeNotInferable, .structureNotInferable, .toManyHasSeveralLinks: return 134140
        case .uniquenessViolated: return 133021
        case .storeNewer: return 134100
        case .invalidCustomStage, .plan, .storeNotIdentified, .versionNotInCatalog, .versionsShareHashes, .storeDamaged: return nil
        }
    }
}

/// A question about the data that decides whether a hop can run, asked by the analyzer.
enum DataCheck: Sendable, Equatable {
    /// Rows of `entity` (at the hop's source) that would have no value for required `property`.
    case rowsNeedValue(entity: String, property: String, kind: String, onlyNulls: Bool)
    /// Values of `attribute` (source entity `entity`, named `sourceAttribute` there) that do not
    /// convert to `type`.
    case unconvertibleValues(entity: String, attribute: String, sourceAttribute: String, type: AttributeType)
    /// Objects of `entity` with more than one link through source relationship `relationship`.
    case severalLinks(entity: String, relationship: String, sourceEntity: String, sourceRelationship: String)
    /// Objects at the other end of source relationship `sourceRelationship` linked from more
    /// than one object, where `relationship` becomes a to-many with no inverse: Core Data keeps
    /// it in a column of the destination's rows, one owner each.
    case severalOwners(entity: String, relationship: String, sourceEntity: String, sourceRelationship: String)
    /// Objects that share values under `entity`'s uniqueness constraint over `properties`: one
    /// the source did not have (`valueChanges` empty), or one it had over values the hop changes
    /// (`valueChanges` says how: a type change, a `map`, a default). The written unique index
    /// holds the objects of every entity in `covered` (entity → its properties in the index's
    /// columns, in constraint order): one table holds a hierarchy (`UniqueIndexCheckBuilder`).
    case duplicates(entity: String, properties: [String], valueChanges: [String], covered: [String: [String]])
}
