import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder that keeps a store's files byte for byte in the one case the online backup cannot
/// handle: a store too damaged for SQLite to read, about to be replaced by `restore --force`
/// (or sidecars with no main file). `<folder>/<store file name>.<UTC time>[-n].raw/`, created
/// empty here; `StoreReplacement` fills it under its lock: the main file preserved
/// (`LockedStore.preserve(at:)`: a hard link, or a checked copy on another file system), the
/// `-wal`/`-journal`/`-shm` moved in (`DamagedStorePolicy.moveSidecarsAside`). Nothing is deleted.
enum RawStoreCopy {
    /// Creates a new, empty raw-copy folder for `store` in `folder` (created if missing).
    ///
    /// - Parameter option: the option that chose `folder` (`restore --backups-dir`, `upgrade --backup-dir`).
    /// - Returns: the new folder.
    /// - Throws: `BackupError.destinationUnusable`, naming `option`.
    static func makeFolder(for store: String, in folder: String, chosenWith option: FolderOption, date: Date) throws -> String {
        let parent = try BackupRunner.prepareDestination(folder, chosenWith: option)
        let name = (store as NSString).lastPathComponent
        for suffix in 0..<1000 {
            let candidate = parent + "/" + name + "." + BackupNaming.timestamp(date) + (suffix == 0 ? "" : "-\(suffix)") + ".raw"
            if mkdir(candidate, 0o700) == 0 {
                SafeFileOutput.syncFolder(parent)
                return candidate
            }
            guard errno == EEXIST else {
                throw BackupError.destinationUnusable(path: parent, reason: SafeFileOutput.describe(errno), folder: option)
            }
        }
        throw BackupError.destinationUnusable(path: parent, reason: "no free name for a raw copy", folder: option)
    }
}
