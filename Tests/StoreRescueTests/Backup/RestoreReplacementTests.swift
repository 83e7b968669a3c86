import Foundation
import Testing
@testable import StoreRescue

/// `restore --force` replaces the target through `StoreReplacement`: a WAL target is settled
/// (its WAL folded in and removed, never replayed onto the restored file), a target in use is
/// refused (exit 75) untouched, a damaged one keeps its bytes in the raw-copy folder, and a stop
/// at any step leaves the old store or the restored one, whole.
@Suite struct RestoreReplacementTests {
    struct Stop: Error {}

    /// A backup of 300 rows, and a live WAL store (7 rows, plus Z_PK 100 only in its `-wal`).
    private func backupAndWALTarget(_ temp: TemporaryDirectory) throws -> (backup: BackupResult, target: String) {
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "LIVE")
        try BackupRestorerTests.leaveRowInWAL(target)
        return (backup, target)
    }

    private func options(_ temp: TemporaryDirectory, _ target: String, timeout: TimeInterval = 1) -> RestoreOptions {
        RestoreOptions(targetPath: target, force: true, replacedStoreBackupDirectory: temp.path("safety"), lockTimeout: timeout)
    }

    private func noSidecarBeside(_ target: String) -> Bool {
        StoreReplacement.sidecarSuffixes.allSatisfy { !ReplacementFixtures.exists(target + $0) }
    }

    @Test func aWALTargetIsSettledThenReplacedAndItsWALNeverReplayed() throws {
        let temp = try TemporaryDirectory()
        let (backup, target) = try backupAndWALTarget(temp)
        let walSize = try FileManager.default.attributesOfItem(atPath: target + "-wal")[.size] as? Int ?? 0
        #expect(walSize > 32, "Z_PK 100 lives in the -wal")

        let result = try BackupRestorer.restore(backup: backup.backupPath, options: options(temp, target))

        #expect(result.removedSidecars == [target + "-wal", target + "-shm"])
        #expect(result.movedSidecars == [])
        #expect(noSidecarBeside(target), "no -wal of the old store beside the restored file")
        #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256)
        #expect(try BackupFixtures.count("ZITEM", in: target, mode: .readOnly) == 300)
        let safety = try #require(result.replacedStoreBackup)
        let check = temp.path("safety-check.sqlite")
        _ = try BackupRestorer.restore(backup: safety.backupPath, options: RestoreOptions(targetPath: check))
        #expect(try BackupFixtures.count("ZITEM", in: check) == 8, "the WAL row is in the pre-restore backup")
    }

    /// An app that has the store open (WAL mode) when the restore comes to replace it, and
    /// closes it within the timeout: the restore waits for it and replaces the store. Before,
    /// the store was refused at once as "still open after 20 s".
    @Test func aTargetClosedWithinTheTimeoutIsWaitedForAndReplaced() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "LIVE")
        let holder = ClosingHolder(try SQLiteConnection(path: target, options: SQLiteOpenOptions(mode: .readWrite)))
        #expect(try holder.count() == 7)
        let started = Date()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.4) { holder.close() }
        let result = try BackupRestorer.restore(backup: backup.backupPath, options: options(temp, target, timeout: 20))
        #expect(Date().timeIntervalSince(started) >= 0.4, "waited for the app to close the store")
        #expect(result.replacedStoreBackup != nil)
        #expect(noSidecarBeside(target))
        #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256)
    }

    @Test func aTargetInUseIsRefusedWithStatus75AndLeftByteIdentical() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "LIVE")
        // Read before the holder opens it: closing a descriptor of the file in this process would
        // drop the holder's locks (POSIX), and the store would no longer be in use for another.
        let main = try FileDigest.of(path: target)
        let holder = try SQLiteConnection(path: target, options: SQLiteOpenOptions(mode: .readWrite))
        try holder.execute("BEGIN IMMEDIATE; INSERT INTO ZITEM (Z_PK, ZTITLE) VALUES (200, 'uncommitted')")
        let wal = try FileDigest.of(path: target + "-wal")

        let started = Date()
        let error = #expect(throws: StoreReplacementError.self) {
            try BackupRestorer.restore(backup: backup.backupPath, options: options(temp, target, timeout: 0.5))
        }
        // "still after 0.5 s" is what was waited (before: refused at once, SQLite leaving the
        // store in WAL mode without its busy handler).
        #expect(Date().timeIntervalSince(started) >= 0.5)
        #expect(error == .inUse(path: target, seconds: 0.5))
        #expect(error?.exitStatus.rawValue == 75)
        #expect(error?.description == "\(target) is open in another process (still after 0.5 s); it was not replaced")
        #expect(try FileDigest.of(path: target) == main)
        #expect(try FileDigest.of(path: target + "-wal") == wal)
        #expect(BackupFixtures.fileNames(in: temp.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) })
        try holder.execute("COMMIT")
        #expect(try holder.rows("SELECT count(*) FROM ZITEM").first?.first?.int64 == 8, "the holder's work went on")
    }

    @Test(.enabled(if: StoreRescueExecutable.hasBackupCommands, "storerescue does not register restore yet"))
    func theCommandExitsWith75WhileTheTargetIsInUse() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "LIVE")
        let main = try FileDigest.of(path: target)  // before the holder opens it (see above)
        let holder = try SQLiteConnection(path: target, options: SQLiteOpenOptions(mode: .readWrite))
        try holder.execute("BEGIN IMMEDIATE; INSERT INTO ZITEM (Z_PK, ZTITLE) VALUES (200, 'uncommitted')")
        let run = try BackupCommandEndToEndTests.storerescue(
            ["restore", backup.backupPath, "--to", target, "--force", "--timeout", "0.5", "--backups-dir", temp.path("safety")])
        #expect(run.status == 75)
        #expect(run.standardError.hasPrefix("Error: \(target) is open in another process"))
        #expect(try FileDigest.of(path: target) == main)
        try holder.execute("ROLLBACK")
    }

    @Test func aDamagedTargetKeepsItsMainFileAndSidecarsInTheRawCopy() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("damaged.sqlite")
        try Data().write(to: URL(fileURLWithPath: target))  // empty: SQLite would delete its -wal
        try Data("old wal".utf8).write(to: URL(fileURLWithPath: target + "-wal"))
        try Data("old journal".utf8).write(to: URL(fileURLWithPath: target + "-journal"))

        let result = try BackupRestorer.restore(backup: backup.backupPath, options: options(temp, target))

        let raw = try #require(result.replacedStoreRawCopy)
        #expect(result.replacedStoreBackup == nil && result.removedSidecars == [])
        #expect(result.movedSidecars == [raw + "/damaged.sqlite-wal", raw + "/damaged.sqlite-journal"])
        #expect(BackupFixtures.fileNames(in: raw) == ["damaged.sqlite", "damaged.sqlite-journal", "damaged.sqlite-wal"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: raw + "/damaged.sqlite")).isEmpty)
        #expect(try String(contentsOfFile: raw + "/damaged.sqlite-journal", encoding: .utf8) == "old journal")
        #expect(noSidecarBeside(target))
        #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256)
    }

    @Test func sidecarsWithNoMainFileAreMovedIntoARawCopyFolder() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("live.sqlite")
        try Data("orphan".utf8).write(to: URL(fileURLWithPath: target + "-wal"))

        let result = try BackupRestorer.restore(backup: backup.backupPath, options: options(temp, target))

        let raw = try #require(result.replacedStoreRawCopy)
        #expect(result.movedSidecars == [raw + "/live.sqlite-wal"])
        #expect(try String(contentsOfFile: raw + "/live.sqlite-wal", encoding: .utf8) == "orphan")
        #expect(noSidecarBeside(target))
        #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256)
    }

    @Test(arguments: StoreReplacement.Step.allCases, [false, true])
    func stoppedAtAnyStepTheTargetIsTheOldStoreOrTheRestoredOne(step: StoreReplacement.Step, damaged: Bool) throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("live.sqlite")
        let garbage = Data((0..<9000).map { UInt8(truncatingIfNeeded: $0 * 31) })
        var oldContent: [String: [String]] = [:]
        if damaged {
            try garbage.write(to: URL(fileURLWithPath: target))
            try Data("old wal".utf8).write(to: URL(fileURLWithPath: target + "-wal"))
        } else {
            try BackupFixtures.makeStore(at: target, rows: 7, uuid: "LIVE")
            try BackupRestorerTests.leaveRowInWAL(target)
            // What the old store holds, read from a copy of its files (the target is not opened).
            let reference = temp.path("reference.sqlite")
            for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: target + suffix, toPath: reference + suffix) }
            oldContent = try BackupFixtures.content(of: reference)
            #expect(oldContent["ZITEM"]?.count == 8)
        }

        var reached: [StoreReplacement.Step] = []
        do {
            _ = try BackupRestorer.restore(backup: backup.backupPath, options: options(temp, target), progress: nil, cancellation: nil,
                                           faultInjection: { reached.append($0); if $0 == step { throw Stop() } })
            #expect(!reached.contains(step), "only a step the path does not have lets the restore finish")
        } catch is Stop {
            #expect(reached.last == step)
        }

        let replaced = !reached.contains(step) || step == .renamed
        if replaced {
            #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256, "the restored store, whole")
            #expect(noSidecarBeside(target), "no foreign -wal beside the restored store")
        } else if damaged {
            #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == garbage)
            // Its own -wal beside it (stopped when locked), or moved into the raw copy, never lost.
            let raw = try #require(BackupFixtures.fileNames(in: temp.path("safety")).first { $0.hasSuffix(".raw") })
            let wal = step == .sidecarsMoved ? temp.path("safety/\(raw)/live.sqlite-wal") : target + "-wal"
            #expect(try String(contentsOfFile: wal, encoding: .utf8) == "old wal")
        } else {
            #expect(noSidecarBeside(target), "settled: the WAL folded into the old main file")
            #expect(try BackupFixtures.content(of: target) == oldContent, "the old store with all its rows")
        }
        #expect(BackupFixtures.fileNames(in: temp.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) })
    }
}

/// A connection another thread closes (an app quitting).
private final class ClosingHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: SQLiteConnection?

    init(_ connection: SQLiteConnection) { self.connection = connection }

    func count() throws -> Int64? {
        lock.lock()
        defer { lock.unlock() }
        return try connection?.scalar("SELECT count(*) FROM ZITEM")?.int64
    }

    func close() {
        lock.lock()
        connection = nil
        lock.unlock()
    }
}
