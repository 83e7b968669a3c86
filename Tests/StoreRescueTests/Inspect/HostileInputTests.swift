import Foundation
import Testing
@testable import StoreRescue

/// Hostile and damaged inputs: a clear error or finding and the documented exit status, never a
/// crash or a hang.
@Suite struct HostileInputTests {
    private let itemHash = Data(repeating: 7, count: 32)

    @Test func nonStoresGetKindsAndExitStatuses() throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.path("empty"), contents: Data()))
        #expect(FileManager.default.createFile(atPath: dir.path("text"), contents: Data("just words\n".utf8)))
        try FileManager.default.createDirectory(atPath: dir.path("dir"), withIntermediateDirectories: false)
        let cases: [(String, StoreKind, StoreRescue.ExitStatus)] = [
            ("empty", .empty, .notAStore), ("text", .notSQLite, .notAStore), ("dir", .directory, .noInput),
            ("missing", .missing, .noInput),
        ]
        for (name, kind, status) in cases {
            let report = StoreInspector.inspect(path: dir.path(name))
            #expect(report.kind == kind, "\(name)")
            #expect(report.exitStatus == status, "\(name)")
            let error = try #require(report.error, "\(name)")
            #expect(error.message.contains(dir.path(name)), "the message names the file")
            #expect(error.hint?.isEmpty == false, "the message says what to try")
            #expect(report.findings.first?.code == "input-rejected")
        }
    }

    @Test func plainSQLiteDatabaseIsNotCoreData() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.database(at: dir.path("plain.db"), sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);")
        let report = StoreInspector.inspect(path: dir.path("plain.db"))
        #expect(report.kind == .sqliteDatabase)
        #expect(report.exitStatus == .success)
        #expect(report.findings.map(\.code) == ["not-core-data"])
        #expect(report.metadata == nil && report.model == nil)
    }

    @Test func garbageMetadataPlistIsAFinding() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.coreDataStore(at: dir.path("s.sqlite"), plist: Data("bplist00 but not really".utf8))
        let report = StoreInspector.inspect(path: dir.path("s.sqlite"))
        #expect(report.kind == .coreDataStore)
        #expect(report.exitStatus == .success)
        #expect(report.metadata == nil)
        let finding = try #require(report.findings.first { $0.code == "metadata-unreadable" })
        #expect(finding.message.contains("Z_PLIST cannot be decoded"))
    }

    @Test func enormousMetadataPlistIsNotRead() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.coreDataStore(at: dir.path("s.sqlite"), plist: Data(count: 17 << 20))
        let report = StoreInspector.inspect(path: dir.path("s.sqlite"))
        let finding = try #require(report.findings.first { $0.code == "metadata-unreadable" })
        #expect(finding.message.contains("over the 16777216-byte limit"))
    }

    @Test func garbageAndEnormousModelCaches() throws {
        let dir = try TemporaryDirectory()
        let plist = StoreFixtureBuilder.metadataPlist(hashes: ["Item": itemHash])
        try StoreFixtureBuilder.coreDataStore(at: dir.path("garbage.sqlite"), plist: plist)
        try StoreFixtureBuilder.run(dir.path("garbage.sqlite"), "INSERT INTO Z_MODELCACHE VALUES (?)", [.blob(Data("not deflate at all".utf8))])
        let garbage = StoreInspector.inspect(path: dir.path("garbage.sqlite"))
        #expect(garbage.model == nil)
        #expect(garbage.findings.contains { $0.code == "model-cache-unreadable" && $0.message.contains("cannot be decoded") })

        try StoreFixtureBuilder.coreDataStore(at: dir.path("huge.sqlite"), plist: plist)
        try StoreFixtureBuilder.run(dir.path("huge.sqlite"), "INSERT INTO Z_MODELCACHE VALUES (zeroblob(33554433))")
        let huge = StoreInspector.inspect(path: dir.path("huge.sqlite"))
        #expect(huge.findings.contains { $0.code == "model-cache-unreadable" && $0.message.contains("over the 33554432-byte limit") })

        // A small blob that inflates far past the limit (a "zip bomb").
        let bomb = try RawDeflate.deflate(Data(count: 200 << 20), level: 9)
        try StoreFixtureBuilder.coreDataStore(at: dir.path("bomb.sqlite"), plist: plist)
        try StoreFixtureBuilder.run(dir.path("bomb.sqlite"), "INSERT INTO Z_MODELCACHE VALUES (?)", [.blob(bomb)])
        let exploded = StoreInspector.inspect(path: dir.path("bomb.sqlite"))
        #expect(exploded.model == nil)
        #expect(exploded.findings.contains { $0.code == "model-cache-unreadable" })
    }

    @Test func identifiersWithQuotesAndBracketsAreQuoted() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.sqlite")
        try StoreFixtureBuilder.coreDataStore(at: path, plist: StoreFixtureBuilder.metadataPlist(hashes: ["Item": itemHash]))
        try StoreFixtureBuilder.database(at: path, sql: """
            CREATE TABLE "Z""ODD" ("Z_PK" INTEGER PRIMARY KEY, "Z_ENT" INTEGER, "a""b" TEXT);
            CREATE TABLE [ZBR[ACKET] (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER);
            CREATE TABLE "Z; DROP TABLE ZITEM; --" (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER);
            INSERT INTO "Z""ODD" VALUES (5, 2, 'x');
            INSERT INTO Z_PRIMARYKEY VALUES (2, '"ODD', 0, 1), (3, 'BR[ACKET', 0, 0), (4, '; DROP TABLE ZITEM; --', 0, 0);
            """)
        let report = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true))
        #expect(report.error == nil)
        #expect(report.tables.contains { $0.name == "Z\"ODD" && $0.rowCount == 1 })
        #expect(report.tables.contains { $0.name == "ZBR[ACKET" && $0.rowCount == 0 })
        #expect(report.tables.contains { $0.name == "ZITEM" && $0.rowCount == 3 })
        let odd = try #require(report.entities.first { $0.name == "\"ODD" })
        #expect(odd.largestPrimaryKey == 5)
        #expect(report.findings.contains { $0.code == "z-max-behind" && $0.message.contains("\"ODD") })
    }

    @Test func triggersAndViewsCallingFunctionsAreNeverRun() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.sqlite")
        try StoreFixtureBuilder.coreDataStore(at: path, plist: StoreFixtureBuilder.metadataPlist(hashes: ["Item": itemHash]))
        try StoreFixtureBuilder.database(at: path, sql: """
            CREATE VIEW ZSNEAKY AS SELECT load_extension('/tmp/evil') AS x, randomblob(1000000000) AS y;
            CREATE TRIGGER zt AFTER INSERT ON ZITEM BEGIN SELECT load_extension('/tmp/evil'); END;
            """)
        let report = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true, checksIntegrity: true))
        #expect(report.exitStatus == .success)
        #expect(report.views.map(\.name) == ["ZSNEAKY"])
        #expect(report.triggers.map(\.name) == ["zt"])
        #expect(report.findings.contains { $0.code == "unexpected-schema-objects" && $0.message.contains("view ZSNEAKY") })
    }

    @Test func zMaxBehindLargestPrimaryKey() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.coreDataStore(at: dir.path("s.sqlite"), rows: 5, zMax: 2, plist: StoreFixtureBuilder.metadataPlist(hashes: ["Item": itemHash]))
        let report = StoreInspector.inspect(path: dir.path("s.sqlite"))
        let finding = try #require(report.findings.first { $0.code == "z-max-behind" })
        #expect(finding.severity == .error)
        #expect(finding.message.contains("Z_MAX of Item is 2 but ZITEM already has Z_PK 5"))
        #expect(report.entities.first?.largestPrimaryKey == 5)
    }

    @Test func missingChecksumAndEntityDisagreement() throws {
        let dir = try TemporaryDirectory()
        let plist = StoreFixtureBuilder.metadataPlist(hashes: ["Item": itemHash, "Ghost": itemHash], extra: ["STUnique": .string("app key")], checksum: false)
        try StoreFixtureBuilder.coreDataStore(at: dir.path("s.sqlite"), plist: plist)
        let report = StoreInspector.inspect(path: dir.path("s.sqlite"))
        #expect(report.findings.contains { $0.code == "no-version-checksum" && $0.message.contains("134504") })
        #expect(report.findings.contains { $0.code == "entities-disagree" && $0.message.contains("Ghost") })
        #expect(report.findings.contains { $0.code == "unversioned-identifiers" })
        #expect(report.findings.contains { $0.code == "no-model-cache" })
        #expect(report.metadata?.otherKeys["STUnique"] == .string("app key"))
    }

    @Test func damagedPagesFailQuickCheck() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: """
            CREATE TABLE t(x TEXT); CREATE INDEX tx ON t(x);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO t SELECT 'row ' || i FROM n;
            """)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        for offset in stride(from: 4096 * 3 + 200, to: 4096 * 3 + 1200, by: 1) { bytes[offset] ^= 0x5A }
        try bytes.write(to: URL(fileURLWithPath: path))
        let report = StoreInspector.inspect(path: path, options: InspectOptions(checksIntegrity: true))
        #expect(report.kind == .damaged)
        #expect(report.exitStatus == .notAStore)
        #expect(report.integrity?.ok == false || report.error != nil)
    }

    @Test func hotJournalIsRolledBackOnAPrivateCopy() throws {
        let dir = try TemporaryDirectory()
        let source = dir.path("live.sqlite")
        try StoreFixtureBuilder.coreDataStore(at: source, rows: 3, plist: StoreFixtureBuilder.metadataPlist(hashes: ["Item": itemHash]))
        // A writer in the middle of a transaction, with its cache spilled to the main file.
        let writer = try SQLiteConnection(path: source, options: SQLiteOpenOptions(mode: .readWrite))
        try writer.execute("PRAGMA journal_mode=DELETE; PRAGMA cache_size=1; BEGIN; DELETE FROM ZITEM; WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 400) INSERT INTO ZITEM SELECT i, 1, 1, randomblob(3000) FROM n;")
        let crashed = dir.path("crashed.sqlite")
        try FileManager.default.copyItem(atPath: source, toPath: crashed)
        try FileManager.default.copyItem(atPath: source + "-journal", toPath: crashed + "-journal")
        try writer.execute("ROLLBACK")
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        let report = StoreInspector.inspect(path: crashed, options: InspectOptions(countsRows: true))
        #expect(report.accessMethod == .privateCopy)
        #expect(report.findings.contains { $0.code == "hot-journal" })
        #expect(report.tables.first { $0.name == "ZITEM" }?.rowCount == 3)
        #expect(try StoreFixtureBuilder.snapshot(of: dir.url.path) == before)
    }
}
