import Foundation

/// What `upgrade` or `adopt` did (or, with `--dry-run`, would do). Its JSON encoding is the
/// contract in `Docs/JSON-OUTPUT.md#storerescue-upgrade---json`: field names never change.
public struct UpgradeReport: Sendable, Encodable {
    /// The outcome. A dry run reports the outcome the run would have.
    public enum Status: String, Sendable, Encodable {
        /// Adopted when needed, migrated, verified and published. With `error` set (exit 70): put
        /// in place, then the check of the store at its path failed; the store is the new one.
        case upgraded
        /// Only phase 1 was needed: the store was stamped as the version it is (the target). With
        /// `error` set, as `upgraded`.
        case adoptedOnly
        /// Already exactly at the target, metadata included: nothing written.
        case alreadyCurrent
        /// The store cannot be saved and `--on-failure keep`: nothing changed.
        case refused
        /// The store cannot be saved: quarantined, a clean store in its place, rows salvaged.
        case fellBackToClean
        /// Stopped on an error (`error` says which); the store is the original.
        case failed
    }

    /// One phase of the run, in order.
    public struct Phase: Sendable, Encodable, Equatable {
        public var name: String
        /// `done`, `skipped`, `predicted` (dry run), `failed`.
        public var status: String
        public var seconds: Double
        public var detail: String
    }

    /// The pre-upgrade backup.
    public struct Backup: Sendable, Encodable, Equatable {
        /// `snapshot` (compressed, with a manifest) or `raw` (the files as they are, for a store
        /// SQLite cannot read).
        public var kind: String
        public var path: String
        @NullEncoded public var manifest: String?
        @NullEncoded public var sha256: String?
        @NullEncoded public var snapshotSHA256: String?
        public var size: Int64
        public var snapshotSize: Int64
        /// True once verified (gzip stream, both sums, integrity check; raw: each copy's SHA-256
        /// equal to its original's).
        public var verified: Bool
        @NullEncoded public var integrityCheck: String?
        public var seconds: Double
    }

    /// The store as published.
    public struct Published: Sendable, Encodable, Equatable {
        public var path: String
        public var version: String
        /// What `match` says of the published store: `exact`, or `newer` for a target after the
        /// catalog's current version (`--to`), the store having its hashes exactly.
        public var matchOutcome: String
        public var rowsByEntity: [String: Int64]
        /// Sidecars whose content was folded into the old store before it was replaced.
        public var settledSidecars: [String]
        /// A spent `-journal` of the old store (empty or zeroed: TRUNCATE or PERSIST journal
        /// mode) removed under the replacement's lock; it held nothing.
        @NullEncoded public var removedSpentJournal: String? = nil
    }

    /// `upgrade` or `adopt`.
    public var command: String
    public var store: String
    public var catalog: String
    public var dryRun: Bool
    public var status: Status
    @NullEncoded public var source: MigrationReport.Source?
    @NullEncoded public var target: MigrationReport.Target?
    public var phases: [Phase]
    @NullEncoded public var backup: Backup?
    /// Phase 1: how the store's metadata is (or would be) stamped; null when it was not read.
    @NullEncoded public var adoption: AdoptionStamp?
    /// Phase 2: the plan, hops, counts and (once written) the result — `migrate`'s own report.
    @NullEncoded public var migration: MigrationReport?
    /// Why the store cannot be saved (empty otherwise).
    public var refusals: [MigrationRefusal]
    @NullEncoded public var published: Published?
    /// The fallback's incident report, when the store fell back (or would) to a clean one.
    @NullEncoded public var fallback: IncidentReport?
    /// Leftovers of earlier, interrupted runs that this run found and dealt with.
    public var recovered: [String]
    public var notes: [String]
    public var seconds: Double
    @NullEncoded public var error: ErrorSummary?

    /// 0 upgraded, 2 already current, 3 refused, 4 adopted only, 5 fell back to clean; an
    /// error's own status.
    public var exitStatus: ExitStatus {
        if let error { return ExitStatus(rawValue: error.exitStatus) ?? .internalError }
        switch status {
        case .upgraded: return .success
        case .adoptedOnly: return .adoptedOnly
        case .alreadyCurrent: return .nothingToDo
        case .refused: return .refused
        case .fellBackToClean: return .fellBackToClean
        case .failed: return .internalError
        }
    }

    init(command: String, store: String, catalog: String, dryRun: Bool) {
        self.command = command
        self.store = store
        self.catalog = catalog
        self.dryRun = dryRun
        status = .failed
        phases = []
        refusals = []
        recovered = []
        notes = []
        seconds = 0
    }

    mutating func addPhase(_ phase: UpgradeProgress.Phase, _ status: String, since start: Date, _ detail: String) {
        phases.append(Phase(name: phase.rawValue, status: status, seconds: Date().timeIntervalSince(start), detail: detail))
    }
}
