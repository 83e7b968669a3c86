/// What the data says about a plan before anything is written: rows per entity at every
/// version, every value, link and object that will be discarded, and every refusal only the
/// data decides (134110 rows without a value, values that do not convert, to-many links that
/// no longer fit a to-one, duplicates under a new uniqueness constraint).
public struct MigrationAnalysis: Sendable, Equatable {
    /// Rows per entity at one version of the path.
    public struct VersionRows: Sendable, Equatable, Encodable {
        public var version: String
        /// Entity name → rows of that entity (its own rows, not its subentities').
        public var rows: [String: Int64]
    }

    /// What one hop discards.
    public struct Discarded: Sendable, Equatable, Encodable {
        /// `V1 → V2`.
        public var hop: String
        /// Removed entity → its rows.
        public var entityRows: [String: Int64]
        /// `Entity.attribute` → non-NULL values of the removed attribute.
        public var attributeValues: [String: Int64]
        /// `Entity.relationship` → links of the removed relationship.
        public var relationshipLinks: [String: Int64]
    }

    public var rowsByVersion: [VersionRows]
    public var discarded: [Discarded]
    /// `Entity.relationship` → links the written version clears because the object they name
    /// is not of the relationship's kind there (discarded, moved out of the destination's
    /// hierarchy, or already missing); the run reports the same in `clearedLinks`.
    public var linksToClear: [String: Int64]
    public var refusals: [MigrationRefusal]
    /// An app's own columns of entity tables (`OwnColumn`) the migration carries to the
    /// target, and those it leaves out, with their values (the discarded ones are also in
    /// their hop's `attributeValues`, as `own column ZENTRY.ZAPPNOTE`).
    public var carriedColumns: [CarriedColumn] = []
    public var leftOutColumns: [LeftOutColumn] = []
    /// The store's indexes that the target does not lay out (`OwnIndex`; an app's own table's
    /// too): those the migration carries, and those it leaves out, with why.
    public var carriedIndexes: [CarriedIndex] = []
    public var leftOutIndexes: [LeftOutIndex] = []
    /// True when a hop's steps (`willMigrate`, `didMigrate`) run between versions: counts after
    /// them are predicted from the data as it is before they run.
    public var countsPrecedeCustomSteps: Bool
    /// Uniqueness checks left to the run: steps that run before the hop's copy (`willMigrate`,
    /// an earlier `didMigrate`) may change the values, so the run checks after them.
    public var deferredUniquenessChecks: [DeferredUniquenessCheck] = []

    /// Conversion checks left to the run: values of a type-changed attribute that do not convert
    /// as the store is, which steps before the hop's copy may correct (an `update` setting the
    /// attribute, a `delete` that can reach its objects, a Swift handler), so the run checks
    /// after them. Steps that cannot touch those values leave the refusal where it was.
    public var deferredConversionChecks: [DeferredConversionCheck] = []

    /// Values a custom stage computes (`map`, a `create` step's `set`) that do not convert to
    /// their attribute's type, or are NULL for a required one, as the store is, when steps run
    /// before the hop's copy (they may change what the expressions read): the run checks after them.
    public var deferredComputedValueChecks: [DeferredComputedValueCheck] = []

    /// A hop whose computed values do not all fit before the steps that precede its copy.
    public struct DeferredComputedValueCheck: Sendable, Equatable {
        /// The hop's position in the plan, and the hop as `V1 → V2`.
        public var hopIndex: Int
        public var hop: String
        /// The hop's destination, written once the check passes.
        public var version: String
        /// The refusals the values as they are would get (`stages[0].map.Item.code gives …`).
        public var refusalsBeforeSteps: [MigrationRefusal]
        /// The steps they wait for, in words (`the willMigrate steps of stages[0]`).
        public var steps: [String]

        /// `the willMigrate steps of stages[0] and …`.
        public var stepsText: String { steps.joined(separator: " and ") }
    }

    /// Custom steps that set values the version they run on keeps unique (`willMigrate` at the
    /// hop's source, `didMigrate` at its destination): that version's unique index is in the
    /// file they run on, so a step that makes values shared stops the run there.
    public var stepsUnderUniqueness: [StepsUnderUniqueness] = []

    public struct StepsUnderUniqueness: Sendable, Equatable {
        public var hop: String
        /// The version the steps run on, which declares the constraints.
        public var version: String
        /// `the willMigrate steps of stages[0]`, `the didMigrate handler of V1 → V2`.
        public var steps: String
        /// `Item.code`, `Item.a + b`.
        public var constrained: [String]
    }

    /// A uniqueness constraint checked by the run after the steps that precede a hop's copy.
    public struct DeferredUniquenessCheck: Sendable, Equatable {
        /// The hop's position in the plan, and the hop as `V1 → V2`.
        public var hopIndex: Int
        public var hop: String
        /// The version that declares the constraint (the hop's destination).
        public var version: String
        public var entity: String
        public var properties: [String]
        /// The steps it waits for, in words (`the willMigrate steps of stages[0]`).
        public var steps: [String]

        /// `Item.code`, `Item.a + b`.
        public var constrained: String { "\(entity).\(properties.joined(separator: " + "))" }
        /// `the willMigrate steps of stages[0] and …`.
        public var stepsText: String { steps.joined(separator: " and ") }
    }

    /// A type change whose stored values do not all convert before the steps that precede the
    /// hop's copy, which may correct them: the run checks the values those steps leave.
    public struct DeferredConversionCheck: Sendable, Equatable {
        /// The hop's position in the plan, and the hop as `V1 → V2`.
        public var hopIndex: Int
        public var hop: String
        /// The hop's destination, written once the check passes.
        public var version: String
        /// The destination entity and attribute, and where their values come from at the hop's
        /// source.
        public var entity: String
        public var attribute: String
        public var sourceEntity: String
        public var sourceAttribute: String
        public var type: AttributeType
        /// The values that do not convert as the store is, and one of them in words (`the text
        /// "bad" in the object with Z_PK 1`).
        public var rowsBeforeSteps: Int64
        public var exampleBeforeSteps: String?
        /// The steps that may change the values, in words (`the willMigrate steps of stages[0]`).
        public var steps: [String]

        /// `the willMigrate steps of stages[0] and …`.
        public var stepsText: String { steps.joined(separator: " and ") }
    }

    /// Rows of `entity` at `version`, when counted.
    public func rows(of entity: String, at version: String) -> Int64? {
        rowsByVersion.first { $0.version == version }?.rows[entity]
    }
}
