/// How to migrate. The zero value takes the store's own version (from `match`) to the latest
/// version the plan reaches, verifies the result with `quick_check`, and publishes it.
public struct MigrationOptions: Sendable {
    /// The version to end at (`--to`); nil: the latest the plan reaches.
    public var targetVersion: String?
    /// The store's version (`--from`), overriding what `match` found.
    public var sourceVersion: String?
    /// The option that sets `sourceVersion`, as refusals name it in what to try: `--from`
    /// (`adopt`: `--as`).
    public var sourceVersionOption = "--from"
    /// Plan and count, write nothing (`--dry-run`).
    public var isDryRun = false
    public var followsSymlinks = false
    /// `NSPersistenceFrameworkVersion` to stamp; nil: the store's own, raised to 1523 when older
    /// (a migrated store carries the version checksum staged migration needs).
    public var frameworkVersion: Int?
    /// Verify the result with the full `integrity_check` (every index against its table)
    /// instead of `quick_check`.
    public var fullIntegrityCheck = false
    /// Swift handlers for custom stages (library only).
    public var handlers: [CustomStageHandlers] = []

    public init(
        targetVersion: String? = nil, sourceVersion: String? = nil, isDryRun: Bool = false, followsSymlinks: Bool = false,
        frameworkVersion: Int? = nil, fullIntegrityCheck: Bool = false, handlers: [CustomStageHandlers] = []
    ) {
        self.targetVersion = targetVersion
        self.sourceVersion = sourceVersion
        self.isDryRun = isDryRun
        self.followsSymlinks = followsSymlinks
        self.frameworkVersion = frameworkVersion
        self.fullIntegrityCheck = fullIntegrityCheck
        self.handlers = handlers
    }
}

/// Progress of a migration, for a progress bar.
public struct MigrationProgress: Sendable {
    public enum Phase: String, Sendable {
        case reading, analysing, writing, indexing, verifying
    }

    public var phase: Phase
    /// Steps done and to do in this phase (tables written, checks run).
    public var completed: Int
    public var total: Int

    public var fraction: Double { total > 0 ? min(1, Double(completed) / Double(total)) : 0 }
}
