import Foundation
import Testing
@testable import StoreRescue

/// `SQLToken` reads SQL text as SQLite's tokenizer does: quotes, brackets, strings and comments
/// are what hold a `;` or separate two words, not the bytes alone.
@Suite struct SQLTokenTests {
    private func texts(_ sql: String) -> [String]? { SQLToken.tokens(of: sql)?.map(\.text) }

    @Test func quotedNamesStringsAndCommentsHoldWhatLooksLikeAStatementEnd() {
        #expect(texts(#"CREATE TABLE "a;b" (x)"#) == ["CREATE", "TABLE", #""a;b""#, "(", "x", ")"])
        #expect(texts("CREATE TABLE `a;b` ([c;d] TEXT DEFAULT 'e;''f')") == ["CREATE", "TABLE", "`a;b`", "(", "[c;d]", "TEXT", "DEFAULT", "'e;''f'", ")"])
        #expect(texts(#"x "a""b" y"#) == ["x", #""a""b""#, "y"])
        #expect(texts("a /* ; */ b -- ; c\nd") == ["a", "b", "d"])
        #expect(texts("a;b") == ["a", ";", "b"])
        #expect(SQLToken.tokens(of: "a;b")?.map(\.kind) == [.word, .semicolon, .word])
    }

    @Test func commentsSeparateWordsAsWhiteSpaceDoes() {
        #expect(texts("AS/**/SELECT") == ["AS", "SELECT"])
        #expect(texts("AS--c\nSELECT") == ["AS", "SELECT"])
        #expect(texts("AS\t\r\n\u{C}SELECT") == ["AS", "SELECT"])
        // `/*/` does not close the comment it opens; an unterminated comment runs to the end.
        #expect(texts("a /*/ b */ c") == ["a", "c"])
        #expect(texts("a /* b ; c") == ["a"])
        #expect(texts("a -- b ; c") == ["a"])
        #expect(texts("a - - b / c") == ["a", "-", "-", "b", "/", "c"])
    }

    /// Words are runs of SQLite's identifier bytes, any byte from 0x80 among them: a combining
    /// mark after a `;` does not hide the `;` (Swift's `Character` would make them one).
    @Test func wordsAreBytesAndASemicolonBeforeAMarkIsStillOne() {
        #expect(texts("e\u{301}t$_9 x") == ["e\u{301}t$_9", "x"])
        #expect(SQLToken.tokens(of: "t;\u{301}")?.map(\.kind) == [.word, .semicolon, .word])
    }

    @Test func textSQLiteWouldNotReadHasNoTokens() {
        #expect(SQLToken.tokens(of: #"CREATE TABLE "a (x); DROP TABLE b"#) == nil)
        #expect(SQLToken.tokens(of: "CREATE TABLE [a (x)") == nil)
        #expect(SQLToken.tokens(of: "SELECT 'a") == nil)
        #expect(SQLToken.tokens(of: "CREATE TABLE a (x)\u{0}; DROP TABLE b") == nil)
        #expect(SQLToken.tokens(of: "a\u{1}b") == nil)
        #expect(SQLToken.tokens(of: "a\u{B}b") == nil)
        #expect(SQLToken.tokens(of: "")?.isEmpty == true)
    }

    @Test func keywordsCompareWithoutASCIICaseOnly() throws {
        let tokens = try #require(SQLToken.tokens(of: #"create "TABLE" Table"#))
        #expect(tokens[0].isKeyword("CREATE"))
        #expect(!tokens[1].isKeyword("TABLE"), "a quoted name is never a keyword")
        #expect(tokens[2].isKeyword("TABLE") && !tokens[2].isKeyword("TABLES"))
        let areNames = tokens.map(\.isName)
        #expect(areNames == [true, true, true])
    }
}
