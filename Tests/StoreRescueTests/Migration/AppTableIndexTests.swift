import Foundation
import Testing
@testable import StoreRescue

/// The indexes of an app's own table (carried by `VersionWriter.copyOtherTables`): partial,
/// expression, `COLLATE` and `UNIQUE` indexes are carried as the store has them; one SQLite
/// cannot make in the migrated store (a collation or function the app registers itself) is left
/// out and reported, by the dry run and the run alike — it used to stop the whole migration
/// (exit 3, "no such collation sequence", with advice to correct the catalog) — and one whose
/// definition is not one plain statement, which was dropped without a word, is reported too.
@Suite struct AppTableIndexTests {
    typealias M = TestModel

    private func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

    private func indexNames(in path: String) throws -> [String] {
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'APPLOG' AND sql IS NOT NULL ORDER BY name").compactMap { $0.first?.string }
    }

    /// A V1 store with one item and the app's table `APPLOG` (three rows) and its indexes.
    private func store(_ fixture: MigrationFixture) throws -> String {
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { try $0.insert("Item", values: ["title": .text("a")]) }
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite)).execute("""
            CREATE TABLE APPLOG (id INTEGER PRIMARY KEY, msg TEXT, n INT);
            INSERT INTO APPLOG (msg, n) VALUES ('a', 1), ('B', 2), ('c', NULL);
            CREATE INDEX APPLOG_PARTIAL ON APPLOG (msg) WHERE n IS NOT NULL;
            CREATE INDEX APPLOG_EXPR ON APPLOG (lower(msg));
            CREATE INDEX APPLOG_NOCASE ON APPLOG (msg COLLATE NOCASE);
            CREATE UNIQUE INDEX APPLOG_UNIQUE ON APPLOG (msg);
            CREATE INDEX APPLOG_COLL ON APPLOG (msg COLLATE NOCASE);
            CREATE INDEX APPLOG_TWO ON APPLOG (n);
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
        // As an app that registers its own collation leaves it (SQLite keeps the text it was given);
        // and a definition followed by a second statement, which SQLite never reads.
        try SalvageFixtures.editSchema(of: path, """
            UPDATE sqlite_schema SET sql = replace(sql, 'NOCASE', 'APPCOLLATION') WHERE name = 'APPLOG_COLL';
            UPDATE sqlite_schema SET sql = sql || '; CREATE TABLE pwned (a)' WHERE name = 'APPLOG_TWO';
            """)
        return path
    }

    static let versions = [
        M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("title")])]),
        M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("note")])]),
    ]

    @Test func indexesSQLiteCanMakeAreCarriedTheOthersReported() throws {
        let fixture = try MigrationFixture(versions: Self.versions)
        let path = try store(fixture)

        let plan = fixture.migrate(path, dryRun: true)
        #expect(plan.status == .wouldMigrate, "\(plan.error?.message ?? "") \(plan.refusals.map(\.message))")
        let planned = objects(try json(plan)["leftOutIndexes"])
        let reasons = Dictionary(planned.map { ($0["index"] as? String ?? "", $0["reason"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(reasons.keys.sorted() == ["APPLOG_COLL", "APPLOG_TWO"], "\(planned)")
        #expect(reasons["APPLOG_COLL"]?.contains("APPCOLLATION") == true, "\(reasons)")
        #expect(reasons["APPLOG_TWO"]?.contains("not one plain CREATE INDEX") == true, "\(reasons)")
        #expect(planned.allSatisfy { $0["table"] as? String == "APPLOG" })

        let report = fixture.migrate(path)
        let result = try #require(report.result, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        #expect(result.carriedTables == ["APPLOG"])
        #expect(try indexNames(in: result.path) == ["APPLOG_EXPR", "APPLOG_NOCASE", "APPLOG_PARTIAL", "APPLOG_UNIQUE"])
        let resultLeftOut = objects((try json(report)["result"] as? [String: Any])?["leftOutIndexes"])
        #expect(resultLeftOut.map { $0["index"] as? String ?? "" }.sorted() == ["APPLOG_COLL", "APPLOG_TWO"], "\(resultLeftOut)")
        #expect(resultLeftOut.map { $0["reason"] as? String ?? "" }.sorted() == reasons.values.sorted(), "the run says what the dry run said")
        #expect(report.renderText().contains("Left out: index APPLOG_COLL on APPLOG ("), "\(report.renderText())")
        let rows = try SQLiteConnection(path: result.path, options: SQLiteOpenOptions(mode: .immutable)).rows("SELECT count(*) FROM APPLOG")
        #expect(rows == [[.integer(3)]])
        let pwned = try SQLiteConnection(path: result.path, options: SQLiteOpenOptions(mode: .immutable))
            .scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'pwned'")?.int64
        #expect(pwned == 0, "the second statement is never run")
        #expect(report.result?.verification.matchOutcome == "exact")
    }
}
