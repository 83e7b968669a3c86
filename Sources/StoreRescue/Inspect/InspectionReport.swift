import Foundation

/// Everything `inspect` learned about one input. Its JSON encoding is the contract documented
/// in `Docs/JSON-OUTPUT.md`: field names never change; fields may be added.
public struct InspectionReport: Sendable, Encodable {
    public var path: String
    public var kind: StoreKind
    /// How the store was read (`immutableOriginal` or `privateCopy`), nil when it was not opened.
    public var accessMethod: StoreAccessMethod?
    /// Suffixes of the sidecars present next to the input (`["-wal","-shm"]`).
    public var sidecars: [String]
    public var file: FileSummary?
    public var metadata: MetadataSummary?
    public var model: ModelSummary?
    public var entities: [EntitySummary]
    public var tables: [TableSummary]
    public var indexes: [PhysicalSchema.Index]
    public var triggers: [PhysicalSchema.SchemaObject]
    public var views: [PhysicalSchema.SchemaObject]
    public var integrity: IntegritySummary?
    public var findings: [Finding]
    /// Set when the input could not be read: what failed and what to try.
    public var error: ErrorSummary?

    public struct FileSummary: Sendable, Encodable {
        public var size: Int64
        public var pageSize: Int
        public var pageCount: Int64?
        public var journalMode: String
        public var autoVacuum: String
        public var textEncoding: String
        public var userVersion: UInt32
        public var lastWriterSQLiteVersion: String
    }

    public struct MetadataSummary: Sendable, Encodable {
        public var uuid: String?
        public var storeType: String?
        public var frameworkVersion: Int64?
        public var maximumFrameworkVersion: Int64?
        public var versionIdentifiers: [String]?
        /// Entity name → base64 of its 32-byte version hash.
        public var versionHashes: [String: String]?
        public var versionHashesVersion: Int64?
        public var hashesDigest: String?
        public var versionChecksum: String?
        public var autoVacuumLevel: String?
        /// Keys Core Data does not write itself (app-defined or unknown), kept verbatim.
        public var otherKeys: [String: PropertyListValue]
    }

    public struct ModelSummary: Sendable, Encodable {
        public var versionIdentifiers: [String]
        public var entities: [ModelEntity]
        /// True when the hashes computed from the model cache equal the stored ones, entity for entity.
        public var hashesMatchMetadata: Bool
        /// Entities whose computed hash differs from the stored one, or that only one side has.
        public var mismatchedEntities: [String]
        public var computedHashesDigest: String
        public var computedVersionChecksum: String
    }

    public struct ModelEntity: Sendable, Encodable {
        public var name: String
        /// Base64 of the entity version hash computed from the model.
        public var versionHash: String
        public var superentity: String?
        public var isAbstract: Bool
        public var versionHashModifier: String?
        public var uniquenessConstraints: [[String]]
        public var attributes: [ModelAttribute]
        public var relationships: [ModelRelationship]
    }

    public struct ModelAttribute: Sendable, Encodable {
        public var name: String
        public var type: String
        public var isOptional: Bool
        public var isTransient: Bool
        public var defaultValue: String?
        public var versionHashModifier: String?
        public var allowsExternalBinaryDataStorage: Bool
        public var preservesValueInHistoryOnDeletion: Bool
        public var isIndexed: Bool
    }

    public struct ModelRelationship: Sendable, Encodable {
        public var name: String
        public var destination: String
        public var inverse: String?
        public var minCount: Int
        public var maxCount: Int
        public var isToMany: Bool
        public var isOrdered: Bool
        public var isOptional: Bool
        public var isTransient: Bool
        public var deleteRule: String
    }

    public struct EntitySummary: Sendable, Encodable {
        public var name: String
        public var ent: Int64
        public var superEnt: Int64
        public var max: Int64
        /// The table holding this entity's rows.
        public var table: String?
        /// The largest `Z_PK` in the hierarchy's table (reported on root entities).
        public var largestPrimaryKey: Int64?
        /// Rows whose `Z_ENT` is this entity's (only with `--counts`).
        public var rowCount: Int64?
    }

    public struct TableSummary: Sendable, Encodable {
        public var name: String
        public var category: PhysicalSchema.TableCategory
        public var columns: [ColumnSummary]
        /// Only with `--counts`.
        public var rowCount: Int64?
    }

    public struct ColumnSummary: Sendable, Encodable {
        public var name: String
        public var type: String
    }

    public struct IntegritySummary: Sendable, Encodable {
        /// `quick_check`.
        public var check: String
        public var ok: Bool
        /// SQLite's messages, at most 100.
        public var messages: [String]
    }

    public typealias ErrorSummary = StoreRescue.ErrorSummary

    /// The exit status `inspect` ends with for this report.
    public var exitStatus: ExitStatus {
        if let error { return ExitStatus(rawValue: error.exitStatus) ?? .internalError }
        return kind.exitStatus
    }

    /// A report for an input that could not be read at all.
    public static func rejected(path: String, error: any OperatorFacingError, kind: StoreKind, sidecars: [String]) -> InspectionReport {
        InspectionReport(
            path: path, kind: kind, accessMethod: nil, sidecars: sidecars, file: nil, metadata: nil, model: nil,
            entities: [], tables: [], indexes: [], triggers: [], views: [], integrity: nil,
            findings: [Finding(.error, .inputRejected, error.description)],
            error: ErrorSummary(error))
    }

    /// The report as JSON: pretty-printed, keys sorted, no escaped slashes.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

extension InspectionReport {
    /// Explicit `null`s: jobs can rely on every documented key being present.
    enum CodingKeys: String, CodingKey {
        case path, kind, accessMethod, sidecars, file, metadata, model, entities, tables, indexes, triggers
        case views, integrity, findings, error
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(kind, forKey: .kind)
        try c.encode(accessMethod, forKey: .accessMethod)
        try c.encode(sidecars, forKey: .sidecars)
        try c.encode(file, forKey: .file)
        try c.encode(metadata, forKey: .metadata)
        try c.encode(model, forKey: .model)
        try c.encode(entities, forKey: .entities)
        try c.encode(tables, forKey: .tables)
        try c.encode(indexes, forKey: .indexes)
        try c.encode(triggers, forKey: .triggers)
        try c.encode(views, forKey: .views)
        try c.encode(integrity, forKey: .integrity)
        try c.encode(findings, forKey: .findings)
        try c.encode(error, forKey: .error)
    }
}
