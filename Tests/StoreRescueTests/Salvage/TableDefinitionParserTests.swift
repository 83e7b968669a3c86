import Foundation
import Testing
@testable import StoreRescue

/// Recovered `CREATE TABLE` text read by SQLite's own parser, and hostile text refused.
@Suite struct TableDefinitionParserTests {
    let parser: TableDefinitionParser
    init() throws { parser = try TableDefinitionParser() }

    @Test func coreDataTable() throws {
        let definition = try #require(parser.parse(
            name: "ZITEM", sql: "CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )", rootPage: 4))
        #expect(definition.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME"])
        #expect(definition.columns.map(\.declaredType) == ["INTEGER", "INTEGER", "INTEGER", "VARCHAR"])
        #expect(definition.rowidColumn == 0)
        #expect(!definition.isWithoutRowid)
        #expect(definition.rootPage == 4)
    }

    @Test func rowidAliasOnlyForAnIntegerPrimaryKeyOfItsOwn() throws {
        #expect(parser.parse(name: "a", sql: "CREATE TABLE a (x INT PRIMARY KEY, y)", rootPage: 2)?.rowidColumn == nil, "INT is not INTEGER")
        #expect(parser.parse(name: "b", sql: "CREATE TABLE b (x, y INTEGER, PRIMARY KEY (y))", rootPage: 2)?.rowidColumn == 1)
        #expect(parser.parse(name: "c", sql: "CREATE TABLE c (x INTEGER, y INTEGER, PRIMARY KEY (x, y))", rootPage: 2)?.rowidColumn == nil)
        // SQLite's quirk: DESC written on the column keeps the key in the record, with an index;
        // written in the table's PRIMARY KEY clause it is still the rowid.
        #expect(parser.parse(name: "e", sql: "CREATE TABLE e (x INTEGER PRIMARY KEY DESC, y)", rootPage: 2)?.rowidColumn == nil)
        #expect(parser.parse(name: "f", sql: "CREATE TABLE f (x INTEGER, y, PRIMARY KEY (x DESC))", rootPage: 2)?.rowidColumn == 0)
        #expect(parser.parse(name: "g", sql: "CREATE TABLE g (x INTEGER PRIMARY KEY ASC, y)", rootPage: 2)?.rowidColumn == 0)
        let withoutRowid = parser.parse(name: "d", sql: "CREATE TABLE d (k INTEGER PRIMARY KEY, v) WITHOUT ROWID", rootPage: 2)
        #expect(withoutRowid?.isWithoutRowid == true)
        #expect(withoutRowid?.rowidColumn == nil)
    }

    @Test func quotingCommentsAndVirtualGeneratedColumns() throws {
        let definition = try #require(parser.parse(
            name: "odd name", sql: """
                CREATE TABLE "odd name" ( -- a comment
                  [first col] TEXT DEFAULT 'it''s', "b" BLOB, c INTEGER GENERATED ALWAYS AS (length(b)) VIRTUAL,
                  d REAL DEFAULT -1.5, e DEFAULT X'00ff', f INTEGER GENERATED ALWAYS AS (1) STORED, g DEFAULT (3)
                )
                """, rootPage: 9))
        #expect(definition.columns.map(\.name) == ["first col", "b", "d", "e", "f", "g"], "the virtual column is not stored")
        #expect(definition.columns.map(\.defaultValue) == [.text("it's"), .null, .real(-1.5), .blob(Data([0, 255])), .null, .integer(3)])
    }

    @Test(arguments: [
        "CREATE TABLE x AS SELECT 1 AS a",
        "CREATE TABLE x AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c",
        "CREATE VIRTUAL TABLE x USING fts4(a)",
        "CREATE TEMP TABLE x (a)",
        "DROP TABLE sqlite_schema",
        "CREATE TABLE x (a",
        "\u{0}\u{1}garbage",
        "",
    ])
    func refusesWhatIsNotAPlainCreateTable(sql: String) {
        #expect(parser.parse(name: "x", sql: sql, rootPage: 2) == nil)
    }

    /// An AUTOINCREMENT table also creates `sqlite_sequence` in the scratch database: the table
    /// parsed is still the one named, every time (it used to be refused as two tables).
    @Test func autoincrementTablesParse() {
        for root in [2, 3] as [UInt32] {
            let definition = parser.parse(name: "s", sql: "CREATE TABLE s (id INTEGER PRIMARY KEY AUTOINCREMENT, x)", rootPage: root)
            #expect(definition?.columns.map(\.name) == ["id", "x"])
            #expect(definition?.rowidColumn == 0)
            #expect(definition?.isAutoincrement == true)
        }
    }

    /// `AUTOINCREMENT` is SQLite's answer, never a word found in the text: in a comment, a
    /// quoted name or a string it is not the keyword.
    @Test func autoincrementIsWhatSQLiteParsed() {
        let cases: [(sql: String, expected: Bool)] = [
            ("CREATE TABLE s (id integer primary key autoincrement, x)", true),
            ("CREATE TABLE s (id INTEGER, x, PRIMARY KEY (id AUTOINCREMENT))", true),
            ("CREATE TABLE s (id INTEGER PRIMARY KEY /* AUTOINCREMENT */, x)", false),
            ("CREATE TABLE s (id INTEGER PRIMARY KEY, \"AUTOINCREMENT\" TEXT DEFAULT 'AUTOINCREMENT')", false),
            ("CREATE TABLE s (id INTEGER PRIMARY KEY, x) -- AUTOINCREMENT", false),
        ]
        for (sql, expected) in cases {
            #expect(parser.parse(name: "s", sql: sql, rootPage: 2)?.isAutoincrement == expected, "\(sql)")
        }
    }

    /// The parser's scratch database holds nothing between statements: the same name twice works.
    @Test func parsesTheSameNameAgain() {
        #expect(parser.parse(name: "t", sql: "CREATE TABLE t (a)", rootPage: 2)?.columns.count == 1)
        #expect(parser.parse(name: "t", sql: "CREATE TABLE t (a, b)", rootPage: 3)?.columns.count == 2)
    }
}
