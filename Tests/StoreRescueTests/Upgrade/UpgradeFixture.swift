import Foundation
import Testing
@testable import StoreRescue

/// A store folder (`app/`, as an app's container would hold it) and a backup folder beside it,
/// with the catalogs the upgrade tests use, and ways to read what a run left behind.
final class UpgradeFixture {
    let directory: TemporaryDirectory
    let appFolder: String
    let backups: String

    static let journal = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Journal")

    init() throws {
        directory = try TemporaryDirectory()
        appFolder = directory.path("app")
        backups = directory.path("backups")
        try FileManager.default.createDirectory(atPath: appFolder, withIntermediateDirectories: false)
    }

    /// The Journal sample (V1, unversioned, framework 1241) copied into the app folder.
    func journalStore() throws -> String {
        let store = appFolder + "/Journal.sqlite"
        try FileManager.default.copyItem(atPath: Self.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        return store
    }

    /// Leaves `store`'s `ZENTRY` rows only in its `-wal`: taken out of the main file and put
    /// back with automatic checkpoints off and no checkpoint on close, as a store is left when
    /// its app is killed. Read with its `-wal` the store is as before; the main file alone has
    /// no entries.
    static func moveEntriesIntoWAL(of store: String, table: String = "ZENTRY") throws {
        let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        _ = try writer.scalar("PRAGMA journal_mode = WAL")
        try writer.execute("CREATE TEMP TABLE saved AS SELECT * FROM \(table); DELETE FROM \(table)")
        _ = try writer.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        try writer.disableCheckpointOnClose()
        try writer.execute("PRAGMA wal_autocheckpoint = 0; INSERT INTO \(table) SELECT * FROM saved")
    }

    var journalCatalog: Catalog {
        get throws { try Catalog.load(path: Self.journal.appendingPathComponent("catalog.json").path) }
    }

    /// `Cat` V1 → V2 adding the required `age` with no default (seed 000), and an `Owner`
    /// entity the change does not touch. `map` adds the one-line custom stage that fills it.
    func catsCatalog(map: Bool) throws -> Catalog {
        try catsCatalog(
            named: map ? "cats-map.json" : "cats.json",
            stage: map ? #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}"# : #"{"kind": "lightweight", "from": "V1", "to": "V2"}"#)
    }

    /// The cats catalog with `stage` as its one stage and V2's `age` attribute as `age` (JSON);
    /// `current` names the version the app ships (absent: the last, V2).
    func catsCatalog(named name: String, stage: String, age: String = #"{"name": "age", "type": "Int16"}"#,
                     v2OwnerEmail: Bool = true, current: String? = nil) throws -> Catalog {
        let path = directory.path(name)
        let email = v2OwnerEmail ? #", {"name": "email", "type": "String", "optional": true}"# : ""
        let json = """
            {"formatVersion": 1, "app": "Cats", "versions": [
              {"name": "V1", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]},
              {"name": "V2", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}, \(age)]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}\(email)]}]}],
             "stages": [\(stage)]\(current.map { #", "current": "\#($0)""# } ?? "")}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        return try Catalog.load(path: path)
    }

    /// A cats store at `version` (V1 unless said) with `cats` cats and `owners` owners
    /// (framework 1523, versioned); each cat's `age` is `catAge` when given (a version that
    /// has it).
    /// Zeroes the first 100 bytes of `store` (its SQLite header): nothing opens it any more,
    /// and its pages are still there for a salvage.
    static func zeroHeader(of store: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        handle.write(Data(count: 100))
        try handle.close()
    }

    func catsStore(cats: Int, owners: Int, catalog: Catalog, at versionName: String = "V1", catAge: Int? = nil) throws -> String {
        let store = appFolder + "/Cats.sqlite"
        let version = try #require(catalog.version(named: versionName))
        try StoreCreator.create(model: version.model, versionIdentifiers: nil, at: store)
        let layout = try StoreLayoutBuilder.layout(for: version.model)
        let catEnt = try #require(layout.entityNumber(of: "Cat"))
        let ownerEnt = try #require(layout.entityNumber(of: "Owner"))
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(cats))
            INSERT INTO ZCAT (Z_PK, Z_ENT, Z_OPT, ZNAME\(catAge == nil ? "" : ", ZAGE")) SELECT i, \(catEnt), 1, 'cat ' || i || ' ' || printf('%.*c', 300, 'x')\(catAge.map { ", \($0)" } ?? "") FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(owners))
            INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT i, \(ownerEnt), 1, 'owner ' || i FROM n;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(cats) WHERE Z_NAME = 'Cat';
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(owners) WHERE Z_NAME = 'Owner';
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
        return store
    }

    /// V1 and V2 of the same hashes (the same entities) with a custom stage V1 → V2 between
    /// them whose `map` upper-cases every cat's name: a store of either is `ambiguous`.
    func catsSameHashesCatalog() throws -> Catalog {
        let path = directory.path("cats-same.json")
        let json = """
            {"formatVersion": 1, "app": "Cats", "current": "V2", "versions": [
              {"name": "V1", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]},
              {"name": "V2", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]}],
             "stages": [{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"name": "upper(name)"}}}]}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        return try Catalog.load(path: path)
    }

    /// A fault hook that, at `stage`, renames the run's workspace folder away and makes an empty
    /// one of the same name: what a user who may write in the store's folder could do.
    func swappingTheWorkspace(at stage: StoreUpgrader.Stage) -> (StoreUpgrader.Stage) throws -> Void {
        let folder = appFolder
        return { current in
            guard current == stage else { return }
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            guard let workspace = names.first(where: { $0.hasPrefix(".upgrade") }) else { return }
            let path = folder + "/" + workspace
            rename(path, path + "-moved")
            mkdir(path, 0o700)
        }
    }

    /// Zeroes the 4096-byte pages `offsets` after the middle page of `store`.
    static func zeroPagesInTheMiddle(of store: String, after offsets: [UInt64]) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        let middle = try handle.seekToEnd() / 4096 / 2
        for offset in offsets {
            try handle.seek(toOffset: (middle + offset) * 4096)
            handle.write(Data(count: 4096))
        }
        try handle.close()
    }

    func options(_ policy: UpgradeOptions.FailurePolicy = .keep, dryRun: Bool = false, mode: UpgradeOptions.Mode = .upgrade,
                 lockTimeout: TimeInterval = 2) -> UpgradeOptions {
        UpgradeOptions(mode: mode, backupDirectory: backups, onFailure: policy, isDryRun: dryRun, lockTimeout: lockTimeout)
    }

    /// Every file of the app folder, by name (regular files' bytes).
    func appFiles() throws -> [String: Data] { try StoreFixtureBuilder.snapshot(of: appFolder) }

    /// Zeroes the 4 KiB page of `store` that holds `text` (the first place it occurs).
    static func zeroPage(holding text: String, in store: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store))
        let offset = try #require(bytes.range(of: Data(text.utf8))?.lowerBound)
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seek(toOffset: UInt64(offset / 4096 * 4096))
        handle.write(Data(count: 4096))
        try handle.close()
    }

    /// `SELECT count(*)` of a table in a store, read immutably.
    static func count(_ table: String, in store: String, where condition: String = "1") throws -> Int64 {
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
        return try connection.scalar("SELECT count(*) FROM \(table) WHERE \(condition)")?.int64 ?? -1
    }

    /// Every row of a table as text, in `Z_PK` order (to compare content across runs).
    static func rows(_ table: String, in store: String) throws -> [String] {
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
        return try connection.rows("SELECT * FROM \(table) ORDER BY Z_PK").map { row in
            row.map { "\($0)" }.joined(separator: "|")
        }
    }

    /// True when two main files hold the same database page for page, apart from the header
    /// fields settling a store rewrites (journal mode, change counter: `SnapshotComparison`).
    static func sameDatabase(_ left: String, _ right: String) throws -> Bool {
        let file = try ReadableFile(path: left)
        return try SnapshotComparison.compare(
            storeSize: file.size, readStore: { buffer, offset in try file.read(into: buffer, at: offset) }, snapshot: right) == nil
    }

    /// Holds the store open in another process (python3's sqlite3) with a write transaction
    /// until the returned process is terminated.
    static func holdOpen(_ store: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(BackupFixtures.pythonPath))
        process.arguments = ["-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute('BEGIN IMMEDIATE')
            print('held', flush=True)
            time.sleep(60)
            """, store]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        _ = pipe.fileHandleForReading.readData(ofLength: 5)
        return process
    }

    static func uuid(of store: String) throws -> String? {
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
        return try connection.scalar("SELECT Z_UUID FROM Z_METADATA")?.string
    }

    /// Names beside the store that are not the store set (a workspace, a stray file).
    func strayNames(besides store: String) throws -> [String] {
        let name = (store as NSString).lastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: appFolder).filter { $0 != name && !$0.hasPrefix(name + "-") }.sorted()
    }
}
