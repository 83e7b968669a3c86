import Foundation

/// What `match` concluded about a store against a catalog. Its JSON encoding is a stable
/// contract (`Docs/JSON-OUTPUT.md`): field names never change.
public struct MatchResult: Sendable, Encodable {
    public enum Outcome: String, Sendable, Codable {
        /// One version fits (its hashes are the store's); physical drift is still listed.
        case exact
        /// Several versions fit equally; all are listed.
        case ambiguous
        /// No version fits exactly; `version` is the nearest, with every difference.
        case drifted
        /// The store has what no known version has: never downgrade or restamp it.
        case newer
        /// No known version is close.
        case unknown
        /// The input is not a Core Data / SwiftData store.
        case notCoreData
    }

    public var path: String
    public var catalog: String
    public var outcome: Outcome
    /// The matched or nearest version's name, or nil.
    @NullEncoded public var version: String?
    /// Every version, best first.
    public var candidates: [MatchCandidate]
    /// The versions whose entity hashes the store has exactly: one for `exact` (or `newer` at a
    /// version after the catalog's current one), several for `ambiguous`, none otherwise.
    public var versionsWithItsHashes: [String] { candidates.filter(\.hashesMatch).map(\.version) }
    public var diagnosis: Diagnosis
    /// The store's kind as `inspect` classified it; `damaged` too when reading it for the
    /// diagnosis met pages SQLite cannot read (the prediction is then `storeDamaged`).
    public var storeKind: StoreKind
    /// Set when the store could not be read, or was read only in part: found damaged, when the
    /// match made before the damage was met is kept.
    @NullEncoded public var error: InspectionReport.ErrorSummary?
}

/// One version of the catalog weighed against the store.
public struct MatchCandidate: Sendable, Encodable {
    public var version: String
    /// 0…1: how much of the evidence agrees (1 is a perfect fit).
    public var score: Double
    /// The store's stored hashes equal this version's, entity for entity.
    public var hashesMatch: Bool
    /// The store's stored checksum equals this version's (false when the store has none).
    public var checksumMatches: Bool
    /// Entities whose stored hash equals this version's, out of all entities either side names.
    public var matchingEntities: Int
    public var totalEntities: Int
    public var differences: [Difference]
}

/// One way a store differs from a version.
public struct Difference: Sendable, Encodable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case entityOnlyInStore, entityOnlyInVersion, entityHashDiffers
        case checksumMissing, checksumDiffers, identifiersDiffer
        case tableMissing, tableExtra, columnMissing, columnExtra, columnTypeDiffers
        case indexMissing, indexExtra, indexDiffers
        case modelCacheDiffers
        case nullsInRequiredColumn
    }

    /// How much it matters to opening and using the store with this version.
    public enum Impact: String, Sendable, Codable {
        /// Core Data would not notice, or only performance changes (an index).
        case benign
        /// Fetches or saves would fail, or data would be lost, if the store were used as this version.
        case blocking
        /// Identity evidence (hashes, checksum), not a physical problem by itself.
        case identity
    }

    public var kind: Kind
    public var impact: Impact
    @NullEncoded public var entity: String?
    @NullEncoded public var table: String?
    @NullEncoded public var column: String?
    public var detail: String
}

/// What the app's latest version will do when it opens this store, and what to do about it.
public struct Diagnosis: Sendable, Encodable {
    public enum Prediction: String, Sendable, Codable {
        /// The latest version opens it as is.
        case opensAsIs
        /// A staged migration takes it through `stages` to the latest version.
        case migrates
        /// Fails with 134504 "Cannot use staged migration with an unknown model version".
        case unknownModelVersion
        /// Fails with 134110 "missing attribute values on mandatory destination attribute".
        case mandatoryAttributeWithoutValue
        /// The store is newer than every known version: the app must refuse it.
        case refusesNewerStore
        /// Several versions cannot be told apart (duplicate checksums).
        case ambiguousVersion
        /// A change on the way cannot be inferred (a type change whose values do not convert,
        /// merged hierarchies, a to-many with several links becoming a to-one): 134140.
        case migrationNotInferable
        /// The catalog's stages are a plan Core Data cannot run (a version in two stages, a
        /// custom stage not reachable, duplicate checksums, …).
        case stagePlanFails
        /// Not a Core Data store, or nothing known is close: no prediction.
        case cannotPredict
        /// Reading the store met pages SQLite cannot read (`SQLITE_CORRUPT`, `SQLITE_NOTADB`):
        /// the app fails on it whatever its version; salvage it, or `upgrade --on-failure clean`.
        /// The version matched before the damage was met is kept (`outcome`, `version`).
        case storeDamaged
    }

    public var prediction: Prediction
    /// The Core Data error code the app would report (134504, 134110), when one.
    @NullEncoded public var errorCode: Int?
    /// One sentence for people.
    public var summary: String
    /// The reasons and the evidence, one per line.
    public var reasons: [String]
    /// The version to stamp the store as before migrating (two-phase bootstrap), when that is the fix.
    @NullEncoded public var adoptAs: String?
    /// The stages from the store's version to the latest (`"V1 → V2 (lightweight)"`).
    public var stages: [String]
    /// Entity, attribute and row count for each 134110 cause.
    public var mandatoryAttributes: [MandatoryAttributeProblem]
    /// Everything that stops the migration, as `migrate` reports it (same plan, same checks).
    public var refusals: [MigrationRefusal] = []
}

/// A required attribute (with no default) or required relationship a later version adds while
/// rows exist: a lightweight step leaves it empty and the save fails with 134110.
public struct MandatoryAttributeProblem: Sendable, Encodable, Equatable {
    public var version: String
    public var entity: String
    /// The attribute's (or relationship's) name.
    public var attribute: String
    public var rowCount: Int64
    /// `attribute` or `relationship`.
    public var kind: String = "attribute"
}

extension MatchResult {
    /// The exit status `match` ends with: 0 whenever the store was read and weighed (whatever the
    /// outcome), otherwise the status `inspect` gives the input (65 for a store found damaged,
    /// even once identified).
    public var exitStatus: ExitStatus {
        if let error { return ExitStatus(rawValue: error.exitStatus) ?? .internalError }
        return .success
    }
}
