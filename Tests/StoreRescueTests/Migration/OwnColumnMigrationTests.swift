import Foundation
import Testing
@testable import StoreRescue

/// A column an app added itself to an entity table (no version maps it) goes through
/// `migrate` and `upgrade` with its values, or — when it cannot — is left out and counted,
/// never dropped without a word (a morning's bug: the Journal's `ZENTRY.ZAPPNOTE` vanished and
/// the report said "discarded: nothing").
///
/// The report's new fields are read from its JSON, the contract jobs read.
@Suite struct OwnColumnMigrationTests {
    private typealias M = TestModel

    /// The report as JSON objects.
    private func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

    /// `(name, declared type, not null, default)` of each column of `table`.
    private func columns(_ table: String, in path: String) throws -> [String: (type: String, notNull: Bool, defaultValue: String?)] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        var result: [String: (type: String, notNull: Bool, defaultValue: String?)] = [:]
        for row in try connection.rows("SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info(?)", [.text(table)]) {
            result[row[0].string ?? ""] = (row[1].string ?? "", row[2].int64 == 1, row[3].string)
        }
        return result
    }

    private func values(_ column: String, of table: String, in path: String) throws -> [SQLiteValue] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        return try connection.rows("SELECT \(column.quotedSQLIdentifier) FROM \(table.quotedSQLIdentifier) ORDER BY Z_PK").map { $0[0] }
    }

    private func execute(_ sql: String, on path: String) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute(sql)
    }

    /// The Journal sample with `ZENTRY.ZAPPNOTE` (TEXT) holding 'x' on every entry.
    private func journalWithAppNote(in directory: TemporaryDirectory) throws -> (store: String, entries: Int64) {
        let store = directory.path("s.sqlite")
        try FileManager.default.copyItem(atPath: UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        try execute("ALTER TABLE ZENTRY ADD COLUMN ZAPPNOTE TEXT; UPDATE ZENTRY SET ZAPPNOTE = 'x'", on: store)
        let entries = try values("ZAPPNOTE", of: "ZENTRY", in: store).count
        return (store, Int64(entries))
    }

    @Test func theJournalsOwnColumnReachesV4WithItsValues() throws {
        let directory = try TemporaryDirectory()
        let (store, entries) = try journalWithAppNote(in: directory)
        #expect(entries > 0)
        let catalog = try Catalog.load(path: UpgradeFixture.journal.appendingPathComponent("catalog.json").path)
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).outcome == .exact)

        let plan = StoreMigrator.migrate(store: store, catalog: catalog, to: directory.path("plan.sqlite"), options: MigrationOptions(isDryRun: true))
        #expect(plan.status == .wouldMigrate, "\(plan.error?.message ?? "") \(plan.refusals.map(\.message))")
        let planned = objects(try json(plan)["carriedColumns"])
        #expect(planned.count == 1 && (planned.first ?? [:])["column"] as? String == "ZENTRY.ZAPPNOTE" && (planned.first ?? [:])["to"] as? String == "ZENTRY.ZAPPNOTE",
                "\(planned)")
        #expect(plan.renderText().contains("carried: ZENTRY.ZAPPNOTE → ZENTRY.ZAPPNOTE (TEXT), with its values"), "\(plan.renderText())")

        let output = directory.path("o.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: output)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.result?.verification.matchOutcome == "exact" && report.result?.verification.matchVersion == "V4")
        #expect(try values("ZAPPNOTE", of: "ZENTRY", in: output) == Array(repeating: .text("x"), count: Int(entries)))
        let result = try json(report)["result"] as? [String: Any]
        #expect(result?["carriedColumns"] as? [String] == ["ZENTRY.ZAPPNOTE"], "\(result ?? [:])")
        let resultLeftOut = objects(result?["leftOutColumns"])
        #expect(resultLeftOut.isEmpty)
        #expect(report.hops.allSatisfy { $0.discardedValues.allSatisfy { $0.count == 0 } })
        #expect(report.renderText().contains("Carried over with their values (the app's own columns): ZENTRY.ZAPPNOTE"), "\(report.renderText())")
        // Match calls the extra column benign: still exactly V4.
        #expect(StoreMatcher.match(storePath: output, catalog: catalog).version == "V4")
    }

    @Test func upgradeCarriesTheJournalsOwnColumnToV4() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        try execute("ALTER TABLE ZENTRY ADD COLUMN ZAPPNOTE TEXT; UPDATE ZENTRY SET ZAPPNOTE = 'note ' || Z_PK", on: store)
        let before = try values("ZAPPNOTE", of: "ZENTRY", in: store)

        let plan = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(dryRun: true))
        #expect(plan.renderText().contains("the app's own column, carried: ZENTRY.ZAPPNOTE → ZENTRY.ZAPPNOTE (TEXT)"), "\(plan.renderText())")

        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.target?.version == "V4")
        #expect(try values("ZAPPNOTE", of: "ZENTRY", in: store) == before)
        let migration = try json(report)["migration"] as? [String: Any]
        #expect((migration?["result"] as? [String: Any])?["carriedColumns"] as? [String] == ["ZENTRY.ZAPPNOTE"], "\(migration ?? [:])")
        #expect(report.renderText().contains("carried with their values (the app's own columns): ZENTRY.ZAPPNOTE"), "\(report.renderText())")
    }

    /// `Note` (title) at V1, renamed `Memo` at V2 through its renaming identifier.
    private func renamingFixture(v2Properties: [PropertyDescription] = [M.attribute("title")]) throws -> MigrationFixture {
        try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Note", properties: [M.attribute("title")])]),
            M.version("V2", [EntityDescription(name: "Memo", renamingIdentifier: "Note", properties: v2Properties)]),
        ])
    }

    /// Three notes (`Z_PK` 1…3) in a new store at V1, and `sql` run on it.
    private func notes(_ fixture: MigrationFixture, table: String = "ZNOTE", then sql: String) throws -> String {
        let store = try fixture.store(at: "V1")
        try execute("""
            INSERT INTO \(table) (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 1, 1, 'a'), (2, 1, 1, 'b'), (3, 1, 1, 'c');
            UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_ENT = 1;
            \(sql)
            """, on: store)
        return store
    }

    @Test func theColumnFollowsItsRowsIntoARenamedEntitysTable() throws {
        let fixture = try renamingFixture()
        let store = try notes(fixture, then: "ALTER TABLE ZNOTE ADD COLUMN ZAPPNOTE INTEGER; UPDATE ZNOTE SET ZAPPNOTE = Z_PK * 10 WHERE Z_PK > 1")
        let report = fixture.migrate(store)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let output = try #require(report.result?.path)
        #expect(try columns("ZMEMO", in: output)["ZAPPNOTE"]?.type == "INTEGER")
        #expect(try values("ZAPPNOTE", of: "ZMEMO", in: output) == [.null, .integer(20), .integer(30)])
        let planned = objects(try json(report)["carriedColumns"])
        #expect((planned.first ?? [:])["column"] as? String == "ZNOTE.ZAPPNOTE" && (planned.first ?? [:])["to"] as? String == "ZMEMO.ZAPPNOTE", "\(planned)")
        #expect((try json(report)["result"] as? [String: Any])?["carriedColumns"] as? [String] == ["ZMEMO.ZAPPNOTE"])
        #expect(report.result?.verification.matchOutcome == "exact")
    }

    @Test func aNameTheTargetLaysOutIsLeftOutAndItsValuesCounted() throws {
        // V2 adds `appNote`, whose column is ZAPPNOTE: the app's own ZAPPNOTE cannot stay.
        let fixture = try renamingFixture(v2Properties: [M.attribute("title"), M.attribute("appNote")])
        let store = try notes(fixture, then: "ALTER TABLE ZNOTE ADD COLUMN ZAPPNOTE TEXT; UPDATE ZNOTE SET ZAPPNOTE = 'mine' WHERE Z_PK < 3")

        let plan = fixture.migrate(store, dryRun: true)
        #expect(plan.status == .wouldMigrate, "\(plan.error?.message ?? "") \(plan.refusals.map(\.message))")
        #expect(plan.hops.first?.discardedValues.contains { $0.name == "own column ZNOTE.ZAPPNOTE" && $0.count == 2 } == true,
                "\(plan.hops.first?.discardedValues.map { "\($0.name) \($0.count)" } ?? [])")
        let leftOut = objects(try json(plan)["leftOutColumns"])
        #expect(leftOut.count == 1 && (leftOut.first ?? [:])["column"] as? String == "ZNOTE.ZAPPNOTE" && (leftOut.first ?? [:])["values"] as? Int == 2
                && (leftOut.first ?? [:])["discardsData"] as? Bool == true && (leftOut.first ?? [:])["hop"] as? String == "V1 → V2", "\(leftOut)")
        #expect(objects(try json(plan)["carriedColumns"]).isEmpty)
        #expect(plan.renderText().contains("2 values of own column ZNOTE.ZAPPNOTE"), "\(plan.renderText())")
        #expect(plan.renderText().contains("left out: ZNOTE.ZAPPNOTE at V1 → V2: 2 values discarded (V2 lays out a column of that name in ZMEMO)"))

        let report = fixture.migrate(store)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let output = try #require(report.result?.path)
        #expect(try values("ZAPPNOTE", of: "ZMEMO", in: output) == [.null, .null, .null], "V2's own attribute, NULL")
        let result = try json(report)["result"] as? [String: Any]
        #expect((result?["carriedColumns"] as? [String])?.isEmpty == true)
        let resultLeftOut = objects(result?["leftOutColumns"])
        #expect((resultLeftOut.first ?? [:])["values"] as? Int == 2, "\(result ?? [:])")
        #expect(report.renderText().contains("Left out: column ZNOTE.ZAPPNOTE at V1 → V2: 2 values discarded"), "\(report.renderText())")
    }

    @Test func aHostileNameIsCarriedIntact() throws {
        let fixture = try renamingFixture()
        let name = "x\"; DROP TABLE ZNOTE; --'\u{301}\"\u{301}é"
        let store = try notes(fixture, then: "ALTER TABLE ZNOTE ADD COLUMN \(name.quotedSQLIdentifier) BLOB; UPDATE ZNOTE SET \(name.quotedSQLIdentifier) = X'00FF' WHERE Z_PK = 2")
        let report = fixture.migrate(store)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let output = try #require(report.result?.path)
        let names = try columns("ZMEMO", in: output).keys
        #expect(names.contains { $0.hasSameBytes(as: name) }, "\(names.sorted())")
        #expect(try values(name, of: "ZMEMO", in: output) == [.null, .blob(Data([0, 255])), .null])
        #expect(report.result?.verification.matchOutcome == "exact")
    }

    @Test func constraintsDefaultsAndCollationsAreNotCarried() throws {
        let fixture = try renamingFixture()
        let store = try notes(fixture, then: """
            ALTER TABLE ZNOTE ADD COLUMN ZTAG VARCHAR(20) NOT NULL DEFAULT 'dflt' COLLATE NOCASE CHECK (length(ZTAG) < 10) REFERENCES ZNOTE(Z_PK);
            UPDATE ZNOTE SET ZTAG = 'T' || Z_PK;
            ALTER TABLE ZNOTE ADD COLUMN ZODD "text;odd"; UPDATE ZNOTE SET ZODD = '007';
            """)
        let report = fixture.migrate(store)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let output = try #require(report.result?.path)
        let written = try columns("ZMEMO", in: output)
        #expect(written["ZTAG"]?.type == "VARCHAR(20)" && written["ZTAG"]?.notNull == false && written["ZTAG"]?.defaultValue == nil)
        #expect(written["ZODD"]?.type == "", "a type that is not a plain type name is not written")
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        let sql = try connection.scalar("SELECT sql FROM sqlite_schema WHERE name = 'ZMEMO'")?.string ?? ""
        for clause in ["NOCASE", "CHECK", "DEFAULT", "REFERENCES", "odd"] { #expect(!sql.contains(clause), "\(sql)") }
        #expect(try values("ZTAG", of: "ZMEMO", in: output) == [.text("T1"), .text("T2"), .text("T3")])
        #expect(try values("ZODD", of: "ZMEMO", in: output) == Array(repeating: .text("007"), count: 3), "kept exactly, text")
        let planned = objects(try json(report)["carriedColumns"])
        #expect(planned.contains { $0["column"] as? String == "ZNOTE.ZODD" && $0["declaredType"] is NSNull && $0["storeType"] as? String == "text;odd" },
                "\(planned)")
        #expect(report.result?.verification.matchOutcome == "exact")
    }

    @Test func aGeneratedColumnIsLeftOutAndReported() throws {
        let fixture = try renamingFixture()
        let store = try notes(fixture, then: "ALTER TABLE ZNOTE ADD COLUMN ZSHOUT TEXT AS (upper(ZTITLE))")
        let plan = fixture.migrate(store, dryRun: true)
        let leftOut = objects(try json(plan)["leftOutColumns"])
        #expect(leftOut.count == 1 && (leftOut.first ?? [:])["column"] as? String == "ZNOTE.ZSHOUT" && (leftOut.first ?? [:])["discardsData"] as? Bool == false
                && (leftOut.first ?? [:])["values"] as? Int == 3, "\(leftOut)")
        #expect(plan.hops.first?.discardedValues.allSatisfy { $0.count == 0 } == true, "computed values are not data")
        #expect(plan.renderText().contains("left out: ZNOTE.ZSHOUT at V1 → V2: 3 computed values, not data (a generated column"), "\(plan.renderText())")

        let report = fixture.migrate(store)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let output = try #require(report.result?.path)
        #expect(try columns("ZMEMO", in: output)["ZSHOUT"] == nil)
        let result = try json(report)["result"] as? [String: Any]
        let resultLeftOut = objects(result?["leftOutColumns"])
        #expect((resultLeftOut.first ?? [:])["column"] as? String == "ZNOTE.ZSHOUT", "\(result ?? [:])")
        #expect(report.result?.verification.matchOutcome == "exact")
    }
}
