import Foundation
import Testing
@testable import StoreRescue

/// An app's own tables (ones Core Data does not lay out) are carried into the migrated store by
/// running their own `CREATE` statement — only when it is one plain statement
/// (`VersionWriter.isPlainCreateTable`). A `;` inside a quoted name is no statement end: such a
/// table was left out, its rows only in the backup. A store whose schema holds a second
/// statement still has that table left out, and the second statement is never run.
@Suite struct AppTableCarryTests {
    typealias M = TestModel

    static let versions = [
        M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("title")])]),
        M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("note")])]),
    ]

    /// The app's table `notes;x` (and its index `notes;x by body`), three rows, beside one item.
    static func addNotes(to path: String) throws {
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite)).execute("""
            CREATE TABLE "notes;x" (id INTEGER PRIMARY KEY, body TEXT NOT NULL DEFAULT ';');
            CREATE INDEX "notes;x by body" ON "notes;x" (body);
            INSERT INTO "notes;x" (id, body) VALUES (1, 'one'), (2, 'two;'), (3, 'three');
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
    }

    static func notes(in path: String) throws -> [[SQLiteValue]] {
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable)).rows(#"SELECT id, body FROM "notes;x" ORDER BY id"#)
    }

    static func indexNames(in path: String) throws -> [String] {
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
            .rows(#"SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'notes;x' ORDER BY name"#).compactMap { $0.first?.string }
    }

    static let expectedNotes: [[SQLiteValue]] = [[.integer(1), .text("one")], [.integer(2), .text("two;")], [.integer(3), .text("three")]]

    @Test func migrateCarriesATableWhoseNameHoldsASemicolonWithItsRowsAndIndex() throws {
        let fixture = try MigrationFixture(versions: Self.versions)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { try $0.insert("Item", values: ["title": .text("a")]) }
        try Self.addNotes(to: path)

        let report = fixture.migrate(path)
        let result = try #require(report.result, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        #expect(result.carriedTables == ["notes;x"], "\(result.carriedTables)")
        #expect(result.leftOutTables == [], "\(result.leftOutTables)")
        #expect(try Self.notes(in: result.path) == Self.expectedNotes)
        #expect(try Self.indexNames(in: result.path) == ["notes;x by body"])
        #expect(try fixture.objects(result.path, at: "V2", "Item").map { $0["title"] } == [.text("a")])
        #expect(!report.renderText().contains("Left out"), "\(report.renderText())")
    }

    /// An app's table whose name Swift's `uppercased()` takes for Core Data's `Z_PRIMARYKEY`
    /// (a dotless ı), but SQLite does not: carried with its rows, never skipped without a word.
    @Test func aTableNamedLikeABookkeepingTableOnlyToSwiftIsCarried() throws {
        let fixture = try MigrationFixture(versions: Self.versions)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { try $0.insert("Item", values: ["title": .text("a")]) }
        let name = "Z_PR\u{131}MARYKEY"
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite)).execute("""
            CREATE TABLE \(name.quotedSQLIdentifier) (k TEXT);
            INSERT INTO \(name.quotedSQLIdentifier) (k) VALUES ('kept');
            PRAGMA wal_checkpoint(TRUNCATE);
            """)

        let report = fixture.migrate(path)
        let result = try #require(report.result, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        #expect(result.carriedTables == [name], "\(result.carriedTables)")
        let rows = try SQLiteConnection(path: result.path, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT k FROM \(name.quotedSQLIdentifier)")
        #expect(rows == [[.text("kept")]])
    }

    @Test func upgradeCarriesATableWhoseNameHoldsASemicolonWithItsRows() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2, owners: 1, catalog: catalog)
        try Self.addNotes(to: store)

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.migration?.result?.carriedTables == ["notes;x"], "\(report.migration?.result?.carriedTables ?? [])")
        #expect(report.migration?.result?.leftOutTables == [])
        #expect(try Self.notes(in: store) == Self.expectedNotes)
        #expect(try Self.indexNames(in: store) == ["notes;x by body"])
        #expect(try UpgradeFixture.count("ZCAT", in: store) == 2)
    }

    /// A schema holding a second statement after the table's (written by hand: SQLite reads only
    /// the first when it opens the store), with the `;` after a quoted name that holds one too:
    /// the table is left out and reported, and the second statement never runs.
    @Test func aTableWhoseSchemaHoldsASecondStatementIsLeftOutAndTheStatementNotRun() throws {
        let fixture = try MigrationFixture(versions: Self.versions)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { try $0.insert("Item", values: ["title": .text("a")]) }
        try Self.addNotes(to: path)
        try SalvageFixtures.editSchema(of: path, #"""
            UPDATE sqlite_schema SET sql = 'CREATE TABLE "notes;x" (id INTEGER PRIMARY KEY, body TEXT NOT NULL DEFAULT '';''); CREATE TABLE pwned (a)'
            WHERE name = 'notes;x';
            """#)
        #expect(try Self.notes(in: path) == Self.expectedNotes, "the store still opens, its table read")

        let report = fixture.migrate(path)
        let result = try #require(report.result, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        #expect(result.leftOutTables == ["notes;x"], "\(result.leftOutTables)")
        #expect(result.carriedTables == [])
        let names = try SQLiteConnection(path: result.path, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT name FROM sqlite_schema WHERE name LIKE 'notes%' OR name = 'pwned'").compactMap { $0.first?.string }
        #expect(names == [])
    }
}
