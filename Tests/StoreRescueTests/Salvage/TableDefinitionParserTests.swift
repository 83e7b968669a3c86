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

    /// Functions of the app's own (registered on its connections, unknown here) in a `CHECK`, a
    /// generated column or a default do not refuse the statement: they are placeholders, made
    /// for as many names as the bound allows (each costs one more compile). `AS SELECT` calling
    /// one is still refused, and so is a built-in function called with the wrong arguments.
    @Test func functionsOfTheAppsOwnAreUnderstoodUpToABound() throws {
        let definition = try #require(parser.parse(name: "r", sql: """
            CREATE TABLE r (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT CHECK (app_fold(v) <> ''), n DEFAULT (app_now()),
                d AS (app_key(n, v)) STORED, e AS ("app key"(n)))
            """, rootPage: 2))
        #expect(definition.columns.map(\.name) == ["id", "v", "n", "d"])
        #expect(definition.isAutoincrement)
        #expect(parser.parse(name: "x", sql: "CREATE TABLE x AS SELECT app_fold(1) AS a", rootPage: 2) == nil)
        #expect(parser.parse(name: "y", sql: "CREATE TABLE y (a CHECK (length(a, a, a)))", rootPage: 2) == nil)

        // At most 16 placeholders for one statement (each costs a compile of up to 1 MB)…
        let perStatement = TableDefinitionParser.maximumPlaceholdersPerStatement
        let fresh = try TableDefinitionParser()
        let tooMany = (0...perStatement).map { "g\($0)(a)" }.joined(separator: " + ")
        #expect(fresh.parse(name: "z", sql: "CREATE TABLE z (a CHECK (\(tooMany)))", rootPage: 2) == nil, "one past the statement's bound")
        let enough = (0..<perStatement).map { "h\($0)(a)" }.joined(separator: " + ")
        #expect(fresh.parse(name: "y", sql: "CREATE TABLE y (a CHECK (\(enough)))", rootPage: 2)?.columns.count == 1)
        // … and 256 in all: the statements after that name no new one.
        let bound = TableDefinitionParser.maximumPlaceholderFunctions
        let spender = try TableDefinitionParser()
        for batch in 0..<(bound / perStatement) {
            let calls = (0..<perStatement).map { "f\(batch)_\($0)(a)" }.joined(separator: " + ")
            #expect(spender.parse(name: "t\(batch)", sql: "CREATE TABLE t\(batch) (a CHECK (\(calls)))", rootPage: 2) != nil, "\(batch)")
        }
        #expect(spender.parse(name: "w", sql: "CREATE TABLE w (a CHECK (f0_0(a) + f15_15(a)))", rootPage: 2)?.columns.count == 1,
                "the placeholders made stay")
        #expect(spender.parse(name: "v", sql: "CREATE TABLE v (a CHECK (brand_new(a)))", rootPage: 2) == nil, "the bound is spent")
    }

    /// The parser's scratch database holds nothing between statements: the same name twice works.
    @Test func parsesTheSameNameAgain() {
        #expect(parser.parse(name: "t", sql: "CREATE TABLE t (a)", rootPage: 2)?.columns.count == 1)
        #expect(parser.parse(name: "t", sql: "CREATE TABLE t (a, b)", rootPage: 3)?.columns.count == 2)
    }
}
