import Foundation

/// The `Z_METADATA` row Core Data writes for a model version: the store UUID and the metadata
/// property list (format notes §2).
///
/// Keys written, each as the samples show it:
/// - `NSStoreType` `"SQLite"`, `NSStoreModelVersionHashesVersion` 3, `_NSAutoVacuumLevel` `"2"`;
/// - `NSPersistenceFrameworkVersion`: the framework that "wrote" the store (default 1523, the
///   newest in the samples: CartKit, iOS 17/18 era);
/// - `NSStoreModelVersionHashes` (entity → 32-byte hash) and `NSStoreModelVersionIdentifiers`
///   (`[""]` when the model declares none);
/// - `NSStoreModelVersionHashesDigest` from framework 977 (present in every sample from 977 on,
///   absent at 866), `NSStoreModelVersionChecksumKey` from 1333 (present at 1338, absent at
///   1145), `NSPersistenceMaximumFrameworkVersion` (equal to the framework version) from 1523
///   (present at 1523, absent at 1345).
///
/// Every other key passed in `existing` is kept as it is (app-defined keys such as `STUnique`,
/// `_NSStoreAncillaryModelVersionHashesMetadataKey`): restamping a store must not lose them.
/// The keys above are always replaced, and dropped when the framework version predates them, so
/// a stale digest or checksum never survives.
///
/// ```swift
/// let metadata = StoreMetadataWriter.metadata(for: model, versionIdentifiers: ["1.0.0"])
/// let blob = StoreMetadataWriter.encode(metadata.plist)
/// ```
public enum StoreMetadataWriter {
    /// The framework version written unless another is asked for.
    public static let defaultFrameworkVersion = 1523
    /// The first framework versions that write the digest, the checksum and the maximum
    /// framework version.
    public static let firstFrameworkVersionWithDigest = 977
    public static let firstFrameworkVersionWithChecksum = 1333
    public static let firstFrameworkVersionWithMaximum = 1523

    /// The keys this writer owns: always replaced (or dropped), never taken from `existing`.
    public static let writtenKeys: Set<String> = [
        StoreMetadata.Key.storeType, StoreMetadata.Key.frameworkVersion, StoreMetadata.Key.maximumFrameworkVersion,
        StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionIdentifiers,
        StoreMetadata.Key.hashesDigest, StoreMetadata.Key.versionChecksum, StoreMetadata.Key.autoVacuumLevel,
    ]

    /// The metadata dictionary for a store of `model`.
    ///
    /// - Parameters:
    ///   - versionIdentifiers: `NSStoreModelVersionIdentifiers`; nil takes the model's own; an
    ///     empty list (either way) is written `[""]`, as Core Data does.
    ///   - maximumFrameworkVersion: nil writes the framework version from 1523 on and nothing
    ///     before; a value is always written.
    ///   - existing: keys to keep (a store's current metadata, when restamping it).
    public static func plist(
        for model: ManagedObjectModel, versionIdentifiers: [String]? = nil, frameworkVersion: Int = defaultFrameworkVersion,
        maximumFrameworkVersion: Int? = nil, preserving existing: [String: PropertyListValue] = [:]
    ) -> [String: PropertyListValue] {
        plist(
            versionHashes: EntityVersionHasher.versionHashes(for: model),
            versionIdentifiers: versionIdentifiers ?? model.versionIdentifiers, frameworkVersion: frameworkVersion,
            maximumFrameworkVersion: maximumFrameworkVersion, preserving: existing)
    }

    /// The metadata dictionary for precomputed version hashes.
    public static func plist(
        versionHashes: [String: Data], versionIdentifiers: [String], frameworkVersion: Int = defaultFrameworkVersion,
        maximumFrameworkVersion: Int? = nil, preserving existing: [String: PropertyListValue] = [:]
    ) -> [String: PropertyListValue] {
        var plist = existing.filter { !writtenKeys.contains($0.key) }
        plist[StoreMetadata.Key.storeType] = .string("SQLite")
        plist[StoreMetadata.Key.frameworkVersion] = .integer(Int64(frameworkVersion))
        if let maximum = maximumFrameworkVersion ?? (frameworkVersion >= firstFrameworkVersionWithMaximum ? frameworkVersion : nil) {
            plist[StoreMetadata.Key.maximumFrameworkVersion] = .integer(Int64(maximum))
        }
        plist[StoreMetadata.Key.versionHashes] = .dictionary(versionHashes.mapValues(PropertyListValue.data))
        plist[StoreMetadata.Key.versionHashesVersion] = .integer(3)
        plist[StoreMetadata.Key.versionIdentifiers] = .array((versionIdentifiers.isEmpty ? [""] : versionIdentifiers).map(PropertyListValue.string))
        if frameworkVersion >= firstFrameworkVersionWithDigest {
            plist[StoreMetadata.Key.hashesDigest] = .string(EntityVersionHasher.hashesDigest(versionHashes))
        }
        if frameworkVersion >= firstFrameworkVersionWithChecksum {
            plist[StoreMetadata.Key.versionChecksum] = .string(EntityVersionHasher.versionChecksum(versionHashes))
        }
        plist[StoreMetadata.Key.autoVacuumLevel] = .string("2")
        return plist
    }

    /// The whole `Z_METADATA` row: `Z_VERSION` 1, `Z_UUID` (upper case, hyphenated) and the plist.
    public static func metadata(
        for model: ManagedObjectModel, versionIdentifiers: [String]? = nil, uuid: UUID = UUID(),
        frameworkVersion: Int = defaultFrameworkVersion, maximumFrameworkVersion: Int? = nil,
        preserving existing: [String: PropertyListValue] = [:]
    ) -> StoreMetadata {
        StoreMetadata(
            uuid: uuid.uuidString.uppercased(), rowVersion: 1,
            plist: plist(
                for: model, versionIdentifiers: versionIdentifiers, frameworkVersion: frameworkVersion,
                maximumFrameworkVersion: maximumFrameworkVersion, preserving: existing))
    }

    /// `Z_PLIST`: the dictionary as a binary property list (`bplist00`).
    public static func encode(_ plist: [String: PropertyListValue]) -> Data {
        BinaryPropertyListEncoder.encode(.dictionary(plist))
    }
}
