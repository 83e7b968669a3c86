/// How a store gets from its version to a target version: the hops, in order, and every
/// problem that stops it — computed from the catalog's stages alone, before any data is read.
///
/// One plan serves `match` (its diagnosis renders it) and `migrate` / `upgrade` (they run it),
/// so the prediction and the migration can never disagree.
///
/// ```swift
/// let plan = StagePlanner.plan(catalog: catalog, from: "V1", to: nil)
/// if plan.refusals.isEmpty { for hop in plan.hops { print(hop.summary) } }
/// ```
public struct MigrationPlan: Sendable, Equatable {
    /// Why the plan ends where it does.
    public enum TargetChoice: String, Sendable, Codable {
        /// `--to` named it.
        case requested
        /// The latest version the catalog's stages reach (Core Data's rule, seed 001 #9).
        case endOfStages
        /// No stages: the catalog's current version (else its last), as automatic migration does.
        case catalogLatest
    }

    public var sourceVersion: String
    public var targetVersion: String
    public var targetChoice: TargetChoice
    /// True when the catalog declares stages: the app migrates with `NSStagedMigrationManager`
    /// (which recognises a store by its version checksum); false: automatic lightweight
    /// migration, which recognises it by its entity hashes.
    public var isStaged: Bool
    public var hops: [MigrationHop]
    /// Everything wrong with the plan for this store; errors stop it (`refusals`).
    public var issues: [PlanIssue]
    /// Facts worth saying (the target differs from the catalog's current version, …).
    public var notes: [String]

    public init(
        sourceVersion: String, targetVersion: String, targetChoice: TargetChoice, isStaged: Bool, hops: [MigrationHop],
        issues: [PlanIssue], notes: [String]
    ) {
        self.sourceVersion = sourceVersion
        self.targetVersion = targetVersion
        self.targetChoice = targetChoice
        self.isStaged = isStaged
        self.hops = hops
        self.issues = issues
        self.notes = notes
    }

    /// The issues that stop this migration.
    public var refusals: [PlanIssue] { issues.filter { $0.severity == .error } }

    /// True when the store is already at the target: nothing to do.
    public var isAtTarget: Bool { sourceVersion == targetVersion && refusals.isEmpty }
}

/// One step of a plan: an inferred mapping from one version to another, or a custom stage.
public struct MigrationHop: Sendable, Equatable {
    /// Where the hop comes from.
    public enum Origin: String, Sendable, Codable {
        /// A stage the catalog declares.
        case stage
        /// An inferred hop that brings the store to the start of the next custom or pair stage
        /// after a lightweight stage (seed 001 #5: V6 → V7 before the custom V7 → V8).
        case bridge
        /// No stages: Core Data's automatic lightweight migration, one hop to the target.
        case automatic
    }

    public var from: String
    public var to: String
    public var kind: CatalogStage.Kind
    public var origin: Origin
    /// The catalog stage this hop runs (`stages[2]`); nil for bridges and automatic hops.
    public var stage: String?
    /// The custom stage's steps (empty for a lightweight hop).
    public var custom: CustomStageDefinition

    public init(from: String, to: String, kind: CatalogStage.Kind, origin: Origin, stage: String? = nil, custom: CustomStageDefinition = CustomStageDefinition()) {
        self.from = from
        self.to = to
        self.kind = kind
        self.origin = origin
        self.stage = stage
        self.custom = custom
    }

    /// `V1 → V2 (custom, stages[0])`.
    public var summary: String {
        let how: String
        switch origin {
        case .stage: how = "\(kind.rawValue), \(stage ?? "stage")"
        case .bridge: how = "lightweight, inferred before \(stage ?? "the next stage")"
        case .automatic: how = "lightweight, automatic: no stage declared"
        }
        return "\(from) → \(to) (\(how))"
    }
}

/// A problem with a migration plan, named the way Core Data would fail on the device.
public struct PlanIssue: Sendable, Equatable, Codable {
    public enum Severity: String, Sendable, Codable {
        /// The migration cannot run (on the device it would fail).
        case error
        /// Worth knowing; does not stop this migration.
        case warning
    }

    /// Stable codes, part of the JSON contract.
    public enum Code: String, Sendable, Codable {
        /// A version is named by two stages (seed 001 #5): "duplicate version checksums".
        case versionClaimedTwice
        /// A custom or pair stage starts later than the previous stage ends, with no
        /// lightweight stage (even `[]`) between them (seed 001 #6): Core Data skips it.
        case stageNotReachable
        /// Stages must go forward in the order given.
        case stagesOutOfOrder
        /// Two versions named by the stages have the same checksum.
        case duplicateChecksums
        /// A catalog version no stage names: stores at it fail with 134504 (seed 001 #7).
        case versionNotInStages
        /// The app's current version is named by no stage (seed 001 #7).
        case currentVersionNotInStages
        /// The store's own version is named by no stage: 134504.
        case storeVersionNotInStages
        /// The stages cannot take the store to the target.
        case targetUnreachable
        /// The store is newer than the target: never downgrade.
        case storeNewerThanTarget
        /// The version named by `--from`/`--to` is not in the catalog.
        case unknownVersion
    }

    public var severity: Severity
    public var code: Code
    /// The stage concerned (`stages[2]`), when one; `null` in JSON when none (the key is always
    /// there: `Docs/JSON-OUTPUT.md`).
    @NullEncoded public var stage: String?
    /// What is wrong.
    public var message: String
    /// What Core Data / SwiftData does with it on the device.
    public var onDevice: String

    public init(_ severity: Severity, _ code: Code, stage: String? = nil, _ message: String, onDevice: String) {
        self.severity = severity
        self.code = code
        self.stage = stage
        self.message = message
        self.onDevice = onDevice
    }
}
