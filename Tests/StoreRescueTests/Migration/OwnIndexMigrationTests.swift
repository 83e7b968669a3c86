import Foundation
import Testing
@testable import StoreRescue

/// An index an app made on its own column of an entity table (`CREATE INDEX ZAPPNOTE_IDX ON
/// ZENTRY(ZAPPNOTE)`) is carried with the column (recreated on the table the rows go to, its
/// name quoted), and every index of the store that the migrated store neither lays out nor
/// carries is reported: until this change both were dropped without a word.
///
/// Read from the report's JSON, the contract jobs read (`carriedIndexes`, `leftOutIndexes`).
@Suite struct OwnIndexMigrationTests {
    private func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

    private func execute(_ sql: String, on path: String) throws {
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite)).execute(sql)
    }

    /// `name → (table, columns)` of every explicit index in `path`.
    private func indexes(in path: String) throws -> [String: (table: String, columns: [String], unique: Bool)] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        var result: [String: (table: String, columns: [String], unique: Bool)] = [:]
        for row in try connection.rows("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL") {
            let name = row[0].string ?? ""
            let columns = try connection.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)]).map { $0[0].string ?? "" }
            result[name] = (row[1].string ?? "", columns, (row[2].string ?? "").hasPrefix("CREATE UNIQUE"))
        }
        return result
    }

    /// The Journal sample with the app's `ZENTRY.ZAPPNOTE`, and `sql` run on it.
    private func journal(in directory: TemporaryDirectory, _ sql: String) throws -> String {
        let store = directory.path("s.sqlite")
        try FileManager.default.copyItem(atPath: UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        try execute("ALTER TABLE ZENTRY ADD COLUMN ZAPPNOTE TEXT; UPDATE ZENTRY SET ZAPPNOTE = 'n' || Z_PK; " + sql, on: store)
        return store
    }

    private var catalog: Catalog {
        get throws { try Catalog.load(path: UpgradeFixture.journal.appendingPathComponent("catalog.json").path) }
    }

    @Test func anIndexOfTheAppsOwnColumnIsCarriedAndOneOnTheModelsColumnsReported() throws {
        let directory = try TemporaryDirectory()
        let store = try journal(in: directory, """
            CREATE INDEX ZAPPNOTE_IDX ON ZENTRY (ZAPPNOTE);
            CREATE INDEX MYTITLE_IDX ON ZENTRY (ZTITLE);
            """)
        let catalog = try catalog

        let plan = StoreMigrator.migrate(store: store, catalog: catalog, to: directory.path("plan.sqlite"), options: MigrationOptions(isDryRun: true))
        #expect(plan.status == .wouldMigrate, "\(plan.error?.message ?? "") \(plan.refusals.map(\.message))")
        let planJSON = try json(plan)
        let carried = objects(planJSON["carriedIndexes"])
        #expect(carried.count == 1 && carried.first?["index"] as? String == "ZAPPNOTE_IDX" && carried.first?["table"] as? String == "ZENTRY"
                && carried.first?["to"] as? String == "ZENTRY", "\(carried)")
        let leftOut = objects(planJSON["leftOutIndexes"])
        #expect(leftOut.count == 1 && leftOut.first?["index"] as? String == "MYTITLE_IDX" && leftOut.first?["table"] as? String == "ZENTRY"
                && (leftOut.first?["reason"] as? String ?? "").contains("ZTITLE"), "\(leftOut)")
        let planText = plan.renderText()
        #expect(planText.contains("index carried: ZAPPNOTE_IDX on ZENTRY → ZENTRY"), "\(planText)")
        #expect(planText.contains("index left out: MYTITLE_IDX on ZENTRY ("), "\(planText)")

        let output = directory.path("o.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: output)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let written = try indexes(in: output)
        #expect(written["ZAPPNOTE_IDX"]?.table == "ZENTRY" && written["ZAPPNOTE_IDX"]?.columns == ["ZAPPNOTE"], "\(written.keys.sorted())")
        #expect(written["MYTITLE_IDX"] == nil)
        let reportJSON = try json(report)
        let result = try #require(reportJSON["result"] as? [String: Any])
        // The run says what the dry run said.
        #expect(objects(result["carriedIndexes"]).map { $0["index"] as? String } == ["ZAPPNOTE_IDX"], "\(result)")
        #expect(objects(result["leftOutIndexes"]).map { $0["index"] as? String } == ["MYTITLE_IDX"], "\(result)")
        #expect(objects(result["leftOutIndexes"]).first?["reason"] as? String == leftOut.first?["reason"] as? String)
        #expect(objects(reportJSON["leftOutIndexes"]).count == 1 && objects(reportJSON["carriedIndexes"]).count == 1)
        let text = report.renderText()
        #expect(text.contains("Carried over (the app's own indexes): ZAPPNOTE_IDX on ZENTRY"), "\(text)")
        #expect(text.contains("Left out: index MYTITLE_IDX on ZENTRY ("), "\(text)")
        #expect(report.result?.verification.matchOutcome == "exact" && report.result?.verification.matchVersion == "V4")
        #expect(StoreMatcher.match(storePath: output, catalog: catalog).outcome == .exact)
    }

    /// Not plain (a partial index, a UNIQUE one whose rows could come from elsewhere is treated
    /// the same way only when they do), and a name the target lays out itself: left out, said.
    @Test func aPartialIndexAndANameTheTargetLaysOutAreLeftOutAndReported() throws {
        let directory = try TemporaryDirectory()
        let store = try journal(in: directory, """
            CREATE INDEX ZAPPNOTE_PARTIAL ON ZENTRY (ZAPPNOTE) WHERE ZAPPNOTE IS NOT NULL;
            CREATE INDEX Z_Entry_byCreatedAt ON ZENTRY (ZAPPNOTE);
            CREATE UNIQUE INDEX ZAPPNOTE_UNIQUE ON ZENTRY (ZAPPNOTE COLLATE NOCASE DESC);
            """)
        let catalog = try catalog
        let plan = StoreMigrator.migrate(store: store, catalog: catalog, to: directory.path("plan.sqlite"), options: MigrationOptions(isDryRun: true))
        let leftOut = objects(try json(plan)["leftOutIndexes"])
        let reasons = Dictionary(leftOut.map { ($0["index"] as? String ?? "", $0["reason"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(reasons.keys.sorted() == ["ZAPPNOTE_PARTIAL", "Z_Entry_byCreatedAt"], "\(leftOut)")
        #expect(reasons["ZAPPNOTE_PARTIAL"]?.contains("a partial index") == true, "\(reasons)")
        #expect(reasons["Z_Entry_byCreatedAt"]?.contains("V4 lays out an index of that name") == true, "\(reasons)")
        #expect(objects(try json(plan)["carriedIndexes"]).map { $0["index"] as? String } == ["ZAPPNOTE_UNIQUE"])

        let output = directory.path("o.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: output)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let written = try indexes(in: output)
        #expect(written["ZAPPNOTE_PARTIAL"] == nil)
        #expect(written["Z_Entry_byCreatedAt"]?.columns == ["ZCREATEDAT"], "V4's own index, not the app's")
        #expect(written["ZAPPNOTE_UNIQUE"]?.unique == true && written["ZAPPNOTE_UNIQUE"]?.columns == ["ZAPPNOTE"])
        let result = try #require(try json(report)["result"] as? [String: Any])
        #expect(Set(objects(result["leftOutIndexes"]).compactMap { $0["index"] as? String }) == ["ZAPPNOTE_PARTIAL", "Z_Entry_byCreatedAt"])
        #expect(StoreMatcher.match(storePath: output, catalog: catalog).outcome == .exact)
    }

    @Test func aHostileIndexNameIsCarriedIntactAndQuoted() throws {
        let directory = try TemporaryDirectory()
        let name = "i\"dx; DROP TABLE ZENTRY; --'\u{301}"
        let store = try journal(in: directory, "CREATE INDEX \(name.quotedSQLIdentifier) ON ZENTRY (\"ZAPPNOTE\");")
        let output = directory.path("o.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: try catalog, to: output)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let written = try indexes(in: output)
        #expect(written.keys.contains { $0.hasSameBytes(as: name) }, "\(written.keys.sorted())")
        #expect(written.first { $0.key.hasSameBytes(as: name) }?.value.columns == ["ZAPPNOTE"])
        #expect(try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable)).scalar("SELECT count(*) FROM ZENTRY")?.int64 == 5)
    }

    /// A version written on the way (a custom stage's `didMigrate` runs on V3) carries the index
    /// and leaves the other out; the run says what the dry run said (it used to name V3 there).
    @Test func aVersionWrittenOnTheWaySaysWhatTheDryRunSaid() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path("Journal")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Journal"), toPath: folder)
        let catalogPath = folder + "/catalog.json"
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: catalogPath))) as? [String: Any])
        var stages = try #require(object["stages"] as? [Any])
        stages[1] = ["from": "V2", "to": "V3", "kind": "custom", "didMigrate": [["update": "Entry", "set": ["title": "title"], "where": "1"]]]
        object["stages"] = stages
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: catalogPath))
        let catalog = try Catalog.load(path: catalogPath)
        let store = try journal(in: directory, "CREATE INDEX ZAPPNOTE_IDX ON ZENTRY (ZAPPNOTE); CREATE INDEX MYTITLE_IDX ON ZENTRY (ZTITLE);")

        let plan = StoreMigrator.migrate(store: store, catalog: catalog, to: directory.path("plan.sqlite"), options: MigrationOptions(isDryRun: true))
        #expect(plan.status == .wouldMigrate, "\(plan.error?.message ?? "") \(plan.refusals.map(\.message))")
        let output = directory.path("o.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: output)
        let result = try #require(report.result, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(result.intermediateVersions == 1)
        #expect(plan.carriedIndexes.map(\.index) == ["ZAPPNOTE_IDX"] && result.carriedIndexes == plan.carriedIndexes, "\(result.carriedIndexes)")
        #expect(plan.leftOutIndexes.map(\.index) == ["MYTITLE_IDX"] && result.leftOutIndexes == plan.leftOutIndexes, "\(result.leftOutIndexes)")
        #expect(try indexes(in: output)["ZAPPNOTE_IDX"]?.columns == ["ZAPPNOTE"])
        #expect(result.verification.matchOutcome == "exact")
    }

    @Test func upgradeCarriesTheIndexOfTheAppsOwnColumn() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        try execute("ALTER TABLE ZENTRY ADD COLUMN ZAPPNOTE TEXT; CREATE INDEX ZAPPNOTE_IDX ON ZENTRY (ZAPPNOTE); CREATE INDEX MYTITLE_IDX ON ZENTRY (ZTITLE)", on: store)
        let plan = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(dryRun: true))
        #expect(plan.renderText().contains("index carried: ZAPPNOTE_IDX on ZENTRY → ZENTRY"), "\(plan.renderText())")
        #expect(plan.renderText().contains("index left out: MYTITLE_IDX on ZENTRY ("), "\(plan.renderText())")

        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(try indexes(in: store)["ZAPPNOTE_IDX"]?.columns == ["ZAPPNOTE"])
        let result = (try json(report)["migration"] as? [String: Any])?["result"] as? [String: Any]
        #expect(objects(result?["leftOutIndexes"]).map { $0["index"] as? String } == ["MYTITLE_IDX"], "\(result ?? [:])")
        #expect(report.renderText().contains("left out: index MYTITLE_IDX on ZENTRY ("), "\(report.renderText())")
    }
}
