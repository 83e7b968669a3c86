import Foundation

/// What `migrate` did or would do. Its JSON encoding is the contract in
/// `Docs/JSON-OUTPUT.md#storerescue-migrate---json`: field names never change.
public struct MigrationReport: Sendable, Encodable {
    /// `migrated`, `wouldMigrate` (dry run), `alreadyAtTarget`, `refused`, `failed`.
    public enum Status: String, Sendable, Encodable {
        case migrated, wouldMigrate, alreadyAtTarget, refused, failed
    }

    public struct Source: Sendable, Encodable {
        public var version: String
        /// `matched`, `adopted` or `requested` (`--from`).
        public var choice: String
        /// What `match` said: `exact`, `drifted`, …
        public var matchOutcome: String
        @NullEncoded public var matchVersion: String?
    }

    public struct Target: Sendable, Encodable {
        public var version: String
        /// `requested`, `endOfStages` or `catalogLatest`.
        public var choice: String
        /// The catalog's current version (else its last), for comparison.
        @NullEncoded public var catalogCurrent: String?
        /// True when the catalog declares stages (staged migration), false for automatic.
        public var staged: Bool
    }

    public struct Hop: Sendable, Encodable {
        public var from: String
        public var to: String
        public var kind: String
        /// `stage`, `bridge` or `automatic`.
        public var origin: String
        @NullEncoded public var stage: String?
        public var entities: [Entity]
        public var removedEntities: [Count]
        public var discardedValues: [Count]
        public var discardedLinks: [Count]
        public var creations: [Creation]
    }

    public struct Entity: Sendable, Encodable {
        public var name: String
        @NullEncoded public var source: String?
        /// `kept`, `added`, `renamed`.
        public var change: String
        @NullEncoded public var sourceNumber: Int?
        public var destinationNumber: Int
        @NullEncoded public var sourceTable: String?
        public var destinationTable: String
        /// Rows that go through (the source entity's rows), when counted.
        @NullEncoded public var rows: Int64?
        public var attributes: [Property]
        public var relationships: [Property]
        public var removedAttributes: [String]
        public var removedRelationships: [String]
        public var likelyRenames: [LikelyRename]
    }

    public struct Property: Sendable, Encodable {
        public var name: String
        /// `kept`, `added`, `renamed from x`, `type Integer 16 → Integer 64`, …
        public var change: String
        /// Where the value comes from: `copied from x`, `default 0`, `NULL`, `computed: …`, …
        public var value: String
    }

    public struct Count: Sendable, Encodable {
        public var name: String
        public var count: Int64
    }

    public struct Creation: Sendable, Encodable {
        public var entity: String
        public var forEach: String
        @NullEncoded public var condition: String?
        public var links: [String]
    }

    /// Objects that already lack a value for a required property, named as the target version
    /// names it.
    public struct MissingValues: Sendable, Encodable, Equatable {
        public var entity: String
        public var property: String
        /// `attribute` or `relationship`.
        public var kind: String
        public var objects: Int64

        /// `2 Order objects already have no customer (a required relationship)`.
        public var summary: String { "\(objects) \(entity) objects already have no \(property) (a required \(kind))" }
    }

    public struct Result: Sendable, Encodable {
        public var path: String
        public var rowsByEntity: [String: Int64]
        public var joinRows: [String: Int64]
        /// Links cleared because the object they named was discarded (or was already missing).
        public var clearedLinks: [String: Int64]
        public var droppedHistoryChanges: Int64
        public var carriedTables: [String]
        public var leftOutTables: [String]
        /// An app's own columns of entity tables carried over with their values, named at the
        /// target (`ZENTRY.ZAPPNOTE`), and those left out with their values.
        public var carriedColumns: [String]
        public var leftOutColumns: [MigrationAnalysis.LeftOutColumn]
        /// Indexes of the store the target does not lay out: carried, and left out with why.
        public var carriedIndexes: [MigrationAnalysis.CarriedIndex]
        public var leftOutIndexes: [MigrationAnalysis.LeftOutIndex]
        /// Rows each custom step changed, by stage.
        public var customStepRows: [String: [Int64]]
        public var frameworkVersion: Int
        public var modelCacheWritten: Bool
        /// Versions written on the way because custom steps had to run on them (0: one rebuild).
        public var intermediateVersions: Int
        public var verification: MigrationVerifier.Result
        public var seconds: Double
    }

    public var store: String
    @NullEncoded public var output: String?
    public var catalog: String
    public var dryRun: Bool
    public var status: Status
    @NullEncoded public var source: Source?
    @NullEncoded public var target: Target?
    public var notes: [String]
    public var hops: [Hop]
    /// Links the migration clears, per relationship, predicted from the data: they name an
    /// object that is not of the relationship's kind at the target (discarded on the way, moved
    /// out of the destination's hierarchy, or already missing). A run reports what it did clear
    /// in `result.clearedLinks`.
    public var linksToClear: [Count]
    public var refusals: [MigrationRefusal]
    /// Everything the plan found wrong with the stages (errors and warnings).
    public var planIssues: [PlanIssue]
    /// Dry run: required values the store already lacks, carried as they are by the migration
    /// (a real run reports them in `result.verification.preexistingMissingValues`); else empty.
    public var requiredValuesAlreadyMissing: [MissingValues]
    /// An app's own columns of entity tables (not mapped by the store's version): those the
    /// migration carries to the target with their values, and those it leaves out, with the
    /// values that go with them — forecast from the store, in a dry run and a run alike (a
    /// run's `result` says what it did).
    public var carriedColumns: [MigrationAnalysis.CarriedColumn]
    public var leftOutColumns: [MigrationAnalysis.LeftOutColumn]
    /// The store's indexes the target does not lay out (an app's own, on its own columns or its
    /// own tables): those carried and those left out, forecast from the store in a dry run and
    /// a run alike.
    public var carriedIndexes: [MigrationAnalysis.CarriedIndex]
    public var leftOutIndexes: [MigrationAnalysis.LeftOutIndex]
    @NullEncoded public var result: Result?
    @NullEncoded public var error: ErrorSummary?

    /// 0 migrated (or would, in a dry run), 2 already at the target, 3 refused; an error's own.
    public var exitStatus: ExitStatus {
        if let error { return ExitStatus(rawValue: error.exitStatus) ?? .internalError }
        switch status {
        case .migrated, .wouldMigrate: return .success
        case .alreadyAtTarget: return .nothingToDo
        case .refused: return .refused
        case .failed: return .internalError
        }
    }
}

extension MigrationReport {
    /// The report of a preparation (and, when written, its result).
    init(store: String, output: String?, catalog: Catalog, options: MigrationOptions, preparation: MigrationPreparation) {
        self.store = store
        self.output = output
        self.catalog = catalog.sourcePath
        dryRun = options.isDryRun
        status = !preparation.refusals.isEmpty ? .refused : preparation.isAtTarget ? .alreadyAtTarget : options.isDryRun ? .wouldMigrate : .migrated
        if let version = preparation.sourceVersion, let choice = preparation.sourceChoice {
            source = Source(version: version, choice: choice.rawValue, matchOutcome: preparation.match.outcome.rawValue, matchVersion: preparation.match.version)
        }
        if let plan = preparation.plan {
            target = Target(version: plan.targetVersion, choice: plan.targetChoice.rawValue, catalogCurrent: catalog.latest?.name, staged: plan.isStaged)
            planIssues = plan.issues
        } else {
            planIssues = []
        }
        notes = preparation.notes
        refusals = preparation.refusals
        requiredValuesAlreadyMissing = preparation.requiredValuesAlreadyMissing
        let analysis = preparation.analysis
        hops = preparation.mappings.enumerated().map { index, mapping in
            Self.hop(mapping, rows: analysis?.rowsByVersion[safe: index], discarded: analysis?.discarded[safe: index])
        }
        linksToClear = Self.counts(analysis?.linksToClear)
        carriedColumns = analysis?.carriedColumns ?? []
        leftOutColumns = analysis?.leftOutColumns ?? []
        carriedIndexes = analysis?.carriedIndexes ?? []
        leftOutIndexes = analysis?.leftOutIndexes ?? []
        result = nil
        error = nil
    }

    private static func hop(_ mapping: HopMapping, rows: MigrationAnalysis.VersionRows?, discarded: MigrationAnalysis.Discarded?) -> Hop {
        let entities = mapping.entities.map { entity -> Entity in
            // A new abstract entity (a new parent) has no objects of its own: its properties
            // are its subentities', whose lines say where their values and links come from.
            if entity.source == nil, entity.isAbstract {
                let inherited = "on its subentities' objects (abstract: no objects of its own)"
                return Entity(
                    name: entity.name, source: nil, change: "added", sourceNumber: nil, destinationNumber: entity.destinationNumber,
                    sourceTable: nil, destinationTable: entity.destinationTable, rows: nil,
                    attributes: entity.attributes.map { Property(name: $0.name, change: $0.change.summary, value: inherited) },
                    relationships: entity.relationships.map { Property(name: $0.name, change: $0.change.summary, value: inherited) },
                    removedAttributes: [], removedRelationships: [], likelyRenames: [])
            }
            return Entity(
                name: entity.name, source: entity.source,
                change: entity.source == nil ? "added" : entity.isRenamed ? "renamed from \(entity.source ?? "")" : "kept",
                sourceNumber: entity.sourceNumber, destinationNumber: entity.destinationNumber, sourceTable: entity.sourceTable,
                destinationTable: entity.destinationTable, rows: entity.source.flatMap { rows?.rows[$0] },
                attributes: entity.attributes.map { attribute in
                    Property(
                        name: attribute.name, change: attribute.change.summary,
                        value: describe(attribute, creations: mapping.creations.filter { $0.entity == entity.name }, isNew: entity.source == nil))
                },
                relationships: entity.relationships.map { relationship in
                    var value = relationship.source.map { "links of \($0)" } ?? "no links"
                    if relationship.isFilledByCreate { value += ", plus those the custom stage's create makes" }
                    return Property(name: relationship.name, change: relationship.change.summary, value: value)
                },
                removedAttributes: entity.removedAttributes, removedRelationships: entity.removedRelationships,
                likelyRenames: entity.likelyRenames)
        }
        return Hop(
            from: mapping.hop.from, to: mapping.hop.to, kind: mapping.hop.kind.rawValue, origin: mapping.hop.origin.rawValue,
            stage: mapping.hop.stage, entities: entities,
            removedEntities: mapping.removedEntities.map { Count(name: $0.name, count: discarded?.entityRows[$0.name] ?? 0) },
            discardedValues: counts(discarded?.attributeValues), discardedLinks: counts(discarded?.relationshipLinks),
            creations: mapping.creations.map { Creation(entity: $0.entity, forEach: $0.forEach, condition: $0.step.condition, links: $0.links) })
    }

    private static func counts(_ values: [String: Int64]?) -> [Count] {
        (values ?? [:]).sorted { $0.key < $1.key }.map { Count(name: $0.key, count: $0.value) }
    }

    /// Where an attribute's values come from: for the objects that go through the hop, and for
    /// those a `create` step makes (each step's `set`, else the default, else nothing — which
    /// stops the run when the attribute is required). A new entity has only the latter.
    private static func describe(_ attribute: AttributeMapping, creations: [StoreRescue.Creation], isNew: Bool) -> String {
        guard !creations.isEmpty else { return describe(attribute) }
        let created = creations.map { creation -> String in
            if let assignment = creation.assignments.last(where: { $0.property == attribute.name }) {
                return "set by the create step (\(assignment.jsonPath.isEmpty ? creation.step.jsonPath : assignment.jsonPath))"
            }
            // What the writer gives it (`AttributeMapping.defaultValue`), whether the entity is
            // new or kept (a kept one's plan said NULL where the run wrote the default).
            if let value = attribute.defaultValue {
                return "default \(SQLLiteral.value(value)) (the create step \(creation.step.jsonPath) does not set it)"
            } else if attribute.isRequired {
                return "no value (required, no default): the create step \(creation.step.jsonPath) does not set it, so the migration is refused when the step makes objects (mandatoryValueMissing)"
            } else {
                return "NULL (the create step \(creation.step.jsonPath) does not set it)"
            }
        }
        let fromCreate = created.joined(separator: "; ")
        return isNew ? fromCreate : describe(attribute) + "; objects the custom stage creates: " + fromCreate
    }

    private static func describe(_ attribute: AttributeMapping) -> String {
        var text: String
        switch attribute.value {
        case .copy(let from, let change):
            text = "copied from \(from)"
            if change != .none { text += ", converted to \(attribute.type.modelFileName)" }
        case .expression(let expression, _): text = "computed: \(expression)"
        case .defaultValue(let value): text = "default \(SQLLiteral.value(value))"
        case .null: text = "NULL"
        case .missing: text = "no value (required, no default)"
        }
        if let replacement = attribute.nullReplacement, case .copy = attribute.value { text += "; NULLs become \(SQLLiteral.value(replacement))" }
        return text
    }

    /// The report of a planned migration that then stopped on `error`: the plan and what the
    /// analysis found stay (`hops`, `linksToClear`, …); nothing was written.
    mutating func failed(_ error: any OperatorFacingError) {
        status = .failed
        result = nil
        self.error = ErrorSummary(error)
    }

    /// The report of a migration that could not start or stopped on an error.
    init(store: String, output: String?, catalog: String, dryRun: Bool, error: any OperatorFacingError) {
        self.store = store
        self.output = output
        self.catalog = catalog
        self.dryRun = dryRun
        status = .failed
        notes = []
        hops = []
        linksToClear = []
        refusals = []
        planIssues = []
        requiredValuesAlreadyMissing = []
        carriedColumns = []
        leftOutColumns = []
        carriedIndexes = []
        leftOutIndexes = []
        self.error = ErrorSummary(error)
    }
}

extension MigrationReport.Result {
    /// What a written migration came to, for the store now at `path` (`migrate`'s output, or
    /// the store `upgrade` replaced).
    init(path: String, written: MigrationEngine.Written, seconds: Double) {
        self.init(
            path: path, rowsByEntity: written.verification.rowsByEntity, joinRows: written.summary.joinRows,
            clearedLinks: written.summary.clearedLinks, droppedHistoryChanges: written.summary.droppedHistoryChanges,
            carriedTables: written.summary.carriedTables, leftOutTables: written.summary.leftOutTables,
            carriedColumns: written.summary.carriedColumns, leftOutColumns: written.leftOutColumns,
            carriedIndexes: written.summary.carriedIndexes, leftOutIndexes: written.leftOutIndexes,
            customStepRows: written.stepRows, frameworkVersion: written.frameworkVersion, modelCacheWritten: written.modelCacheWritten,
            intermediateVersions: written.intermediateFiles, verification: written.verification, seconds: seconds)
    }
}
