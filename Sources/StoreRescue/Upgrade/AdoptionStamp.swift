import Foundation

/// Phase 1 of the two-phase bootstrap (seed 004, `Docs/UPGRADE.md`): a store is stamped as the
/// version it really is — the version hashes, identifiers, digest and checksum that version's
/// Core Data writes, with the app's own keys, the store UUID and everything else kept — so that a
/// staged plan recognises it. Only the metadata changes; tables, rows, keys and the model cache
/// are the store's own.
///
/// A store needs it when any key that names its version differs from what Core Data writes for
/// that version: an unversioned SwiftData store (identifiers `[""]`, no checksum), a store from a
/// framework older than the checksum (1333) or the digest (977), hashes of another hash version.
/// The framework version is raised to at least 1523 (the oldest that writes every key), never
/// lowered.
public struct AdoptionStamp: Sendable, Encodable {
    /// One metadata key the stamp changes.
    public struct Change: Sendable, Encodable, Equatable {
        public var key: String
        /// The store's value, summarised (`absent` when it has none).
        public var before: String
        public var after: String
    }

    /// The version the store is stamped as.
    public var version: String
    /// True when a key that names the version differs (the store is unknown to a staged plan
    /// until it is stamped).
    public var isNeeded: Bool
    /// Every key that changes, in key order (including the framework version, when raised).
    public var changes: [Change]
    /// The whole new metadata dictionary (not encoded: `changes` says what differs).
    var plist: [String: PropertyListValue]

    /// The keys that tell Core Data which version a store is.
    static let identifyingKeys: [String] = [
        StoreMetadata.Key.versionHashes, StoreMetadata.Key.versionHashesVersion, StoreMetadata.Key.versionIdentifiers,
        StoreMetadata.Key.hashesDigest, StoreMetadata.Key.versionChecksum,
    ]

    enum CodingKeys: String, CodingKey { case version, isNeeded = "needed", changes }

    /// The stamp that makes `metadata` (the store's, nil when unreadable) the metadata of `version`.
    init(metadata: StoreMetadata?, version: CatalogVersion) {
        let existing = metadata?.plist ?? [:]
        let frameworkVersion = max(Int(metadata?.frameworkVersion ?? 0), StoreMetadataWriter.defaultFrameworkVersion)
        let stamped = StoreMetadataWriter.plist(
            versionHashes: version.versionHashes, versionIdentifiers: version.versionIdentifiers, frameworkVersion: frameworkVersion,
            preserving: existing)
        self.version = version.name
        plist = stamped
        isNeeded = Self.identifyingKeys.contains { existing[$0] != stamped[$0] }
        changes = StoreMetadataWriter.writtenKeys.sorted().compactMap { key in
            guard existing[key] != stamped[key], let after = stamped[key] else { return nil }
            if key == StoreMetadata.Key.versionHashes, let old = existing[key]?.dictionary, let new = after.dictionary {
                let differing = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }.sorted()
                return Change(
                    key: key, before: Self.summary(.dictionary(old)),
                    after: Self.summary(.dictionary(new)) + " (differ: " + differing.prefix(5).joined(separator: ", ") + (differing.count > 5 ? ", …" : "") + ")")
            }
            return Change(key: key, before: existing[key].map(Self.summary) ?? "absent", after: Self.summary(after))
        }
    }

    /// The stamp of a store left as it is (already current): not needed, no key changed.
    var leftAsItIs: AdoptionStamp {
        var stamp = self
        stamp.isNeeded = false
        stamp.changes = []
        return stamp
    }

    /// Writes the stamp into the `Z_METADATA` row of `file` (a private copy, never the store an
    /// app opens): `Z_PLIST` replaced, `Z_UUID` and `Z_VERSION` kept.
    /// - Parameter store: the path named in errors (the store the file is a copy of).
    func apply(to file: String, reportedAs store: String) throws {
        let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.inTransaction {
            let statement = try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ?")
            try statement.bind([.blob(StoreMetadataWriter.encode(plist))])
            _ = try statement.step()
            guard connection.changes == 1 else {
                throw UpgradeError.metadataRowMissing(path: store, rows: Int(connection.changes))
            }
        }
    }

    /// A value as one short line: strings and numbers as they are, hashes counted.
    static func summary(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let text): return "\"\(TerminalText.capped(text))\""
        case .integer(let number): return String(number)
        case .real(let number): return String(number)
        case .boolean(let flag): return flag ? "true" : "false"
        case .date(let date): return ISO8601DateFormatter().string(from: date)
        case .data(let data): return "\(data.count) bytes"
        case .array(let items): return "[" + items.prefix(4).map(summary).joined(separator: ", ") + (items.count > 4 ? ", …" : "") + "]"
        case .dictionary(let entries):
            return entries.count == 1 ? "hashes of 1 entity" : "hashes of \(entries.count) entities"
        case .uid(let id): return "uid \(id)"
        }
    }
}
