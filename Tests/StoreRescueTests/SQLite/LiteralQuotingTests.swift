import Foundation
import Testing
@testable import StoreRescue

/// Quoting a name or a value for SQLite or the shell doubles every quote, whatever follows it.
/// Foundation's `replacingOccurrences` compares composed character sequences: a quote followed
/// by a combining mark was not a quote to it, and was left single — `"a'\u{301}b"` quoted as a
/// literal ended the literal early, and a hostile store's table name `t"\u{301} …` ended its
/// quoted identifier, the rest read as SQL (`String.replacingLiterally`).
@Suite struct LiteralQuotingTests {
    /// Texts whose quotes are followed by what Swift merges into one character with them.
    static let texts = [
        "a'\u{301}b", "a\"\u{301}b", "'\u{301}", "\"\u{301}", "x'\u{20DD}'y", "\"\u{200D}\"", "e\u{301}'\"e\u{301}", "plain", "", "''", "\"\"",
        "t\"\u{301} (x); CREATE TABLE pwned (y); CREATE TABLE \"z",
    ]

    @Test(arguments: texts)
    func aQuotedIdentifierNamesExactlyItsText(_ name: String) throws {
        guard !name.isEmpty else { return }
        let connection = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        try connection.execute("CREATE TABLE \(name.quotedSQLIdentifier) (\(name.quotedSQLIdentifier) TEXT)")
        let tables = try connection.rows("SELECT name FROM sqlite_schema").compactMap { $0.first?.string }
        #expect(tables == [name])
        let columns = try connection.rows("SELECT name FROM pragma_table_info(?)", [.text(name)]).compactMap { $0.first?.string }
        #expect(columns == [name])
    }

    @Test(arguments: texts)
    func aQuotedLiteralIsExactlyItsText(_ text: String) throws {
        let connection = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        let rows = try connection.rows("SELECT \(SQLLiteral.string(text))")
        #expect(rows.count == 1 && rows[0].count == 1)
        #expect(rows.first?.first?.string == text)
    }

    @Test(arguments: texts)
    func aShellQuotedPathIsOneWordExactlyItsText(_ text: String) throws {
        guard !text.isEmpty else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "printf '%s|' " + ShellQuote.quote(text)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(String(decoding: output, as: UTF8.self) == text + "|")
    }

    /// A table of such a name is salvaged under its name (its `CREATE TABLE` was read with
    /// the quotes undoubled and failed: its rows went to lost and found).
    @Test func aTableNamedWithAQuoteAndAMarkIsSalvagedUnderItsName() throws {
        let directory = try TemporaryDirectory()
        let name = Self.texts.last!
        let store = directory.path("store.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("CREATE TABLE \(name.quotedSQLIdentifier) (v TEXT); CREATE TABLE other (w TEXT)")
            for index in 0..<5 { try connection.execute("INSERT INTO \(name.quotedSQLIdentifier) VALUES ('row \(index)')") }
            #expect(try connection.rows("SELECT name FROM sqlite_schema ORDER BY rowid").compactMap { $0.first?.string } == [name, "other"])
        }
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.tables.first { $0.name == name }?.rows.recovered == 5)
        #expect(report.lostAndFound.tables.isEmpty)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.rows("SELECT name FROM sqlite_schema ORDER BY name").compactMap { $0.first?.string } == [name, "other"].sorted())
        #expect(try connection.scalar("SELECT count(*) FROM \(name.quotedSQLIdentifier)")?.int64 == 5)
    }

    @Test func replacingLiterallyReplacesEveryOccurrenceLeftToRight() {
        #expect("".replacingLiterally("'", with: "''") == "")
        #expect("abc".replacingLiterally("x", with: "y") == "abc")
        #expect("'a'".replacingLiterally("'", with: "''") == "''a''")
        #expect("aaaa".replacingLiterally("aa", with: "b") == "bb")
        #expect("aaa".replacingLiterally("aa", with: "b") == "ba")
        #expect("f(x) + f(y)".replacingLiterally("f(", with: "g(") == "g(x) + g(y)")
        #expect("e\u{301}e".replacingLiterally("e", with: "E") == "E\u{301}E")
        #expect("a\u{0}b".replacingLiterally("\u{0}", with: "\u{FFFD}") == "a\u{FFFD}b")
        // A multi-byte target matches whole scalars only.
        #expect("\u{301}\u{301}".replacingLiterally("\u{301}", with: "-") == "--")
    }

    /// The store's own `CREATE TABLE` is run by the migration only when it is one plain
    /// statement: a `;` followed by a combining mark is still a `;` (it was not to `contains`),
    /// and one inside a quoted name is part of the name.
    @Test func aStatementAfterASemicolonAndAMarkIsNotPlain() {
        #expect(VersionWriter.isPlainCreateTable("CREATE TABLE t (a)"))
        #expect(VersionWriter.isPlainCreateTable("CREATE TABLE \"t;\u{301}\" (a)"))
        #expect(VersionWriter.isPlainCreateTable("CREATE TABLE t (a);\u{301} CREATE TABLE u (b)") == false)
        #expect(VersionWriter.isPlainCreateTable("CREATE TABLE t AS\nSELECT 1") == false)
        #expect(VersionWriter.isPlainCreateTable("CREATE TABLE t AS SELECT 1") == false)
        #expect(VersionWriter.isPlainCreateIndex("CREATE INDEX i ON t (a)"))
        #expect(VersionWriter.isPlainCreateIndex("CREATE UNIQUE INDEX i ON t (a)"))
        #expect(VersionWriter.isPlainCreateIndex("CREATE INDEX i ON t (a);\u{301} DROP TABLE t") == false)
    }

    /// The check reads the text as SQLite does: a `;` inside a quoted name, a string or a comment
    /// ends nothing (a table `notes;x` was left out of every migration), and `AS` with a comment
    /// before its query is still `CREATE TABLE … AS` (`AS/**/SELECT` was taken for plain and its
    /// query run in the new store).
    @Test(arguments: [
        #"CREATE TABLE "notes;x" (id INTEGER PRIMARY KEY, body TEXT)"#,
        "CREATE TABLE `notes;x` (a)", "CREATE TABLE [notes;x] (a)", "CREATE TABLE 'notes;x' (a)",
        "CREATE TABLE t (a TEXT DEFAULT ';', b /* ; */, c) -- ;",
        "create table IF NOT EXISTS \"a\"\"; DROP TABLE b; --\" (a)",
        "CREATE TABLE t (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2), c AS (CAST(a AS TEXT)))",
        "CREATE TABLE t (a) WITHOUT ROWID",
    ])
    func aCreateTableWhoseSemicolonsAreQuotedIsPlain(_ sql: String) {
        #expect(VersionWriter.isPlainCreateTable(sql))
    }

    @Test(arguments: [
        "CREATE TABLE t AS/**/SELECT 1", "CREATE TABLE t AS--c\nSELECT 1", "CREATE TABLE t AS/* ; */SELECT 1",
        "CREATE TABLE t as\tselect 1", "CREATE TABLE t AS VALUES (1)", "CREATE TABLE t AS WITH c AS (SELECT 1) SELECT * FROM c",
        "CREATE TABLE \"a;b\" AS SELECT 1",
        "CREATE TABLE \"notes;x\" (a); CREATE TABLE pwned (b)", "CREATE TABLE \"notes;x\" (a);",
        "CREATE TABLE t (a) /* x */; DROP TABLE u", "CREATE TABLE \"t (a); DROP TABLE u", "CREATE TABLE t (a)\u{0}; DROP TABLE u",
        "CREATE TEMP TABLE t (a)", "CREATE VIRTUAL TABLE t USING fts5(a)", "CREATE TABLE main.t (a)", "CREATE TABLE t", "",
        "CREATE INDEX i ON t (a)",
    ])
    func aSecondStatementOrAQueryIsNotPlain(_ sql: String) {
        #expect(VersionWriter.isPlainCreateTable(sql) == false)
    }

    @Test func anIndexWhoseSemicolonsAreQuotedIsPlainAndASecondStatementIsNot() {
        #expect(VersionWriter.isPlainCreateIndex(#"CREATE INDEX "notes;x by body" ON "notes;x" (body)"#))
        #expect(VersionWriter.isPlainCreateIndex("CREATE UNIQUE INDEX IF NOT EXISTS [i;] ON `t;` (a COLLATE NOCASE) WHERE a <> ';'"))
        #expect(VersionWriter.isPlainCreateIndex(#"CREATE INDEX "i;" ON "t;" (a); DROP TABLE t"#) == false)
        #expect(VersionWriter.isPlainCreateIndex("CREATE INDEX i ON t (a) /* ; */; DROP TABLE t") == false)
        #expect(VersionWriter.isPlainCreateIndex("CREATE INDEX main.i ON t (a)") == false)
        #expect(VersionWriter.isPlainCreateIndex("CREATE TABLE t (a)") == false)
    }
}
