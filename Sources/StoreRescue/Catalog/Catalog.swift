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
    /// What Core Data keeps in `Z_MODELCACHE.Z_CONTENT` for a store of this version (raw
    /// DEFLATE of the archived model), when the archive's bytes are known: a reference store's
    /// own cache, or a compiled `.mom`. Nil for a model read from source (an `.xcdatamodel`, an
    /// inline definition): an archive this tool wrote itself could not be proven readable by
    /// Core Data, so a migrated store then keeps the cache empty, as `create` does.
    public var modelCacheContent: Data?

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

/// A migration stage the catalog declares, in the order of the file (`Docs/CATALOG.md`).
///
/// Two forms, as the two frameworks spell them:
/// - **a list of versions** (`{"kind": "lightweight", "versions": ["V4", "V5"]}`): Core Data's
///   `NSLightweightMigrationStage`. The order inside the list does not matter; a store goes in
///   one inferred hop from its version to the latest version listed.
/// - **a pair** (`{"kind": "lightweight" | "custom", "from": "V2", "to": "V3"}`): SwiftData's
///   `MigrationStage.lightweight(fromVersion:toVersion:)` / `.custom(…)`, and Core Data's
///   `NSCustomMigrationStage(migratingFrom:to:)`. Pair stages chain by sharing endpoints.
///
/// A custom stage carries its steps (`custom`): what runs before, during and after the copy.
public struct CatalogStage: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case lightweight
        case custom
    }

    /// Which versions a stage names.
    public enum Span: Sendable, Equatable {
        /// One step from a version to a later one.
        case pair(from: String, to: String)
        /// `NSLightweightMigrationStage`: a set of versions (possibly empty).
        case versions([String])
    }

    public var kind: Kind
    public var span: Span
    /// Free text for people.
    public var notes: String?
    /// The steps of a custom stage; empty for a lightweight one.
    public var custom: CustomStageDefinition
    /// Where the stage is in the catalog file (`stages[2]`), to name it in messages.
    public var jsonPath: String

    public init(kind: Kind, span: Span, notes: String? = nil, custom: CustomStageDefinition = CustomStageDefinition(), jsonPath: String = "stages") {
        self.kind = kind
        self.span = span
        self.notes = notes
        self.custom = custom
        self.jsonPath = jsonPath
    }

    /// A pair stage (the form SwiftData plans use).
    public init(from: String, to: String, kind: Kind, notes: String? = nil, custom: CustomStageDefinition = CustomStageDefinition()) {
        self.init(kind: kind, span: .pair(from: from, to: to), notes: notes, custom: custom)
    }

    /// The start of a pair stage; nil for a list of versions.
    public var from: String? {
        if case .pair(let from, _) = span { return from }
        return nil
    }

    /// The end of a pair stage; nil for a list of versions.
    public var to: String? {
        if case .pair(_, let to) = span { return to }
        return nil
    }

    /// Every version the stage names (claims, in Core Data's terms).
    public var claimedVersions: [String] {
        switch span {
        case .pair(let from, let to): return [from, to]
        case .versions(let names): return names
        }
    }

    /// `V1 → V2`, or `[V4, V5, V6]`.
    public var spanDescription: String {
        switch span {
        case .pair(let from, let to): return "\(from) → \(to)"
        case .versions(let names): return "[" + names.joined(separator: ", ") + "]"
        }
    }
}
