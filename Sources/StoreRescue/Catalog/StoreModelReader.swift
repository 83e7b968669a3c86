import Foundation

/// Learns a catalog version from a reference store: the model Core Data cached in the store's
/// own `Z_MODELCACHE` (the most direct evidence of what wrote it, format notes §2), checked
/// against the hashes stored in its metadata. The store is opened with `OpenedStore`, so it is
/// never modified.
///
/// ```swift
/// let version = try StoreModelReader.readVersion(fromStore: "reference/v3.sqlite", name: "V3")
/// ```
public enum StoreModelReader {
    /// The largest compressed `Z_MODELCACHE` read, and the most it may inflate to (as `inspect`).
    public static let maximumModelCacheBytes: Int64 = 32 << 20
    public static let maximumInflatedModelBytes = 128 << 20

    /// The version a store was written by, named `name`, with origin `"store"`.
    ///
    /// Version identifiers come from the cached model; when it has none, from the store's
    /// `NSStoreModelVersionIdentifiers`.
    ///
    /// - Throws: `StoreAccessError` when the store cannot be opened; `StoreModelError` when it
    ///   has no usable model cache or its metadata disagrees with it.
    public static func readVersion(fromStore path: String, name: String, options: StoreOpenOptions = StoreOpenOptions()) throws -> CatalogVersion {
        try OpenedStore.readingConsistently(path: path, options: options) { store in
            try store.read { try readVersion(from: $0, path: path, name: name) }
        }
    }

    /// A store as a one-version catalog, the version named after the file. A symbolic link to
    /// it is followed, as one to a catalog file is: it is the operator's reference, read only
    /// (refused, it gave a hint to add `--follow-symlinks`, which `catalog show` lacks and which
    /// means the store elsewhere: a review).
    static func readCatalog(fromStore path: String) throws -> Catalog {
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        var options = StoreOpenOptions()
        options.followsSymlinks = true
        return Catalog(name: name, versions: [try readVersion(fromStore: path, name: name, options: options)], sourcePath: path)
    }

    private static func readVersion(from connection: SQLiteConnection, path: String, name: String) throws -> CatalogVersion {
        let tables = Set(try connection.rows("SELECT name FROM sqlite_schema WHERE type = 'table'").compactMap { $0.first?.string })
        guard tables.contains("Z_METADATA") && tables.contains("Z_PRIMARYKEY") else {
            throw StoreModelError.notACoreDataStore(path: path)
        }
        var metadata: StoreMetadata?
        if case .read(let read, _) = try StoreMetadata.read(from: connection) { metadata = read }
        guard tables.contains("Z_MODELCACHE") else {
            let framework = metadata?.frameworkVersion.map { " (framework \($0) predates the model cache)" } ?? ""
            throw StoreModelError.noModelCache(path: path, reason: "it has no Z_MODELCACHE table\(framework)")
        }
        let rows = try connection.rows("SELECT typeof(Z_CONTENT), length(Z_CONTENT) FROM Z_MODELCACHE LIMIT 2")
        guard let row = rows.first, row[0].string == "blob" else {
            let what = rows.isEmpty ? "has no row" : "holds \(rows[0][0].string == "null" ? "NULL" : "a non-blob value")"
            throw StoreModelError.noModelCache(path: path, reason: "its Z_MODELCACHE \(what)")
        }
        let length = row[1].int64 ?? 0
        guard length <= maximumModelCacheBytes else {
            throw StoreModelError.modelCacheTooLarge(path: path, size: length, limit: maximumModelCacheBytes)
        }
        let compressed = try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1")?.data ?? Data()
        var model: ManagedObjectModel
        do {
            model = try ModelArchiveDecoder.decodeModelCache(compressed: compressed, maximumInflatedBytes: maximumInflatedModelBytes)
        } catch let error as ModelDecodingError {
            throw StoreModelError.undecodableModelCache(path: path, underlying: error)
        }
        if model.versionIdentifiers.isEmpty, let identifiers = metadata?.versionIdentifiers {
            model.versionIdentifiers = identifiers.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        var version = CatalogVersion(name: name, model: model, origin: "store", sourcePath: path)
        version.modelCacheContent = compressed
        if let stored = metadata?.versionHashes {
            let disagreeing = Set(stored.keys).union(version.versionHashes.keys).filter { stored[$0] != version.versionHashes[$0] }
            if !disagreeing.isEmpty { throw StoreModelError.hashesDisagree(path: path, entities: disagreeing.sorted()) }
        }
        return version
    }
}
