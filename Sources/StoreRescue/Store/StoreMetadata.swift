import Foundation

/// The content of `Z_METADATA`: the store UUID and every key of its metadata property list,
/// known or not (app-defined keys must survive any rewrite of the metadata).
public struct StoreMetadata: Sendable, Equatable {
    /// `Z_UUID`: the store's UUID (`NSStoreUUID` is not kept in the plist).
    public var uuid: String?
    /// `Z_VERSION` of the row read.
    public var rowVersion: Int64?
    /// Every key of `Z_PLIST`, as decoded.
    public var plist: [String: PropertyListValue]

    public enum Key {
        public static let storeType = "NSStoreType"
        public static let frameworkVersion = "NSPersistenceFrameworkVersion"
        public static let maximumFrameworkVersion = "NSPersistenceMaximumFrameworkVersion"
        public static let versionHashes = "NSStoreModelVersionHashes"
        public static let versionHashesVersion = "NSStoreModelVersionHashesVersion"
        public static let versionIdentifiers = "NSStoreModelVersionIdentifiers"
        public static let hashesDigest = "NSStoreModelVersionHashesDigest"
        public static let versionChecksum = "NSStoreModelVersionChecksumKey"
        public static let autoVacuumLevel = "_NSAutoVacuumLevel"
    }

    public init(uuid: String?, rowVersion: Int64?, plist: [String: PropertyListValue]) {
        self.uuid = uuid
        self.rowVersion = rowVersion
        self.plist = plist
    }

    public var storeType: String? { plist[Key.storeType]?.string }
    public var frameworkVersion: Int64? { Self.number(plist[Key.frameworkVersion]) }
    public var maximumFrameworkVersion: Int64? { Self.number(plist[Key.maximumFrameworkVersion]) }
    public var versionHashesVersion: Int64? { Self.number(plist[Key.versionHashesVersion]) }
    public var hashesDigest: String? { plist[Key.hashesDigest]?.string }
    public var versionChecksum: String? { plist[Key.versionChecksum]?.string }
    public var autoVacuumLevel: String? { plist[Key.autoVacuumLevel]?.string }

    public var versionIdentifiers: [String]? {
        plist[Key.versionIdentifiers]?.array?.compactMap(\.string)
    }

    /// Entity name → 32-byte version hash. Entries that are not data are left out (and reported
    /// by the inspector as malformed).
    public var versionHashes: [String: Data]? {
        guard let dictionary = plist[Key.versionHashes]?.dictionary else { return nil }
        return dictionary.compactMapValues(\.data)
    }

    /// Keys Core Data itself writes; any other key is app-defined or unknown and must be kept.
    public static let frameworkKeys: Set<String> = [
        Key.storeType, Key.frameworkVersion, Key.maximumFrameworkVersion, Key.versionHashes,
        Key.versionHashesVersion, Key.versionIdentifiers, Key.hashesDigest, Key.versionChecksum,
        Key.autoVacuumLevel, "_NSStoreAncillaryModelVersionHashesMetadataKey",
    ]

    /// Numbers may be stored as integers or (in odd writers) as strings or reals.
    static func number(_ value: PropertyListValue?) -> Int64? {
        switch value {
        case .integer(let n): return n
        case .real(let d) where d.isFinite && d.rounded() == d && abs(d) < 1e15: return Int64(d)
        case .string(let s): return Int64(s)
        default: return nil
        }
    }
}

/// What reading `Z_METADATA` found.
enum MetadataReadResult {
    case absent(reason: String)
    case unreadable(uuid: String?, reason: String)
    case read(StoreMetadata, rowCount: Int)
}

extension StoreMetadata {
    /// The largest `Z_PLIST` read: real ones are a few kilobytes.
    public static let maximumPlistBytes: Int64 = 16 << 20

    /// Reads `Z_METADATA`, checking the plist's size before fetching it.
    static func read(from connection: SQLiteConnection) throws -> MetadataReadResult {
        let rows = try connection.rows(
            "SELECT Z_VERSION, Z_UUID, typeof(Z_PLIST), length(Z_PLIST) FROM Z_METADATA ORDER BY Z_VERSION LIMIT 16")
        guard let first = rows.first else { return .absent(reason: "Z_METADATA has no row") }
        let uuid = first[1].string
        let type = first[2].string ?? "null"
        let length = first[3].int64 ?? 0
        guard type == "blob" || type == "text" else {
            return .unreadable(uuid: uuid, reason: "Z_PLIST is \(type == "null" ? "NULL" : "of type \(type)")")
        }
        guard length <= maximumPlistBytes else {
            return .unreadable(uuid: uuid, reason: "Z_PLIST is \(length) bytes, over the \(maximumPlistBytes)-byte limit")
        }
        let blob = try connection.scalar(
            "SELECT CAST(Z_PLIST AS BLOB) FROM Z_METADATA WHERE Z_VERSION IS ?", [first[0]])?.data ?? Data()
        do {
            let value = try BinaryPropertyListDecoder.decode(blob, limits: .storeContent)
            guard let dictionary = value.dictionary else {
                return .unreadable(uuid: uuid, reason: "Z_PLIST is a property list but not a dictionary")
            }
            return .read(StoreMetadata(uuid: uuid, rowVersion: first[0].int64, plist: dictionary), rowCount: rows.count)
        } catch {
            return .unreadable(uuid: uuid, reason: "Z_PLIST cannot be decoded: \(error)")
        }
    }
}
