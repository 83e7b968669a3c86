/// Everything decided before a migration writes: which version the store is and how that was
/// decided, the plan, each hop's mapping, what the data says (counts, discarded data,
/// refusals). `migrate --dry-run` prints it; `migrate` and `upgrade` write from it.
public struct MigrationPreparation: Sendable {
    /// How the store's version was decided.
    public enum SourceChoice: String, Sendable, Codable {
        /// `match` found the version exactly.
        case matched
        /// `match` found no exact version but a benign fit (a hash-less store): its `adoptAs`.
        case adopted
        /// `--from` named it.
        case requested
    }

    public var match: MatchResult
    public var sourceVersion: String?
    public var sourceChoice: SourceChoice?
    public var plan: MigrationPlan?
    public var mappings: [HopMapping]
    public var analysis: MigrationAnalysis?
    /// Everything that stops the migration: the plan's, the models', the data's.
    public var refusals: [MigrationRefusal]
    /// Facts worth saying (the version was overridden, the target differs from current, …).
    public var notes: [String]
    /// A dry run's forecast: required values the store already lacks, which the migration
    /// carries as they are (empty for a real run, whose verification reports them).
    public var requiredValuesAlreadyMissing: [MigrationReport.MissingValues] = []

    /// True when the store is already at the target.
    public var isAtTarget: Bool { refusals.isEmpty && plan?.isAtTarget == true }
}
