import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One backup found in a backup folder through its manifest.
public struct BackupCatalogEntry: Sendable, Equatable {
    public var backupPath: String
    public var manifestPath: String
    public var manifest: BackupManifest
}

/// Which backups of a store to keep: the newest `keep`, plus — always — the newest `pre-upgrade`
/// backup, however old, because it is the way back from a failed upgrade.
///
/// Only backups whose manifest can be read, records the same store path and names a `.gz` beside
/// it are candidates; anything else in the folder is never touched.
public enum BackupRetention {
    /// The reason that marks a backup as the way back from an upgrade.
    public static let preUpgradeReason = "pre-upgrade"

    /// The backups in `folder` taken of the store at `sourcePath`, newest first.
    public static func backups(in folder: String, of sourcePath: String) -> [BackupCatalogEntry] {
        listing(in: folder, of: sourcePath).entries
    }

    /// The backups of a store found in a folder, and why some could not be weighed.
    struct Listing {
        /// Newest first.
        var entries: [BackupCatalogEntry]
        /// The folder could not be listed, a manifest named as one of the store's backups could
        /// not be read, or one not opened for want of a file descriptor: what was not weighed
        /// (and so not pruned), one sentence each.
        var notes: [String] = []
    }

    /// `backups(in:of:)`, with what kept the listing short. A folder that cannot be listed
    /// (no file descriptor left, `ulimit -n`; or any other reason) and a manifest that cannot be
    /// opened for want of a descriptor are notes, not errors: pruning is tidying after a backup
    /// that already succeeded, and must not fail it, but a `--keep` that silently pruned nothing
    /// would let the folder grow without anyone knowing (a review). A damaged manifest named as
    /// one of this store's backups is a note too (it may be one); one named otherwise, another
    /// store's or another tool's, stays out silently: it is no candidate. Nothing not listed is
    /// ever removed.
    ///
    /// - Parameter listingNames: `BoundedFile.names(inFolder:)` (tests give one that fails).
    static func listing(in folder: String, of sourcePath: String,
                        listingNames: (String) throws(BoundedFile.Failure) -> [String] = BoundedFile.names(inFolder:)) -> Listing {
        let names: [String]
        do {
            names = try listingNames(folder)
        } catch .tooManyOpenFiles {
            return Listing(entries: [], notes: [
                "cannot list \(folder) to remove old backups: \(OpenFileLimit.describe(EMFILE)); none were removed (raise the limit on open files, ulimit -n, for --keep to remove them)"])
        } catch {
            return Listing(entries: [], notes: ["cannot list \(folder) to remove old backups: \(error.description); none were removed"])
        }
        var entries: [BackupCatalogEntry] = []
        var notes: [String] = []
        // A manifest named as one of this store's backups (`<store>.<time>….manifest.json`) that
        // cannot be read may be one of them: kept, and said (review rv10: JSON-OUTPUT.md promised
        // it; `retentionNotes` was empty). Another store's name or another tool's file is no
        // candidate and stays out silently.
        let storeFileName = (sourcePath as NSString).lastPathComponent
        for name in names where name.hasByteSuffix(".manifest.json") && name.utf8.first != UInt8(ascii: ".") {
            let manifestPath = folder + "/" + name
            let read: BackupManifest?
            do {
                read = try BackupManifest.read(from: manifestPath)
            } catch BackupError.tooManyOpenFiles(let path, let reason) {
                notes.append("cannot open \(path) to weigh its backup for removal: no file descriptor left (\(reason)); that backup was kept (raise the limit on open files, ulimit -n, for --keep to weigh it)")
                continue
            } catch BackupError.manifestUnreadable(_, let reason) where BackupNaming.isManifestName(name, ofStore: storeFileName) {
                notes.append("cannot read \(manifestPath) to weigh its backup for removal: \(reason); it and its backup were kept (repair or remove them by hand)")
                continue
            } catch {
                read = nil
            }
            guard let manifest = read,
                  // Bytes, not characters (`String+Bytes`): `Caf\u{E9}` and `Cafe\u{301}` are
                  // two stores, and neither's backups are the other's to prune.
                  manifest.sourcePath.hasSameBytes(as: sourcePath),
                  manifest.backupFileName.hasByteSuffix(".gz"), !manifest.backupFileName.utf8.contains(UInt8(ascii: "/")),
                  BackupManifest.manifestPath(forBackup: manifest.backupFileName).hasSameBytes(as: name)
            else { continue }
            entries.append(BackupCatalogEntry(backupPath: folder + "/" + manifest.backupFileName,
                                              manifestPath: manifestPath, manifest: manifest))
        }
        return Listing(entries: entries.sorted(by: isNewer), notes: notes)
    }

    /// The entries to remove so that `keep` remain (plus the protected `pre-upgrade` one).
    ///
    /// - Parameters:
    ///   - entries: newest first, as `backups(in:of:)` returns them.
    ///   - justWritten: the `.gz` path of the backup the caller has just written: always kept,
    ///     besides the newest `keep`, whatever the manifests' dates say. A manifest dated later
    ///     (a clock stepped back, a restored machine) made a review's `backup --keep 1` delete
    ///     the backup it had just written and exit 0. It is kept apart rather than counted as
    ///     the newest: runs at once must agree on which backups are the newest (by date), or
    ///     each deletes the others' and none is left (a review's 3 concurrent `--keep 1` runs).
    public static func entriesToPrune(_ entries: [BackupCatalogEntry], keep: Int, justWritten: String? = nil) -> [BackupCatalogEntry] {
        precondition(keep >= 1, "keep must be at least 1")
        let newestPreUpgrade = entries.first { $0.manifest.reason == preUpgradeReason }
        // Backups dated as late as the one just written or up to a minute later are other runs'
        // of the same moment: theirs to prune. Deleted here, those runs reported a
        // backup that was gone (a review's 4 concurrent --keep 1 runs: 3 of them).
        // Within a minute: a manifest dated years ahead (a clock stepped back) is pruned as usual.
        let writtenAt = justWritten.flatMap { path in entries.first { $0.backupPath.hasSameBytes(as: path) } }?.manifest.creationDate
        return entries.enumerated().compactMap { offset, entry in
            if offset < keep || entry == newestPreUpgrade || justWritten.map(entry.backupPath.hasSameBytes(as:)) == true { return nil }
            if let writtenAt, let date = entry.manifest.creationDate, date >= writtenAt, date.timeIntervalSince(writtenAt) <= 60 { return nil }
            return entry
        }
    }

    /// What a pruning did.
    public struct Pruning: Sendable, Equatable {
        /// The `.gz` paths removed.
        public var removed: [String] = []
        /// What could not be weighed, and so was kept (`listing`): the folder not listed, a
        /// manifest not opened for want of a file descriptor.
        public var notes: [String] = []
    }

    /// Removes the backups of `sourcePath` in `folder` beyond the newest `keep` (`justWritten`
    /// kept too, as in `entriesToPrune`).
    ///
    /// - Returns: the `.gz` paths removed, and notes on what could not be weighed (a folder that
    ///   cannot be listed prunes nothing, and says so there rather than failing).
    /// - Throws: `BackupError.destinationUnusable` when a file cannot be removed (after trying all).
    @discardableResult
    public static func prune(folder: String, sourcePath: String, keep: Int, justWritten: String? = nil) throws -> Pruning {
        let listing = listing(in: folder, of: sourcePath)
        var removed: [String] = []
        var failures: [String] = []
        for entry in entriesToPrune(listing.entries, keep: keep, justWritten: justWritten) {
            // The .gz first: a crash in between leaves a manifest that the next prune removes.
            if unlink(entry.backupPath) != 0 && errno != ENOENT {
                failures.append("\(entry.backupPath): \(SafeFileOutput.describe(errno))")
                continue
            }
            if unlink(entry.manifestPath) != 0 && errno != ENOENT {
                failures.append("\(entry.manifestPath): \(SafeFileOutput.describe(errno))")
            }
            removed.append(entry.backupPath)
        }
        SafeFileOutput.syncFolder(folder)
        guard failures.isEmpty else {
            throw BackupError.destinationUnusable(path: folder, reason: "cannot remove old backups: " + failures.joined(separator: "; "))
        }
        return Pruning(removed: removed, notes: listing.notes)
    }

    private static func isNewer(_ a: BackupCatalogEntry, _ b: BackupCatalogEntry) -> Bool {
        let dateA = a.manifest.creationDate ?? .distantPast
        let dateB = b.manifest.creationDate ?? .distantPast
        if dateA != dateB { return dateA > dateB }
        // Same second: the higher "-n" suffix is newer; compare numerically, not as text.
        return suffixNumber(a.manifest.backupFileName) > suffixNumber(b.manifest.backupFileName)
    }

    private static func suffixNumber(_ name: String) -> Int {
        let stem = name.dropLast(3)  // ".gz"
        guard let dash = stem.lastIndex(of: "-"), let number = Int(stem[stem.index(after: dash)...]) else { return 0 }
        return stem[..<dash].hasSuffix("Z") ? number : 0
    }
}
