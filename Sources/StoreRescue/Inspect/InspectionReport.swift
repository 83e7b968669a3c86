import Foundation

/// Everything `inspect` learned about one input. Its JSON encoding is the contract documented
/// in `Docs/JSON-OUTPUT.md`: field names never change; fields may be added.
public struct InspectionReport: Sendable, Encodable {
    public var path: String
    public var kind: StoreKind
    /// How the store was read (`immutableOriginal` or `privateCopy`), nil when it was not opened.
    @NullEncoded public var accessMethod: StoreAccessMethod?
    /// Suffixes of the sidecars present next to the input (a followed link: next to its target), `["-wal","-shm"]`.
    public var sidecars: [String]
    @NullEncoded public var file: FileSummary?
    @NullEncoded public var metadata: MetadataSummary?
    @NullEncoded public var model: ModelSummary?
    public var entities: [EntitySummary]
    public var tables: [TableSummary]
    public var indexes: [PhysicalSchema.Index]
    public var triggers: [PhysicalSchema.SchemaObject]
    public var views: [PhysicalSchema.SchemaObject]
    @NullEncoded public var integrity: IntegritySummary?
    public var findings: [Finding]
    /// Set when the input could not be read: what failed and what to try.
    @NullEncoded public var error: ErrorSummary?

    public struct FileSummary: Sendable, Encodable {
        public var size: Int64
        public var pageSize: Int
        @NullEncoded public var pageCount: Int64?
        public var journalMode: String
        public var autoVacuum: String
        public var textEncoding: String
        public var userVersion: UInt32
        public var lastWriterSQLiteVersion: String
    }

    public struct MetadataSummary: Sendable, Encodable {
        @NullEncoded public var uuid: String?
        @NullEncoded public var storeType: String?
        @NullEncoded public var frameworkVersion: Int64?
        @NullEncoded public var maximumFrameworkVersion: Int64?
        @NullEncoded public var versionIdentifiers: [String]?
        /// Entity name → base64 of its 32-byte version hash.
        @NullEncoded public var versionHashes: [String: String]?
        @NullEncoded public var versionHashesVersion: Int64?
        @NullEncoded public var hashesDigest: String?
        @NullEncoded public var versionChecksum: String?
        @NullEncoded public var autoVacuumLevel: String?
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
        @NullEncoded public var superentity: String?
        public var isAbstract: Bool
        @NullEncoded public var versionHashModifier: String?
        public var uniquenessConstraints: [[String]]
        public var attributes: [ModelAttribute]
        public var relationships: [ModelRelationship]
    }

    public struct ModelAttribute: Sendable, Encodable {
        public var name: String
        public var type: String
        public var isOptional: Bool
        public var isTransient: Bool
        @NullEncoded public var defaultValue: String?
        @NullEncoded public var versionHashModifier: String?
        public var allowsExternalBinaryDataStorage: Bool
        public var preservesValueInHistoryOnDeletion: Bool
        public var isIndexed: Bool
    }

    public struct ModelRelationship: Sendable, Encodable {
        public var name: String
        public var destination: String
        @NullEncoded public var inverse: String?
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
        @NullEncoded public var table: String?
        /// The largest `Z_PK` in the hierarchy's table (reported on root entities); `null` on
        /// subentities, and when the table is empty, missing or has no `Z_PK`.
        @NullEncoded public var largestPrimaryKey: Int64?
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

