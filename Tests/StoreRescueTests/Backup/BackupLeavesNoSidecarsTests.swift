import Foundation
import Testing
@testable import StoreRescue

/// Backing up a WAL store at rest must not leave the `-wal`/`-shm` a read-only SQLite connection
/// creates; a store someone else has open keeps the sidecars that connection needs.
@Suite struct BackupLeavesNoSidecarsTests {
    @Test func walStoreAtRestKeepsItsFolderUnchanged() throws {
        let temp = try TemporaryDirectory()
        let folder = temp.path("store")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let store = folder + "/Orders.sqlite"
        try BackupFixtures.makeStore(at: store, rows: 500)  // WAL mode; closing removed its sidecars
        let before = try StoreFixtureBuilder.snapshot(of: folder)
        #expect(before.keys.sorted() == ["Orders.sqlite"])
        let result = try BackupRunner.run(store: store, options: .testing(temp.path("backups")))
        #expect(FileManager.default.fileExists(atPath: result.backupPath))
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == before, "no -wal or -shm left, main file unchanged")
    }

    @Test func sidecarsOfAnotherOpenConnectionAreLeftAlone() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("Orders.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 500)
        let other = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try other.execute("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZVALUE) VALUES (100000, 1, 1, 7)")
        _ = try BackupRunner.run(store: store, options: .testing(temp.path("backups")))
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        #expect(FileManager.default.fileExists(atPath: store + "-shm"))
        #expect(try other.scalar("SELECT count(*) FROM ZITEM WHERE Z_PK = 100000")?.int64 == 1)
    }
}
