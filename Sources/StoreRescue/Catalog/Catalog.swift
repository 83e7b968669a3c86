import Foundation

/// Every known schema version of one app, oldest first: what a store is matched against and
/// what migrations are planned through.
///
/// Loaded from an `.xcdatamodeld` folder, a compiled `.momd` folder, a reference store's model
/// cache, or a catalog file (JSON) that lists versions from any of those or defined inline.
public struct Catalog: Sendable, Equatable {
    /// The app's name (from the catalog file, or the model folder's name).
    public var name: String
    /// Versions in order, oldest first.
    public var versions: [CatalogVersion]
    /// The version the app ships now (`.xccurrentversion`, `NSManagedObjectModel_CurrentVersionName`,
    /// or the catalog file's `current`); the last version when none is named.
    public var currentVersionName: String?
    /// Migration stages between consecutive versions, as the catalog file declares them
    /// (empty until the migration planner uses them).
    public var stages: [CatalogStage]
    /// Where the catalog was loaded from.
    public var sourcePath: String

    public init(name: String, versions: [CatalogVersion], currentVersionName: String? = nil, stages: [CatalogStage] = [], sourcePath: String) {
        self.name = name
        self.versions = versions
        self.currentVersionName = currentVersionName
        self.stages = stages
        self.sourcePath = sourcePath
    }

    public func version(named name: String) -> CatalogVersion? {
        versions.first { $0.name == name }
    }

    /// The latest version: the named current one, else the last.
    public var latest: CatalogVersion? {
        currentVersionName.flatMap(version(named:)) ?? versions.last
    }

    /// Groups of versions whose checksums are equal: a staged migration could not tell them apart.
    public var duplicateChecksums: [[String]] {
        Dictionary(grouping: versions, by: \.versionChecksum).values
            .filter { $0.count > 1 }
            .map { $0.map(\.name) }
            .sorted { $0.first ?? "" < $1.first ?? "" }
    }
}

/// One known version: its model and the identity Core Data gives it.
public struct CatalogVersion: Sendable, Equatable {
    /// The version's name ("Model 2", "SyncMetadata 3", "V1").
    public var name: String
    public var model: ManagedObjectModel
    /// Entity name → 32-byte version hash, computed from `model`.
    public var versionHashes: [String: Data]
    /// Base64 SHA-512 digest of the hashes (`NSStoreModelVersionHashesDigest`).
    public var hashesDigest: String
    /// Base64 SHA-256 checksum of the hashes (`NSStoreModelVersionChecksumKey`).
    public var versionChecksum: String
    /// Where this version came from: "xcdatamodel", "mom", "store", "inline".
    public var origin: String
    /// The file it was read from.
    public var sourcePath: String?

    /// A version from a model; hashes, digest and checksum are computed.
    public init(name: String, model: ManagedObjectModel, origin: String, sourcePath: String? = nil) {
        self.name = name
        self.model = model
        self.versionHashes = EntityVersionHasher.versionHashes(for: model)
        self.hashesDigest = EntityVersionHasher.hashesDigest(versionHashes)
        self.versionChecksum = EntityVersionHasher.versionChecksum(versionHashes)
        self.origin = origin
        self.sourcePath = sourcePath
    }

    /// `NSStoreModelVersionIdentifiers` this version stamps into a store.
    public var versionIdentifiers: [String] {
        model.versionIdentifiers.isEmpty ? [""] : model.versionIdentifiers
    }
}

/// A declared migration stage between two consecutive versions (filled by the migration work).
public struct CatalogStage: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        case lightweight
        case custom
    }

    public var from: String
    public var to: String
    public var kind: Kind
    /// Free-form description of the custom step (the migration work gives it structure).
    public var notes: String?

    public init(from: String, to: String, kind: Kind, notes: String? = nil) {
        self.from = from
        self.to = to
        self.kind = kind
        self.notes = notes
    }
}
