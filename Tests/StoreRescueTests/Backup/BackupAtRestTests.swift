import Foundation
import Testing
@testable import StoreRescue

/// A store no other process has open is backed up without touching any of its files: not a
/// byte of the main file, `-wal` or `-shm` changes and nothing is created beside it, whether the
/// backup succeeds or refuses the store. A store in use keeps SQLite's shared online backup.
@Suite struct BackupAtRestTests {
    /// Before: SQLite's wal-index recovery rewrote the pristine sample's `-shm`.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"),
          arguments: ["lineages/SyncMetadata/SyncMetadata_V3.sqlite", "stores/swiftdata_ResourcesManager_wal/default.store"])
    func walStoreAtRestIsNotTouched(sample: String) throws {
        let temp = try TemporaryDirectory()
        let folder = temp.path("store")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let store = try temp.copySample(sample)
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.moveItem(atPath: store + suffix, toPath: folder + "/" + (store as NSString).lastPathComponent + suffix)
        }
        let path = folder + "/" + (store as NSString).lastPathComponent
        let before = try StoreFixtureBuilder.snapshot(of: folder)
        #expect(before.count == 3)
        let result = try BackupRunner.run(store: path, options: .testing(temp.path("backups")))
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == before, "every byte of the store, -wal and -shm unchanged")
        // The backup holds the WAL's committed content all the same.
        let restored = temp.path("restored.sqlite")
        _ = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))
        let copy = temp.path("copy")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: false)
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + "/s.sqlite" + suffix)
        }
        #expect(try BackupFixtures.content(of: restored, mode: .immutable) == BackupFixtures.content(of: copy + "/s.sqlite", mode: .readWrite))
    }

    /// Before: SQLite's read-only connection left an empty `-wal` and a 32 KB `-shm` beside the
    /// damaged store it then refused.
    @Test func damagedWALStoreIsRefusedAndItsFolderLeftAsFound() throws {
        let temp = try TemporaryDirectory()
        let folder = temp.path("store")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let store = folder + "/s.sqlite"
        try BackupFixtures.makeStore(at: store, rows: 200)  // WAL mode, no sidecars at rest
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: store))
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data(repeating: 0, count: 3996))  // page 1 after the header: the schema's b-tree
        try handle.close()
        let before = try StoreFixtureBuilder.snapshot(of: folder)
        #expect(throws: (any Error).self) { try BackupRunner.run(store: store, options: .testing(temp.path("backups"))) }
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == before, "no -wal or -shm created, nothing changed")
        #expect(BackupFixtures.fileNames(in: temp.path("backups")) == [])
    }

    /// A store another connection has open is backed up online, sharing its locks: the
    /// connection's uncommitted-to-the-main-file WAL rows are in the backup.
    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func storeOpenInAnotherProcessIsBackedUpOnline() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 10)
        // Another process adds a row (committed to its WAL) and keeps the store open.
        let script = """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); c.execute("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT) VALUES (999, 1, 1)"); c.commit()
            print("ready", flush=True); sys.stdin.read()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BackupFixtures.pythonPath ?? "/usr/bin/python3")
        process.arguments = ["-c", script, store]
        let pipe = Pipe()
        let input = Pipe()
        process.standardOutput = pipe
        process.standardInput = input
        try process.run()
        defer { try? input.fileHandleForWriting.close(); process.waitUntilExit() }
        _ = pipe.fileHandleForReading.availableData  // "ready"
        #expect(StoreLocks.isInUse(StoreFileSet.discover(mainPath: store)))
        let result = try BackupRunner.run(store: store, options: .testing(temp.path("backups")))
        let restored = temp.path("restored.sqlite")
        _ = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))
        #expect(try BackupFixtures.count("ZITEM", in: restored) == 11)
    }

    @Test func aStoreNobodyHasOpenIsAtRest() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 10)
        #expect(!StoreLocks.isInUse(StoreFileSet.discover(mainPath: store)))
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        _ = try connection.scalar("SELECT count(*) FROM ZITEM")
        #expect(StoreLocks.isInUse(StoreFileSet.discover(mainPath: store)), "an open WAL connection holds the -shm lock")
    }

    @Test func locksTableIsParsedByDeviceAndInode() {
        let table = """
            1: POSIX  ADVISORY  READ 17236 fe:00:16244946 128 128
            2: POSIX  ADVISORY  READ 17236 08:1f:42 1073741826 1073742335
            3: -> POSIX  ADVISORY  WRITE 99 00:2a:7 0 EOF
            """
        let parsed = StoreLocks.parse(table)
        #expect(parsed == [StoreLocks.FileIdentity(major: 0xFE, minor: 0, inode: 16_244_946),
                           StoreLocks.FileIdentity(major: 8, minor: 0x1F, inode: 42),
                           StoreLocks.FileIdentity(major: 0, minor: 0x2A, inode: 7)])
    }

    /// Found by the campaign: an empty main file beside a -wal SQLite does not accept (another
    /// store's) is a database of no pages. Before: "changed while it was being compressed…
    /// report a bug" (70), and main's read-only connection deleted the -wal.
    @Test func emptyMainFileWithAForeignWALIsEmptyNotABug() throws {
        let temp = try TemporaryDirectory()
        let other = temp.path("other.sqlite")
        let writer = try SQLiteConnection(path: other, options: SQLiteOpenOptions(mode: .create))
        try writer.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        let folder = temp.path("store")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: folder + "/s.sqlite", contents: Data()))
        try FileManager.default.copyItem(atPath: other + "-wal", toPath: folder + "/s.sqlite-wal")
        let before = try StoreFixtureBuilder.snapshot(of: folder)
        let error = #expect(throws: StoreAccessError.self) { try BackupRunner.run(store: folder + "/s.sqlite", options: .testing(temp.path("b"))) }
        #expect(error?.kind == .empty)
        #expect(error?.exitStatus == .notAStore)
        #expect(error?.description.contains("has no pages: its main file is empty and SQLite finds no committed transaction in its -wal") == true)
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == before, "the -wal is left as found")
        #expect(BackupFixtures.fileNames(in: temp.path("b")) == [])
    }
}
