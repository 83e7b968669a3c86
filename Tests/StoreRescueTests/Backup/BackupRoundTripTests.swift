import Foundation
import Testing
@testable import StoreRescue

@Suite struct BackupRoundTripTests {
    /// Every real sample: backup → restore gives the content SQLite reads from the original with
    /// its sidecars, table by table; and the system gzip restores the exact snapshot.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"), arguments: Samples.allStores)
    func restoresSameContentAsOriginalWithSidecars(sample: String) throws {
        let temp = try TemporaryDirectory()
        let store = try temp.copySample(sample, as: "store.sqlite")
        let reference = try temp.copySample(sample, as: "reference.sqlite")
        let expected = try BackupFixtures.content(of: reference)

        let result = try BackupRunner.run(store: store, options: .testing(temp.path("backups")))
        let restored = temp.path("restored/store.sqlite")
        try FileManager.default.createDirectory(atPath: temp.path("restored"), withIntermediateDirectories: true)
        let restore = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))

        #expect(restore.restoredPath == restored)
        #expect(try BackupFixtures.content(of: restored, mode: .immutable) == expected)
        #expect(try FileDigest.of(path: restored).sha256 == result.manifest.snapshotSHA256)
        let gunzipped = try BackupFixtures.systemGunzipSHA256(result.backupPath, into: temp.path("gunzipped"))
        #expect(gunzipped == result.manifest.snapshotSHA256)
        #expect(try FileDigest.of(path: result.backupPath).sha256 == result.manifest.backupSHA256)
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples"))
    func walSampleRestoresItsCommittedWALRows() throws {
        let sample = "stores/swiftdata_ResourcesManager_wal/default.store"
        let temp = try TemporaryDirectory()
        let store = try temp.copySample(sample)
        // The main file alone (immutable: no WAL) has 4 rows; the store with its WAL has 7.
        #expect(try BackupFixtures.count("ZITEM", in: try temp.copySample(sample, as: "main-only.store"), mode: .immutable) == 4)

        let result = try BackupRunner.run(store: store, options: .testing(temp.path("backups")))
        let restored = temp.path("restored.store")
        _ = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))
        #expect(try BackupFixtures.count("ZITEM", in: restored) == 7)
        #expect(result.manifest.sourceWALSize > 0)
        #expect(result.manifest.storeUUID?.count == 36)
    }

    @Test(.enabled(if: Samples.available)) func manifestRecordsTheStoreIdentityFromItsMetadata() throws {
        let temp = try TemporaryDirectory()
        let store = try temp.copySample("stores/swiftdata_CartKitSwiftData_v1.sqlite")
        let result = try BackupRunner.run(store: store, options: .testing(temp.path("b"), reason: "manual", at: Date()))
        #expect(result.manifest.storeUUID == "C2A6F180-A5E4-47ED-ABB7-F14AB955DC76")
        #expect(result.manifest.frameworkVersion == 1523)
    }

    @Test func manifestRecordsTheSnapshot() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("Orders.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 3_000)
        let date = Date(timeIntervalSince1970: 1_738_314_900)  // 2025-01-31T09:15:00Z
        let result = try BackupRunner.run(store: store, options: .testing(temp.path("b"), reason: "pre-upgrade", at: date))
        let manifest = try BackupManifest.read(from: result.manifestPath)

        #expect(manifest == result.manifest)
        #expect(result.backupPath == temp.path("b") + "/Orders.sqlite.20250131T091500Z.gz")
        #expect(result.manifestPath == temp.path("b") + "/Orders.sqlite.20250131T091500Z.manifest.json")
        #expect(manifest.createdAt == "2025-01-31T09:15:00Z")
        #expect(manifest.reason == "pre-upgrade")
        #expect(manifest.storeUUID == "0B8C3F5E-1D2A-4C6B-9E7F-123456789ABC")
        #expect(manifest.frameworkVersion == nil)
        #expect(manifest.pageSize == 4096)
        #expect(Int64(manifest.pageSize * manifest.pageCount) == manifest.snapshotSize)
        #expect(manifest.sourcePath.hasSuffix("/Orders.sqlite"))
        #expect(manifest.sqliteVersion == SQLiteConnection.libraryVersion)
        #expect(manifest.toolName == "storerescue")
        #expect(manifest.backupFileName == "Orders.sqlite.20250131T091500Z.gz")
        #expect(manifest.backupSize == (try FileDigest.of(path: result.backupPath).size))
        #expect(result.compressionRatio > 1.5)
        // Only the two published files: the staging folder and temporary files are gone.
        #expect(BackupFixtures.fileNames(in: temp.path("b")) == [
            "Orders.sqlite.20250131T091500Z.gz", "Orders.sqlite.20250131T091500Z.manifest.json",
        ])
    }

    @Test func storeDescriptionReaderIsUsed() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 10)
        let result = try BackupRunner.run(store: store, options: .testing(temp.path("b")),
                                          storeDescription: { _ in (uuid: "X", frameworkVersion: 1523) })
        #expect(result.manifest.storeUUID == "X")
        #expect(result.manifest.frameworkVersion == 1523)
    }

    @Test func sameSecondBackupsGetSuffixes() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 10)
        let date = Date(timeIntervalSince1970: 1_738_314_900)
        let first = try BackupRunner.run(store: store, options: .testing(temp.path("b"), at: date))
        let second = try BackupRunner.run(store: store, options: .testing(temp.path("b"), at: date))
        #expect(first.backupPath.hasSuffix("s.sqlite.20250131T091500Z.gz"))
        #expect(second.backupPath.hasSuffix("s.sqlite.20250131T091500Z-1.gz"))
        #expect(second.manifestPath.hasSuffix("s.sqlite.20250131T091500Z-1.manifest.json"))
    }

    /// A store whose name leaves no room for the timestamp and `.manifest.json` within a file
    /// name's 255 bytes: its backups' names are cut (and told apart by a hash), the backup is
    /// taken, verifies, and is listed as the store's by its manifest.
    @Test func aStoreWithAVeryLongNameIsBackedUp() throws {
        let temp = try TemporaryDirectory()
        let long = String(repeating: "é", count: 110) + String(repeating: "s", count: 14) + ".sqlite"  // 241 bytes
        let other = String(repeating: "é", count: 110) + String(repeating: "s", count: 13) + "t.sqlite"
        #expect(long.utf8.count == 241)
        let store = temp.path(long)
        try BackupFixtures.makeStore(at: store, rows: 10)
        let date = Date(timeIntervalSince1970: 1_738_314_900)
        let first = try BackupRunner.run(store: store, options: .testing(temp.path("b"), at: date))
        let second = try BackupRunner.run(store: store, options: .testing(temp.path("b"), at: date))
        for path in [first.backupPath, first.manifestPath, second.backupPath, second.manifestPath] {
            let name = (path as NSString).lastPathComponent
            #expect(name.utf8.count <= 255, "\(name.utf8.count) bytes")
            #expect(name.hasPrefix(String(repeating: "é", count: 100)))
        }
        #expect(second.manifestPath.hasSuffix("Z-1.manifest.json"))
        #expect(BackupNaming.nameStem(long) != BackupNaming.nameStem(other))
        #expect(BackupNaming.nameStem("s.sqlite") == "s.sqlite")
        #expect(try BackupVerifier.verify(backup: first.backupPath).isGood)
        #expect(BackupRetention.backups(in: temp.path("b"), of: first.manifest.sourcePath).count == 2)
    }

    @Test(arguments: [1, 9])
    func everyLevelRoundTrips(level: Int) throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 5_000, journalMode: "DELETE")
        var options = BackupOptions.testing(temp.path("b"))
        options.compressionLevel = level
        options.pagesPerStep = 7  // many steps: exercises the overlap of snapshot and compression
        options.blockSize = 64 * 1024
        let result = try BackupRunner.run(store: store, options: options)
        #expect(result.manifest.compressionLevel == level)
        let sha = try BackupFixtures.systemGunzipSHA256(result.backupPath, into: temp.path("out"))
        #expect(sha == result.manifest.snapshotSHA256)
        #expect(try BackupFixtures.content(of: temp.path("out"), mode: .immutable) == (try BackupFixtures.content(of: store)))
    }
}
