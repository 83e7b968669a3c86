import Foundation

/// What `storerescue catalog show` prints: every version in order with its identity (the
/// contract of `--json` is in Docs/CATALOG.md; field names never change).
public struct CatalogReport: Sendable, Encodable, Equatable {
    public struct Version: Sendable, Encodable, Equatable {
        public var name: String
        /// `xcdatamodel`, `mom`, `store` or `inline`.
        public var origin: String
        @NullEncoded public var sourcePath: String?
        /// `NSStoreModelVersionIdentifiers` the version stamps.
        public var versionIdentifiers: [String]
        public var isCurrent: Bool
        public var entityCount: Int
        public var versionChecksum: String
        public var hashesDigest: String
        /// Entities by code-point order of name, each with its base64 version hash.
        public var entities: [Entity]
        /// Other versions with the same checksum.
        public var sameChecksumAs: [String]
    }

    public struct Entity: Sendable, Encodable, Equatable {
        public var name: String
        public var versionHash: String
    }

    public struct Stage: Sendable, Encodable, Equatable {
        public var from: String
        public var to: String
        public var kind: String
        @NullEncoded public var notes: String?
    }

    /// Versions a staged migration could not tell apart.
    public struct DuplicateChecksum: Sendable, Encodable, Equatable {
        public var versionChecksum: String
        public var versions: [String]
    }

    public typealias ErrorSummary = StoreRescue.ErrorSummary

    public var path: String
    @NullEncoded public var app: String?
    @NullEncoded public var currentVersion: String?
    @NullEncoded public var latestVersion: String?
    public var versions: [Version]
    public var stages: [Stage]
    public var duplicateChecksums: [DuplicateChecksum]
    public var warnings: [String]
    @NullEncoded public var error: ErrorSummary?

    public init(catalog: Catalog, path: String) {
        self.path = path
        app = catalog.name
        currentVersion = catalog.currentVersionName
        latestVersion = catalog.latest?.name
        versions = catalog.versions.map { version in
            Version(
                name: version.name, origin: version.origin, sourcePath: version.sourcePath,
                versionIdentifiers: version.versionIdentifiers, isCurrent: version.name == catalog.currentVersionName,
                entityCount: version.model.entities.count, versionChecksum: version.versionChecksum, hashesDigest: version.hashesDigest,
                entities: EntityVersionHasher.sortedByCodePoint(version.versionHashes).map { Entity(name: $0.key, versionHash: $0.value.base64EncodedString()) },
                sameChecksumAs: catalog.versions.filter { $0.name != version.name && $0.versionChecksum == version.versionChecksum }.map(\.name))
        }
        stages = catalog.stages.map { Stage(from: $0.from, to: $0.to, kind: $0.kind.rawValue, notes: $0.notes) }
        let order = Dictionary(uniqueKeysWithValues: catalog.versions.enumerated().map { ($0.element.name, $0.offset) })
        duplicateChecksums = catalog.duplicateChecksums
            .map { names in names.sorted { (order[$0] ?? 0) < (order[$1] ?? 0) } }
            .sorted { (order[$0.first ?? ""] ?? 0) < (order[$1.first ?? ""] ?? 0) }
            .map { names in DuplicateChecksum(versionChecksum: catalog.version(named: names[0])?.versionChecksum ?? "", versions: names) }
        warnings = duplicateChecksums.map { group in
            "versions \(group.versions.map { "\"\($0)\"" }.joined(separator: ", ")) have the same checksum: they differ only outside the version hashes (default values, indexes, delete rules, names of classes), so a staged migration cannot tell them apart"
        }
        if catalog.versions.isEmpty { warnings.append("the catalog has no version") }
        error = nil
    }

    /// The report for an input that could not be loaded.
    public init(failedPath path: String, error: any OperatorFacingError) {
        self.path = path
        app = nil
        currentVersion = nil
        latestVersion = nil
        versions = []
        stages = []
        duplicateChecksums = []
        warnings = []
        self.error = ErrorSummary(error)
    }

    public var exitStatus: ExitStatus {
        guard let error else { return .success }
        return ExitStatus(rawValue: error.exitStatus) ?? .internalError
    }

    /// The report for people.
    public func renderText() -> String {
        var out = TextTableWriter()
        out.line("\(path)")
        if let error {
            out.line("Error: \(error.message)")
            if let hint = error.hint { out.line("Try: \(hint)") }
            return out.text
        }
        out.field("App", app ?? "")
        out.field("Versions", "\(versions.count)")
        out.field("Current", currentVersion ?? "not named (the latest is \(latestVersion ?? "none"))")
        for version in versions {
            out.section("Version \(version.name)\(version.isCurrent ? " (current)" : "")")
            out.field("Origin", version.origin + (version.sourcePath.map { " " + $0 } ?? ""))
            out.field("Identifiers", version.versionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", "))
            out.field("Entities", "\(version.entityCount)")
            out.field("Checksum", version.versionChecksum)
            out.field("Digest", version.hashesDigest)
            if !version.sameChecksumAs.isEmpty { out.field("Same checksum", version.sameChecksumAs.joined(separator: ", ")) }
            out.table(version.entities.map { ["    " + $0.name, $0.versionHash] })
        }
        out.section("Stages")
        if stages.isEmpty { out.line("  none declared") }
        out.table(stages.map { ["  \($0.from) → \($0.to)", $0.kind, $0.notes ?? ""] })
        out.section("Warnings")
        if warnings.isEmpty { out.line("  none") }
        for warning in warnings { out.line("  warning: \(warning)") }
        return out.text
    }
}
