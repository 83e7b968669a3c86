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
    /// The option that chose `destinationDirectory`, named by an error about that folder
    /// (`backup --to`; `upgrade --backup-dir`, `restore --backups-dir` for the backups they take).
    public var destinationOption: FolderOption = .backupDestination
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
    /// Keep the uncompressed snapshot (in its private folder) and hand it over in
    /// `BackupResult.snapshot`: `upgrade` migrates exactly the bytes it backed up and checks,
    /// before replacing the store, that the store still is that snapshot page for page.
    public var retainsSnapshot = false
    /// The backup is the command's final result (`backup`), recorded as such once published
    /// (`PublishedResult`), unless it is taken on the way to another (`upgrade`'s, the one
    /// `restore --force` takes of the store it replaces): then false.
    var isFinalResult = true

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
    /// What `keep` could not weigh, and so kept (`BackupRetention.Pruning.notes`): the folder
    /// not listed, a manifest not opened for want of a file descriptor. The backup itself
    /// succeeded; these say old backups may remain that `keep` would have removed.
    public var retentionNotes: [String]
    /// Wall-clock seconds the backup took.
    public var seconds: Double
    /// The uncompressed snapshot, when `BackupOptions.retainsSnapshot` asked for it.
    public var snapshot: RetainedSnapshot?

    public init(backupPath: String, manifestPath: String, manifest: BackupManifest, prunedBackups: [String],
                retentionNotes: [String] = [], seconds: Double, snapshot: RetainedSnapshot? = nil) {
        self.backupPath = backupPath
        self.manifestPath = manifestPath
        self.manifest = manifest
        self.prunedBackups = prunedBackups
        self.retentionNotes = retentionNotes
        self.seconds = seconds
        self.snapshot = snapshot
    }

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

/// A backup's uncompressed snapshot, kept in its private folder (locked, swept if a killed run
/// leaves it) for as long as this value lives; the folder is removed when it is released.
public final class RetainedSnapshot: @unchecked Sendable, Equatable {
    /// The snapshot file: a closed, consistent SQLite database (rollback or WAL header, no sidecars).
    public let path: String
    /// Its SHA-256, as recorded in the manifest.
    public let sha256: String
    public let pageSize: Int
    public let pageCount: Int
    private let folder: PrivateTemporaryDirectory

    init(folder: PrivateTemporaryDirectory, path: String, sha256: String, pageSize: Int, pageCount: Int) {
        self.folder = folder
        self.path = path
        self.sha256 = sha256
        self.pageSize = pageSize
        self.pageCount = pageCount
    }

    /// The snapshot's private folder (scratch space on the backup's file system).
    public var folderPath: String { folder.path }

    /// Removes the snapshot and its folder now.
    public func remove() { folder.remove() }

    public static func == (lhs: RetainedSnapshot, rhs: RetainedSnapshot) -> Bool { lhs.path == rhs.path }
}
