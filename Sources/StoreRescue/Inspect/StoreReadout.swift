import Foundation

/// Everything one read of a store produced: the report `inspect` prints, and the domain values
/// behind it, so that `match`, `migrate` and `upgrade` weigh and transform the store without
/// reading it twice or re-parsing the report's JSON-shaped summaries.
public struct StoreReadout: Sendable {
    /// The report as `inspect` prints it (its `kind` and `error` say whether the rest was read).
    public var report: InspectionReport
    /// The tables, columns and indexes, as SQLite reports them; nil when the store was not read.
    public var schema: PhysicalSchema?
    /// `Z_METADATA`, when present and decodable.
    public var metadata: StoreMetadata?
    /// The model decoded from `Z_MODELCACHE`, when present and decodable.
    public var model: ManagedObjectModel?
    /// `Z_MODELCACHE.Z_CONTENT` as stored (raw DEFLATE), when the model was decoded from it.
    public var modelCacheBytes: Data?
    /// `Z_PRIMARYKEY`, in `Z_ENT` order.
    public var primaryKeys: [PrimaryKeyEntry]

    public init(
        report: InspectionReport, schema: PhysicalSchema?, metadata: StoreMetadata?, model: ManagedObjectModel?,
        modelCacheBytes: Data?, primaryKeys: [PrimaryKeyEntry]
    ) {
        self.report = report
        self.schema = schema
        self.metadata = metadata
        self.model = model
        self.modelCacheBytes = modelCacheBytes
        self.primaryKeys = primaryKeys
    }

    /// A readout of a store that could not be read: only the report.
    init(rejected report: InspectionReport) {
        self.init(report: report, schema: nil, metadata: nil, model: nil, modelCacheBytes: nil, primaryKeys: [])
    }

    /// True when the store was read as a Core Data store without error.
    public var isCoreDataStore: Bool { report.kind == .coreDataStore && report.error == nil && schema != nil }
}
