import Foundation
import Synchronization
import Testing
@testable import StoreRescue

@Suite struct BackupRetentionTests {
    static func day(_ n: Int) -> Date { Date(timeIntervalSince1970: 1_738_314_900 + Double(n) * 86_400) }

    /// Backups of `store` on days 1…reasons.count, with the given reasons.
    static func takeBackups(of store: String, into folder: String, reasons: [String]) throws -> [BackupResult] {
        try reasons.enumerated().map { offset, reason in
            try BackupRunner.run(store: store, options: .testing(folder, reason: reason, at: day(offset + 1)))
        }
    }

    @Test func keepsTheNewestAndTheNewestPreUpgrade() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20)
        let folder = temp.path("b")
        let backups = try Self.takeBackups(of: store, into: folder,
                                           reasons: ["pre-upgrade", "pre-upgrade", "manual", "manual"])
        let last = try BackupRunner.run(store: store, options: .testing(folder, keep: 2, at: Self.day(5)))

        // Kept: days 5 and 4 (the newest two) and day 2 (the newest pre-upgrade); pruned: days 1 and 3.
        #expect(last.prunedBackups.sorted() == [backups[0].backupPath, backups[2].backupPath].sorted())
        let remaining = BackupRetention.backups(in: folder, of: last.manifest.sourcePath).map(\.backupPath)
        #expect(remaining == [last.backupPath, backups[3].backupPath, backups[1].backupPath])
        #expect(!FileManager.default.fileExists(atPath: backups[0].manifestPath))
        #expect(BackupFixtures.fileNames(in: folder).count == 6)
    }

    /// A backup dated later than the one just written (a clock stepped back, a restored
    /// machine) never makes `--keep` delete the backup just written: it counts as the newest. A
    /// review's `backup --keep 1` deleted it, listed it as pruned and exited 0.
    @Test func theBackupJustWrittenIsNeverPruned() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20)
        let folder = temp.path("b")
        let old = try BackupRunner.run(store: store, options: .testing(folder, at: Self.day(1)))
        let future = try BackupRunner.run(store: store, options: .testing(folder, at: Self.day(30)))
        let now = try BackupRunner.run(store: store, options: .testing(folder, keep: 1, at: Self.day(2)))
        #expect(now.prunedBackups == [old.backupPath], "the newest by date and the one just written are kept")
        #expect(FileManager.default.fileExists(atPath: now.backupPath) && FileManager.default.fileExists(atPath: now.manifestPath))
        #expect(FileManager.default.fileExists(atPath: future.backupPath))
    }

    /// Runs with `--keep 1` at once never leave the folder without a backup: every run keeps
    /// the newest by date (on which they all agree) besides its own. A review's three
    /// concurrent runs each kept only its own and deleted the others': none was left, all
    /// exiting 0.
    @Test func concurrentRunsWithKeepNeverLeaveNoBackup() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 2_000)
        for round in 0..<5 {
            let folder = temp.path("b\(round)")
            DispatchQueue.concurrentPerform(iterations: 3) { _ in
                _ = try? BackupRunner.run(store: store, options: .testing(folder, keep: 1, at: Self.day(1)))
            }
            let left = BackupRetention.backups(in: folder, of: try SourceFile(path: store).path)
            #expect(!left.isEmpty, "round \(round): no backup left")
            for entry in left { #expect(FileManager.default.fileExists(atPath: entry.backupPath)) }
        }
    }

    @Test func neverTouchesOtherStoresOrForeignFiles() throws {
        let temp = try TemporaryDirectory()
        let folder = temp.path("b")
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20)
        // A store with the same file name in another folder: a different store.
        try FileManager.default.createDirectory(atPath: temp.path("other"), withIntermediateDirectories: true)
        let namesake = temp.path("other/s.sqlite")
        try BackupFixtures.makeStore(at: namesake, rows: 5)
        let namesakeBackup = try BackupRunner.run(store: namesake, options: .testing(folder, at: Self.day(0)))
        _ = try Self.takeBackups(of: store, into: folder, reasons: ["manual", "manual"])
        // Foreign files, including a manifest that points outside the folder.
        try Data("{}".utf8).write(to: URL(fileURLWithPath: folder + "/notes.manifest.json"))
        var hostile = namesakeBackup.manifest
        hostile.sourcePath = try SourceFile(path: store).path
        hostile.backupFileName = "../victim.gz"
        try hostile.encoded().write(to: URL(fileURLWithPath: folder + "/hostile.manifest.json"))
        try Data("keep".utf8).write(to: URL(fileURLWithPath: temp.path("victim.gz")))

        let last = try BackupRunner.run(store: store, options: .testing(folder, keep: 1, at: Self.day(9)))
        #expect(last.prunedBackups.count == 2)
        #expect(FileManager.default.fileExists(atPath: namesakeBackup.backupPath))
        #expect(FileManager.default.fileExists(atPath: folder + "/notes.manifest.json"))
        #expect(FileManager.default.fileExists(atPath: folder + "/hostile.manifest.json"))
        #expect(try String(contentsOfFile: temp.path("victim.gz"), encoding: .utf8) == "keep")
    }

    @Test func selectionIsPureAndOrdered() throws {
        func entry(_ name: String, _ reason: String, day: Int = 1) -> BackupCatalogEntry {
            let manifest = BackupManifest(
                formatVersion: 1, toolName: "storerescue", toolVersion: "0", sqliteVersion: "3", zlibVersion: "1",
                createdAt: "2025-01-0\(day)T00:00:00Z", reason: reason, sourcePath: "/s", sourceSize: 0, sourceWALSize: 0,
                pageSize: 4096, pageCount: 1, snapshotSize: 4096, snapshotSHA256: "", backupFileName: name + ".gz",
                backupSize: 0, backupSHA256: "", compressionLevel: 6, storeUUID: nil, frameworkVersion: nil)
            return BackupCatalogEntry(backupPath: name + ".gz", manifestPath: name + ".manifest.json", manifest: manifest)
        }
        let newestFirst = [entry("e", "manual"), entry("d", "manual"), entry("c", "pre-upgrade"),
                           entry("b", "manual"), entry("a", "pre-upgrade")]
        #expect(BackupRetention.entriesToPrune(newestFirst, keep: 1).map(\.backupPath) == ["d.gz", "b.gz", "a.gz"])
        #expect(BackupRetention.entriesToPrune(newestFirst, keep: 3).map(\.backupPath) == ["b.gz", "a.gz"])
        #expect(BackupRetention.entriesToPrune(newestFirst, keep: 10) == [])
        // The backup just written is kept besides the newest `keep`, never instead of them:
        // concurrent runs, each with its own just written, all keep "e" (the newest). Backups
        // dated as late as it or up to a minute later are left to the runs that wrote them.
        let dated = [entry("e", "manual", day: 5), entry("d", "manual", day: 4), entry("c", "pre-upgrade", day: 3),
                     entry("b", "manual", day: 2), entry("a", "pre-upgrade", day: 1)]
        #expect(BackupRetention.entriesToPrune(dated, keep: 1, justWritten: "b.gz").map(\.backupPath) == ["d.gz", "a.gz"],
                "days later is no run of the same moment")
        #expect(BackupRetention.entriesToPrune(dated, keep: 1, justWritten: "e.gz").map(\.backupPath) == ["d.gz", "b.gz", "a.gz"])
        for own in dated.map(\.backupPath) {
            #expect(!BackupRetention.entriesToPrune(dated, keep: 1, justWritten: own).contains { $0.backupPath == "e.gz" }, "\(own)")
        }
        // Runs of the same moment prune none of each other's.
        #expect(BackupRetention.entriesToPrune(newestFirst, keep: 1, justWritten: "b.gz").isEmpty)
    }

    @Test func sameSecondBackupsSortBySuffixNumber() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 5)
        let folder = temp.path("b")
        var paths: [String] = []
        for _ in 0..<12 {
            paths.append(try BackupRunner.run(store: store, options: .testing(folder, at: Self.day(1))).backupPath)
        }
        let listed = BackupRetention.backups(in: folder, of: try SourceFile(path: store).path)
        #expect(listed.map(\.backupPath) == paths.reversed())
    }

    /// Backups of one store taken at once, in the same second, all succeed under distinct
    /// names: a name another published first moves on to the next `-n`. A review's concurrent
    /// runs failed with 73 ("already exists") in 14 of 20.
    @Test func concurrentBackupsInTheSameSecondEachTakeTheirOwnName() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 2_000)
        let folder = temp.path("b")
        let results = Mutex<[Result<String, any Error>]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let outcome = Result { try BackupRunner.run(store: store, options: .testing(folder, at: Self.day(1))).backupPath }
            results.withLock { $0.append(outcome) }
        }
        let all = results.withLock { $0 }
        let paths = all.compactMap { try? $0.get() }
        #expect(paths.count == 6, "\(all.compactMap { if case .failure(let error) = $0 { return "\(error)" } else { return nil } })")
        #expect(Set(paths).count == 6)
        let listed = BackupRetention.backups(in: folder, of: try SourceFile(path: store).path)
        #expect(listed.count == 6)
        for entry in listed { #expect(try BackupVerifier.verify(backup: entry.backupPath).isGood) }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root for chattr +i (an undeletable file)"))
    func pruneFailureSaysTheBackupWasWritten() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 5)
        let folder = temp.path("b")
        let old = try BackupRunner.run(store: store, options: .testing(folder, at: Self.day(1)))
        let pinned = try UnwritableFolder(old.backupPath)  // chattr +i: cannot be unlinked
        defer { pinned.restore() }

        let error = #expect(throws: BackupError.self) {
            try BackupRunner.run(store: store, options: .testing(folder, keep: 1, at: Self.day(2)))
        }
        let written = folder + "/s.sqlite.20250202T091500Z.gz"
        #expect(error?.description == "cannot use the backup folder \(folder): the backup \(written) was written, "
            + "but cannot remove old backups: \(old.backupPath): Operation not permitted")
        #expect(FileManager.default.fileExists(atPath: written))
        #expect(FileManager.default.fileExists(atPath: old.manifestPath), "a backup is removed whole or not at all")
    }
}
