/// One thing the inspector noticed, with a severity and a stable code jobs can match on.
public struct Finding: Sendable, Equatable, Codable {
    public enum Severity: String, Sendable, Codable, Comparable {
        case info, warning, error

        private var rank: Int { [.info: 0, .warning: 1, .error: 2][self] ?? 0 }
        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    public var severity: Severity
    /// A stable, kebab-case code (`no-version-checksum`); the list is in `Docs/JSON-OUTPUT.md`.
    public var code: String
    public var message: String

    public init(_ severity: Severity, _ code: Code, _ message: String) {
        self.severity = severity
        self.code = code.rawValue
        self.message = message
    }

    /// Every code the inspector emits. Codes are never renamed; new ones may be added.
    public enum Code: String, Sendable, CaseIterable {
        case inputRejected = "input-rejected"
        case notCoreData = "not-core-data"
        case noMetadata = "no-metadata"
        case metadataUnreadable = "metadata-unreadable"
        case metadataExtraRows = "metadata-extra-rows"
        case metadataMalformedHashes = "metadata-malformed-hashes"
        case noVersionHashes = "no-version-hashes"
        case noPrimaryKeyTable = "no-primary-key-table"
        case noModelCache = "no-model-cache"
        case modelCacheUnreadable = "model-cache-unreadable"
        case hashesDisagree = "hashes-disagree"
        case digestDisagrees = "digest-disagrees"
        case checksumDisagrees = "checksum-disagrees"
        case noHashesDigest = "no-hashes-digest"
        case noVersionChecksum = "no-version-checksum"
        case unversionedIdentifiers = "unversioned-identifiers"
        case entitiesDisagree = "entities-disagree"
        case entityTableMissing = "entity-table-missing"
        case zMaxBehind = "z-max-behind"
        case uncheckpointedWAL = "uncheckpointed-wal"
        case hotJournal = "hot-journal"
        case orphanSidecar = "orphan-sidecar"
        case integrityFailure = "integrity-failure"
        case unexpectedSchemaObjects = "unexpected-schema-objects"
        case cloudKitMirroring = "cloudkit-mirroring"
        case persistentHistory = "persistent-history"
        case countFailed = "count-failed"
    }
}
