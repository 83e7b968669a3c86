/// What `StoreCreator` wrote. Part of the `create --json` contract.
public struct StoreCreationResult: Sendable, Equatable, Codable {
    /// The store's path, as given.
    public var path: String
    /// `Z_UUID`.
    public var uuid: String
    public var frameworkVersion: Int
    /// `NSStoreModelVersionIdentifiers` as written.
    public var versionIdentifiers: [String]
    /// Entity name → base64 of its 32-byte version hash.
    public var versionHashes: [String: String]
    /// `NSStoreModelVersionHashesDigest` computed from the hashes (written from framework 977).
    public var hashesDigest: String
    /// `NSStoreModelVersionChecksumKey` computed from the hashes (written from framework 1333).
    public var versionChecksum: String
    /// Entities numbered in `Z_PRIMARYKEY`.
    public var entityCount: Int
    /// Every table created, in creation order (entity, join, bookkeeping, history).
    public var tables: [String]
    public var indexCount: Int
    public var includesPersistentHistory: Bool
    /// Always false: `Z_MODELCACHE` is created empty (see `StoreCreator`).
    public var modelCacheWritten: Bool
}
