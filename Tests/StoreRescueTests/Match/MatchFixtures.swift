import Foundation
@testable import StoreRescue

/// A private copy of the SyncMetadata_V3 sample (with its WAL) plus catalogs built in code
/// around its own model, so each drift case is one small edit of a real store.
struct MatchFixture {
    let directory: TemporaryDirectory
    let path: String
    /// The model that wrote the store ("SyncMetadata 3"), decoded from its model cache.
    let storeModel: ManagedObjectModel

    init() throws {
        directory = try TemporaryDirectory()
        path = try directory.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o644) }
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        let blob = try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE")?.data ?? Data()
        storeModel = try ModelArchiveDecoder.decodeModelCache(compressed: blob)
    }

    /// Runs SQL on the store copy.
    func edit(_ sql: String) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute(sql)
    }

    /// Rewrites the store's metadata plist with `change` applied.
    func editMetadata(_ change: (inout [String: PropertyListValue]) -> Void) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        guard case .read(let metadata, _) = try StoreMetadata.read(from: connection) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        var plist = metadata.plist
        change(&plist)
        let statement = try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ?")
        try statement.bind([.blob(BinaryPropertyListEncoder.encode(.dictionary(plist)))])
        _ = try statement.step()
    }

    /// V1: the store's model without `SyncFeatureEntity.lastModified`.
    var v1: ManagedObjectModel {
        var model = storeModel
        if let index = model.entities.firstIndex(where: { $0.name == "SyncFeatureEntity" }) {
            model.entities[index].properties.removeAll { $0.name == "lastModified" }
        }
        return model
    }

    /// V3: the store's model plus a required Integer 16 `priority` with no default on
    /// `SyncableSettingsMetadata` (whose 2 rows then have no value for it).
    var v3: ManagedObjectModel {
        var model = storeModel
        if let index = model.entities.firstIndex(where: { $0.name == "SyncableSettingsMetadata" }) {
            model.entities[index].properties.append(.attribute(AttributeDescription(name: "priority", type: .integer16, isOptional: false)))
        }
        return model
    }

    /// V1 → V2 (the store's) → V3, current V3.
    func catalog(stages: [CatalogStage] = [], current: String? = nil, extra: [CatalogVersion] = []) -> Catalog {
        Catalog(
            name: "SyncMetadata (test)",
            versions: [
                CatalogVersion(name: "V1", model: v1, origin: "inline"),
                CatalogVersion(name: "V2", model: storeModel, origin: "inline"),
                CatalogVersion(name: "V3", model: v3, origin: "inline"),
            ] + extra,
            currentVersionName: current, stages: stages, sourcePath: "(test)")
    }
}
