import Foundation
import Testing
@testable import StoreRescue

/// A store given through a symbolic link with `--follow-symlinks` is its target *with the
/// target's* `-wal` and `-journal`, as SQLite itself opens it: every reading command sees the
/// rows that live only in the target's `-wal` (or rolls back its hot `-journal`), never the bare
/// main file beside a link that has no sidecars.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct SymlinkedStoreTests {
    static let journal = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Journal")

    /// `real/<name>` and `links/<name>`, a symbolic link to it.
    private func link(_ name: String, in dir: TemporaryDirectory) throws -> (real: String, link: String) {
        for folder in ["real", "links"] {
            try FileManager.default.createDirectory(atPath: dir.path(folder), withIntermediateDirectories: false)
        }
        let real = dir.path("real/\(name)")
        try FileManager.default.createSymbolicLink(atPath: dir.path("links/\(name)"), withDestinationPath: real)
        return (real, dir.path("links/\(name)"))
    }

    /// The Journal sample (V1: 5 entries, 3 tags) with its 5 entries only in its `-wal`: the
    /// main file has none, as a store is left when its app is killed before a checkpoint.
    private func journalStoreWithEntriesInWAL(at path: String) throws {
        try FileManager.default.copyItem(atPath: Self.journal.appendingPathComponent("Journal.sqlite").path, toPath: path)
        try UpgradeFixture.moveEntriesIntoWAL(of: path)
        #expect(StoreFileSet.discover(mainPath: path).sidecar("-wal")?.holdsData == true)
    }

    private func rowCount(_ json: [String: Any], table: String) -> Int? {
        (json["tables"] as? [[String: Any]])?.first { $0["name"] as? String == table }?["rowCount"] as? Int
    }

    @Test func inspectCountsThroughALinkReadTheTargetsWAL() throws {
        let dir = try TemporaryDirectory()
        let (real, link) = try link("store.sqlite", in: dir)
        try ReplacementFixtures.walStoreAtRest(at: real, rows: 7)
        try FileManager.default.removeItem(atPath: real + ".source")
        try? FileManager.default.removeItem(atPath: real + ".source-wal")
        try? FileManager.default.removeItem(atPath: real + ".source-shm")
        let before = try StoreFixtureBuilder.snapshot(of: dir.path("real"))

        let direct = try CommandRunner.run(["inspect", "--counts", "--json", real])
        let linked = try CommandRunner.run(["inspect", "--counts", "--json", "--follow-symlinks", link])
        #expect(direct.status == 0 && linked.status == 0, "\(direct.stderr) \(linked.stderr)")
        let json = try linked.json()
        #expect(json["accessMethod"] as? String == "privateCopy")
        #expect(json["sidecars"] as? [String] == ["-wal"])
        #expect(rowCount(json, table: "t") == 7, "the rows live only in the target's -wal")
        #expect(rowCount(json, table: "t") == rowCount(try direct.json(), table: "t"))
        #expect(json["path"] as? String == link, "the report names the path given")
        #expect(try StoreFixtureBuilder.snapshot(of: dir.path("real")) == before, "the target and its sidecars are untouched")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("links")) == ["store.sqlite"], "nothing beside the link")
    }

    @Test func inspectThroughALinkRollsBackTheTargetsHotJournal() throws {
        let dir = try TemporaryDirectory()
        let (real, link) = try link("crashed.sqlite", in: dir)
        let source = dir.path("live.sqlite")
        try StoreFixtureBuilder.database(at: source, sql: "CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);")
        // A writer in the middle of a transaction, its cache spilled to the main file.
        let writer = try SQLiteConnection(path: source, options: SQLiteOpenOptions(mode: .readWrite))
        try writer.execute("PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1; BEGIN; DELETE FROM t; WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 400) INSERT INTO t SELECT randomblob(3000) FROM n;")
        try FileManager.default.copyItem(atPath: source, toPath: real)
        try FileManager.default.copyItem(atPath: source + "-journal", toPath: real + "-journal")
        try writer.execute("ROLLBACK")

        let linked = try CommandRunner.run(["inspect", "--counts", "--json", "--follow-symlinks", link])
        #expect(linked.status == 0, "\(linked.stderr)")
        let json = try linked.json()
        #expect(json["accessMethod"] as? String == "privateCopy")
        #expect(rowCount(json, table: "t") == 3, "the half-written transaction is rolled back, as SQLite would")
        let findings = json["findings"] as? [[String: Any]] ?? []
        #expect(findings.contains { $0["code"] as? String == "hot-journal" })
    }

    @Test func migrateThroughALinkCarriesTheRowsInTheTargetsWAL() throws {
        let dir = try TemporaryDirectory()
        let (real, link) = try link("Journal.sqlite", in: dir)
        try journalStoreWithEntriesInWAL(at: real)
        let catalog = Self.journal.appendingPathComponent("catalog.json").path
        let before = try StoreFixtureBuilder.snapshot(of: dir.path("real"))

        let output = dir.path("v4.sqlite")
        let run = try CommandRunner.run(["migrate", link, "--catalog", catalog, "--out", output, "--follow-symlinks", "--json"])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let result = try #require(try run.json()["result"] as? [String: Any])
        #expect(result["rowsByEntity"] as? [String: Int] == ["Entry": 5, "Tag": 3])
        let written = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try written.scalar("SELECT count(*) FROM ZENTRY")?.int64 == 5)
        #expect(try StoreFixtureBuilder.snapshot(of: dir.path("real")) == before, "the target and its sidecars are untouched")
    }

    @Test func matchAndSalvageThroughALinkReadTheTargetsWAL() throws {
        let dir = try TemporaryDirectory()
        let (real, link) = try link("Journal.sqlite", in: dir)
        try journalStoreWithEntriesInWAL(at: real)
        let catalog = Self.journal.appendingPathComponent("catalog.json").path

        // The main file alone has no entries; read with its -wal it is V1 with 5.
        let salvaged = dir.path("salvaged.sqlite")
        let salvage = try CommandRunner.run(["salvage", link, "--out", salvaged, "--follow-symlinks", "--json"])
        #expect(salvage.status == 0, "\(salvage.stderr)")
        let output = try SQLiteConnection(path: salvaged, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try output.scalar("SELECT count(*) FROM ZENTRY")?.int64 == 5, "the -wal's frames beside the target are applied")

        let match = try CommandRunner.run(["match", link, "--catalog", catalog, "--follow-symlinks", "--json"])
        #expect(match.status == 0, "\(match.stderr)")
        #expect(try match.json()["outcome"] as? String == "exact")
    }

    /// The library, not only the command: `Salvager` told to follow a link reads the target with
    /// the target's `-wal`.
    @Test func salvagerFollowingALinkReadsTheTargetsWAL() throws {
        let dir = try TemporaryDirectory()
        let (real, link) = try link("Journal.sqlite", in: dir)
        try journalStoreWithEntriesInWAL(at: real)
        let salvaged = dir.path("library.sqlite")
        try Salvager.salvage(store: link, into: salvaged, options: SalvageOptions(followsSymlinks: true))
        let output = try SQLiteConnection(path: salvaged, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try output.scalar("SELECT count(*) FROM ZENTRY")?.int64 == 5, "the -wal's frames beside the target are applied")
    }

    @Test func writingCommandsRefuseALinkAndLeaveIt() throws {
        let dir = try TemporaryDirectory()
        let (real, link) = try link("Journal.sqlite", in: dir)
        try journalStoreWithEntriesInWAL(at: real)
        let catalog = Self.journal.appendingPathComponent("catalog.json").path
        let before = try StoreFixtureBuilder.snapshot(of: dir.path("real"))
        for command in ["upgrade", "adopt"] {
            let run = try CommandRunner.run([command, link, "--catalog", catalog, "--backup-dir", dir.path("backups")])
            #expect(run.status == 66, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("is a symbolic link"), "\(command)")
        }
        #expect(try CommandRunner.run(["backup", link, "--to", dir.path("backups")]).status == 66)
        var info = stat()
        #expect(lstat(link, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK, "the link is still a link")
        #expect(try StoreFixtureBuilder.snapshot(of: dir.path("real")) == before)
    }
}
