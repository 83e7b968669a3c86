import Foundation

/// Reads what a backup manifest records about the store from the snapshot: its UUID and the
/// framework version that wrote it. The default, `BackupRunner.readStoreDescription`, reads `Z_UUID` and the framework version from the metadata.
public typealias StoreDescriptionReader = (SQLiteConnection) -> (uuid: String?, frameworkVersion: Int?)

/// How `BackupRunner` takes a backup. The defaults are the safe choice.
public struct BackupOptions: Sendable {
    /// The default backup folder, relative to the current directory: `storerescue-backups`.
    /// Never the store's own folder, which must not get new files by surprise.
    public static let defaultDestinationDirectory = "storerescue-backups"

    /// Where the backup and its manifest go; created (mode 0700) when missing.
    public var destinationDirectory: String
    /// gzip level, 1–9. Default 6 (as `gzip`).
    public var compressionLevel: Int
    /// Keep only the newest N backups of this store (the newest `pre-upgrade` one is always kept).
    /// nil: prune nothing.
    public var keep: Int?
    /// Why the backup is taken: `manual`, `pre-upgrade`, … Recorded in the manifest.
    public var reason: String
    /// How long to wait for a writer that holds the store locked, in seconds.
    public var lockTimeout: TimeInterval
    /// Compressing threads. Default: one per core.
    public var threads: Int
    /// Where the uncompressed snapshot is staged (in a private folder removed afterwards).
    /// nil: inside `destinationDirectory`, so it needs no space anywhere else.
    public var temporaryDirectory: String?
    /// Pages copied per online-backup step.
    public var pagesPerStep: Int
    /// Uncompressed bytes per compressed block.
    public var blockSize: Int
    /// The clock that names and dates the backup (tests pin it).
    public var clock: @Sendable () -> Date

    public init(destinationDirectory: String = BackupOptions.defaultDestinationDirectory,
                compressionLevel: Int = 6,
                keep: Int? = nil,
                reason: String = "manual",
                lockTimeout: TimeInterval = 30,
                threads: Int = ProcessInfo.processInfo.activeProcessorCount,
                temporaryDirectory: String? = nil,
                pagesPerStep: Int = 1024,
                blockSize: Int = 1 << 20,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.destinationDirectory = destinationDirectory
        self.compressionLevel = compressionLevel
        self.keep = keep
        self.reason = reason
        self.lockTimeout = lockTimeout
        self.threads = threads
        self.temporaryDirectory = temporaryDirectory
        self.pagesPerStep = pagesPerStep
        self.blockSize = blockSize
        self.clock = clock
    }
}

/// What a finished backup produced.
public struct BackupResult: Sendable, Equatable {
    /// The compressed backup (`….gz`).
    public var backupPath: String
    /// Its manifest (`….manifest.json`).
    public var manifestPath: String
    public var manifest: BackupManifest
    /// Backups of the same store removed by `keep` (paths of their `.gz`).
    public var prunedBackups: [String]
    /// Wall-clock seconds the backup took.
    public var seconds: Double

    /// Snapshot size ÷ compressed size.
    public var compressionRatio: Double {
        manifest.backupSize > 0 ? Double(manifest.snapshotSize) / Double(manifest.backupSize) : 0
    }
}

/// Where a running backup or restore is, for a progress display.
public struct BackupProgress: Sendable, Equatable {
    public enum Phase: String, Sendable {
        case snapshot, compress, decompress, verify
    }

    public var phase: Phase
    public var completedBytes: Int64
    public var totalBytes: Int64

    public var fraction: Double {
        totalBytes > 0 ? min(1, Double(completedBytes) / Double(totalBytes)) : 0
    }
}
