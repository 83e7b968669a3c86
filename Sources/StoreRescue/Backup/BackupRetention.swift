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
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var entries: [BackupCatalogEntry] = []
        for name in names where name.hasByteSuffix(".manifest.json") && name.utf8.first != UInt8(ascii: ".") {
            let manifestPath = folder + "/" + name
            guard let manifest = try? BackupManifest.read(from: manifestPath),
                  // Bytes, not characters (`String+Bytes`): `Caf\u{E9}` and `Cafe\u{301}` are
                  // two stores, and neither's backups are the other's to prune.
                  manifest.sourcePath.hasSameBytes(as: sourcePath),
                  manifest.backupFileName.hasByteSuffix(".gz"), !manifest.backupFileName.utf8.contains(UInt8(ascii: "/")),
                  BackupManifest.manifestPath(forBackup: manifest.backupFileName).hasSameBytes(as: name)
            else { continue }
            entries.append(BackupCatalogEntry(backupPath: folder + "/" + manifest.backupFileName,
                                              manifestPath: manifestPath, manifest: manifest))
        }
        return entries.sorted(by: isNewer)
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

    /// Removes the backups of `sourcePath` in `folder` beyond the newest `keep` (`justWritten`
    /// kept too, as in `entriesToPrune`).
    ///
    /// - Returns: the `.gz` paths removed.
    /// - Throws: `BackupError.destinationUnusable` when a file cannot be removed (after trying all).
    @discardableResult
    public static func prune(folder: String, sourcePath: String, keep: Int, justWritten: String? = nil) throws -> [String] {
        var removed: [String] = []
        var failures: [String] = []
        for entry in entriesToPrune(backups(in: folder, of: sourcePath), keep: keep, justWritten: justWritten) {
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
        return removed
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
