import Foundation
import Testing
@testable import StoreRescue

@Suite struct BackupRestorerTests {
    /// Commits one row (Z_PK 100) that lives only in the store's `-wal`, then closes without the
    /// checkpoint a close would run: the `-wal` and `-shm` stay, as after a crash.
    static func leaveRowInWAL(_ store: String) throws {
        let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try writer.disableCheckpointOnClose()
        try writer.execute("PRAGMA wal_autocheckpoint = 0; INSERT INTO ZITEM (Z_PK, ZTITLE) VALUES (100, 'only in the WAL')")
    }

    @Test func refusesToOverwriteWithoutForce() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 5, uuid: "LIVE")
        let before = try FileDigest.of(path: target)

        #expect(throws: BackupError.restoreTargetExists(path: target, existing: [target])) {
            try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: target))
        }
        #expect(try FileDigest.of(path: target) == before)
        #expect(BackupError.restoreTargetExists(path: target, existing: [target]).exitStatus == .cannotCreateOutput)
        #expect(BackupFixtures.fileNames(in: temp.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) })
    }

    /// A store that appears at the target while the backup is decompressed (an app started,
    /// another restore) is never replaced, with or without `--force`: nothing backed it up. A
    /// review's restore replaced it with exit 0 and no copy anywhere.
    @Test(arguments: [false, true])
    func aStoreThatAppearsWhileRestoringIsNotReplaced(force: Bool) throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let target = temp.path("new.sqlite")
        var created = false
        let error = #expect(throws: BackupError.self) {
            try BackupRestorer.restore(
                backup: backup.backupPath,
                options: RestoreOptions(targetPath: target, force: force, replacedStoreBackupDirectory: temp.path("safety")),
                progress: { step in
                    guard step.phase == .verify, !created else { return }
                    created = true
                    try? BackupFixtures.makeStore(at: target, rows: 3, uuid: "THE-APPS")
                },
                cancellation: nil)
        }
        #expect(created)
        #expect(error == .restoreTargetAppeared(path: target))
        #expect(error?.exitStatus == .cannotCreateOutput)
        let uuid = try SQLiteConnection(path: target, options: SQLiteOpenOptions(mode: .readOnly)).scalar("SELECT Z_UUID FROM Z_METADATA")?.string
        #expect(uuid == "THE-APPS", "the store that appeared is as it was")
        #expect(BackupFixtures.fileNames(in: temp.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) })
    }

    /// A target named as a sidecar of a store that exists (`X-wal` beside X) is refused, with
    /// or without `--force`: SQLite would delete the restored file when it opens X (a review's
    /// restore there exited 0). A folder named X is no store.
    @Test(arguments: ["-wal", "-journal"])
    func aTargetNamedAsAnotherStoresSidecarIsRefused(suffix: String) throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let store = temp.path("X.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 5, uuid: "X")
        for force in [false, true] {
            #expect(throws: BackupError.restoreTargetIsSidecar(path: store + suffix, store: store)) {
                try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: store + suffix, force: force))
            }
        }
        #expect(!FileManager.default.fileExists(atPath: store + suffix))
        try FileManager.default.createDirectory(atPath: temp.path("Folder"), withIntermediateDirectories: false)
        let beside = temp.path("Folder") + suffix
        _ = try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: beside))
        #expect(FileManager.default.fileExists(atPath: beside))
    }

    @Test(arguments: ["-wal", "-shm", "-journal"])
    func refusesWhenOnlyASidecarExists(suffix: String) throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let target = temp.path("live.sqlite")
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: target + suffix))
        let error = #expect(throws: BackupError.self) {
            try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: target))
        }
        #expect(error?.description == "refusing to overwrite \(target): \(target + suffix) already exist(s)")
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    @Test func forceBacksUpTheReplacedStoreThenRemovesItsSidecars() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 2_000)
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "LIVE-STORE")
        // Leave committed rows in the live store's WAL: they must be in its safety backup. (The
        // writer is gone, as a killed app is: a store still open is refused, see below.)
        try Self.leaveRowInWAL(target)
        #expect(FileManager.default.fileExists(atPath: target + "-wal"))
        let staleSHM = try Data(contentsOf: URL(fileURLWithPath: target + "-shm"))
        #expect(!staleSHM.isEmpty)

        let result = try BackupRestorer.restore(
            backup: backup.backupPath,
            options: RestoreOptions(targetPath: target, force: true, replacedStoreBackupDirectory: temp.path("safety")))

        let safety = try #require(result.replacedStoreBackup)
        #expect(safety.manifest.reason == "pre-restore")
        #expect(safety.manifest.storeUUID == "LIVE-STORE")
        #expect(FileManager.default.fileExists(atPath: safety.backupPath))
        let safetyCopy = temp.path("safety-check.sqlite")
        _ = try BackupRestorer.restore(backup: safety.backupPath, options: RestoreOptions(targetPath: safetyCopy))
        #expect(try BackupFixtures.count("ZITEM", in: safetyCopy) == 8)

        #expect(result.removedSidecars.sorted() == [target + "-shm", target + "-wal"])
        #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256)
        #expect(try BackupFixtures.count("ZITEM", in: target) == 2_000)
    }

    @Test func refusesASymbolicLinkTargetEvenWithForce() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let victim = temp.path("victim.txt")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: victim))
        let target = temp.path("link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: victim)

        for force in [false, true] {
            let error = #expect(throws: BackupError.self) {
                try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: target, force: force))
            }
            #expect(error?.description == "refusing to restore to \(target): it is a symbolic link")
            #expect(error?.exitStatus == .cannotCreateOutput)
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
    }

    @Test func damagedBackupReplacesNothing() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        var data = try Data(contentsOf: URL(fileURLWithPath: backup.backupPath))
        data[data.count - 6] ^= 0x01  // the gzip length field
        try data.write(to: URL(fileURLWithPath: backup.backupPath))
        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 5)
        let before = try FileDigest.of(path: target)

        let error = #expect(throws: BackupError.self) {
            try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: target, force: true))
        }
        #expect(error?.description.hasPrefix("the backup \(backup.backupPath) failed verification, nothing was replaced: gzip check failed: ") == true)
        #expect(error?.exitStatus == .checkFailed)
        #expect(try FileDigest.of(path: target) == before)
        #expect(BackupFixtures.fileNames(in: temp.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) })
        // Verification comes first: no safety backup was taken for a restore that could not happen.
        #expect(BackupFixtures.fileNames(in: temp.path("b")).count == 2)
    }

    @Test func forceOverADamagedStoreKeepsItsRawBytes() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("damaged.sqlite")
        let garbage = Data((0..<9000).map { UInt8(truncatingIfNeeded: $0 * 31) })
        try garbage.write(to: URL(fileURLWithPath: target))
        try Data("old wal".utf8).write(to: URL(fileURLWithPath: target + "-wal"))

        let result = try BackupRestorer.restore(
            backup: backup.backupPath, options: RestoreOptions(targetPath: target, force: true, replacedStoreBackupDirectory: temp.path("safety")))

        #expect(result.replacedStoreBackup == nil)
        let raw = try #require(result.replacedStoreRawCopy)
        #expect(raw.hasPrefix(temp.path("safety") + "/damaged.sqlite.") && raw.hasSuffix(".raw"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: raw + "/damaged.sqlite")) == garbage)
        #expect(try String(contentsOfFile: raw + "/damaged.sqlite-wal", encoding: .utf8) == "old wal")
        #expect(try BackupFixtures.count("ZITEM", in: target) == 300)
        #expect(!FileManager.default.fileExists(atPath: target + "-wal"))
        #expect(result.movedSidecars == [raw + "/damaged.sqlite-wal"])
    }
}
