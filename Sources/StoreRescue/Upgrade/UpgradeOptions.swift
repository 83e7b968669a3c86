import Foundation

/// How `StoreUpgrader` runs. The defaults are `storerescue upgrade`'s.
public struct UpgradeOptions: Sendable {
    /// What to do when the store cannot be saved (damaged, of no known version, a plan that
    /// refuses it).
    public enum FailurePolicy: String, Sendable, Codable, CaseIterable {
        /// Change nothing; report why and what to try.
        case keep
        /// Quarantine the store (moved, never deleted), create a clean store of the target
        /// version at its path, salvage every readable row into it, write an incident report.
        case clean
    }

    /// What the run does.
    public enum Mode: Sendable, Equatable {
        /// Both phases: adopt when needed, then migrate to the target.
        case upgrade
        /// Phase 1 alone (`adopt`): stamp the store as the version it is (`as`: nil takes
        /// what `match` finds).
        case adopt(as: String?)
    }

    public var mode: Mode

    /// `adopt`: phase 1 alone.
    public var isAdoptOnly: Bool {
        if case .adopt = mode { return true }
        return false
    }

    /// The version to upgrade to; nil: the latest the plan reaches.
    public var targetVersion: String?
    /// The store's version, overriding what `match` finds (an ambiguous store).
    public var sourceVersion: String?
    /// Where the pre-upgrade backup goes (and the quarantine, on a fallback); created when
    /// missing; never the store's own folder.
    public var backupDirectory: String
    public var onFailure: FailurePolicy
    /// Plan and predict; write nothing anywhere.
    public var isDryRun: Bool
    /// How long to wait for another process to close the store, at the start and before the
    /// swap, in seconds.
    public var lockTimeout: TimeInterval
    /// The upgraded store and the backup's snapshot get the full `integrity_check` (default),
    /// not `quick_check`.
    public var fullIntegrityCheck: Bool
    /// gzip level of the backup.
    public var compressionLevel: Int
    /// Keep only the newest N backups of the store (the newest pre-upgrade one always stays).
    public var keepBackups: Int?
    /// Swift code for custom stages (the catalog's own steps run without it).
    public var handlers: [CustomStageHandlers]

    public init(
        mode: Mode = .upgrade, targetVersion: String? = nil, sourceVersion: String? = nil,
        backupDirectory: String = BackupOptions.defaultDestinationDirectory, onFailure: FailurePolicy = .keep, isDryRun: Bool = false,
        lockTimeout: TimeInterval = 30, fullIntegrityCheck: Bool = true, compressionLevel: Int = 6, keepBackups: Int? = nil,
        handlers: [CustomStageHandlers] = []
    ) {
        self.mode = mode
        self.targetVersion = targetVersion
        self.sourceVersion = sourceVersion
        self.backupDirectory = backupDirectory
        self.onFailure = onFailure
        self.isDryRun = isDryRun
        self.lockTimeout = lockTimeout
        self.fullIntegrityCheck = fullIntegrityCheck
        self.compressionLevel = compressionLevel
        self.keepBackups = keepBackups
        self.handlers = handlers
    }
}

/// Where an upgrade is, for a progress display.
public struct UpgradeProgress: Sendable, Equatable {
    public enum Phase: String, Sendable, Codable, CaseIterable {
        case read, backup, adopt, migrate, verify, publish, fallback
    }

    public var phase: Phase
    /// 0…1 within the phase, when known.
    public var fraction: Double?
}
