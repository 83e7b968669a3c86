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
        /// Where the stage is in the catalog file (`stages[2]`).
        public var stage: String
        public var kind: String
        /// A pair stage's ends; null for a list of versions.
        @NullEncoded public var from: String?
        @NullEncoded public var to: String?
        /// A lightweight stage's list of versions; null for a pair.
        @NullEncoded public var versions: [String]?
        /// The custom steps it declares, counted: `willMigrate`, `map` (assignments), `create`, `didMigrate`.
        public var steps: Steps
        @NullEncoded public var notes: String?
    }

    public struct Steps: Sendable, Encodable, Equatable {
        public var willMigrate: Int
        public var map: Int
        public var create: Int
        public var didMigrate: Int
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
    /// What is wrong with the stages as a migration plan (errors fail on the device for every
    /// store; warnings for stores at some versions): `StagePlanner.issues(in:)`.
    public var planIssues: [PlanIssue]
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
        stages = catalog.stages.map { stage in
            var versions: [String]?
            if case .versions(let names) = stage.span { versions = names }
            let steps = Steps(
                willMigrate: stage.custom.willMigrate.count, map: stage.custom.map.map(\.assignments.count).reduce(0, +),
                create: stage.custom.create.count, didMigrate: stage.custom.didMigrate.count)
            return Stage(
                stage: stage.jsonPath, kind: stage.kind.rawValue, from: stage.from, to: stage.to, versions: versions, steps: steps,
                notes: stage.notes)
        }
        planIssues = StagePlanner.issues(in: catalog)
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
        planIssues = []
        warnings = []
        self.error = ErrorSummary(error)
    }

    /// 0 when loaded with a plan Core Data can run; 1 (check failed) when the stages would fail
    /// on the device; the loading error's status otherwise.
    public var exitStatus: ExitStatus {
        guard let error else { return planIssues.contains { $0.severity == .error } ? .checkFailed : .success }
        return ExitStatus(rawValue: error.exitStatus) ?? .internalError
    }

    /// The report for people.
    public func renderText() -> String {
        var out = TextTableWriter()
        out.line("\(path)")
        if let error {
            out.error(error)
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
        if stages.isEmpty { out.line("  none declared: the app migrates automatically (one inferred hop to the current version)") }
        out.table(stages.map { stage in
            let span = stage.versions.map { "[" + $0.joined(separator: ", ") + "]" } ?? "\(stage.from ?? "") → \(stage.to ?? "")"
            let steps = [("willMigrate", stage.steps.willMigrate), ("map", stage.steps.map), ("create", stage.steps.create), ("didMigrate", stage.steps.didMigrate)]
                .filter { $0.1 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
            return ["  " + span, stage.kind, steps, stage.notes ?? ""]
        })
        if !stages.isEmpty {
            out.section("Plan")
            if planIssues.isEmpty { out.line("  ok: Core Data can run these stages") }
            for issue in planIssues {
                out.line("  \(issue.severity.rawValue): \(issue.stage.map { "\($0): " } ?? "")\(issue.message)")
                out.line("    on the device: \(issue.onDevice)")
            }
        }
        out.section("Warnings")
        if warnings.isEmpty { out.line("  none") }
        for warning in warnings { out.line("  warning: \(warning)") }
        return out.text
    }
}
