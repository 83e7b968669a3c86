/// A folder a command writes into, and the command-line option that chooses it, so that an
/// error about the folder names both rightly.
///
/// Each command names its folders with its own option: `backup --to`, `upgrade` and `adopt
/// --backup-dir`, `restore --backups-dir`, `verify --temp-dir`. An error that said "with --to"
/// for all of them sent a `restore` into "it is a folder" and an `upgrade` into "the catalog has
/// no version …" (`upgrade --to` is a version; review rv8 #4).
///
/// ```swift
/// var options = BackupOptions(destinationDirectory: "/backups")
/// options.destinationOption = .upgradeBackupDirectory
/// ```
public struct FolderOption: Sendable, Equatable {
    /// What the folder is for, as an error names it: `backup folder`, `temporary folder`.
    public var role: String
    /// The option that chooses it: `--to`, `--backup-dir`, `--backups-dir`, `--temp-dir`.
    public var option: String

    public init(role: String, option: String) {
        self.role = role
        self.option = option
    }

    /// `backup --to DIR`.
    public static let backupDestination = FolderOption(role: "backup folder", option: "--to")
    /// `upgrade`/`adopt --backup-dir DIR`: the pre-upgrade backup and the quarantine.
    public static let upgradeBackupDirectory = FolderOption(role: "backup folder", option: "--backup-dir")
    /// `restore --backups-dir DIR`: the backup (or raw copy) of the store a forced restore replaces.
    public static let restoreBackupsDirectory = FolderOption(role: "backup folder", option: "--backups-dir")
    /// `verify --temp-dir DIR`: where the snapshot is decompressed to be checked.
    public static let verifyTemporaryDirectory = FolderOption(role: "temporary folder", option: "--temp-dir")
    /// `$TMPDIR`: where a command makes its private copies and scratch files when no option
    /// names a folder (`inspect`'s copy of a store with a `-wal`, `verify` without `--temp-dir`).
    public static let temporaryDirectoryVariable = FolderOption(role: "temporary folder", option: "TMPDIR")
    /// The folder of a new store (`create OUT`, `salvage --out`): made in a private folder
    /// beside it, then published there.
    public static let newStoreFolder = FolderOption(role: "new store's folder", option: "the new store's path")
    /// `restore --to PATH`: the restored file is decompressed and checked beside it.
    public static let restoreTarget = FolderOption(role: "target folder", option: "--to")
}
