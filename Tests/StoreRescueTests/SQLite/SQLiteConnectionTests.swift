import Foundation
import Testing
@testable import StoreRescue

@Suite struct SQLiteConnectionTests {
    @Test func quotesIdentifiers() {
        #expect("a\"b".quotedSQLIdentifier == "\"a\"\"b\"")
        #expect("[x]".quotedSQLIdentifier == "\"[x]\"")
    }

    @Test func fileURIEncodesSpecialCharacters() {
        let uri = SQLiteConnection.fileURI(path: "/tmp/a b?c#d%e", immutable: true)
        #expect(uri == "file:/tmp/a%20b%3Fc%23d%25e?immutable=1")
    }

    /// The file itself may not be a link unless allowed; its folder may be reached through one.
    @Test func aFolderReachedThroughALinkIsFineAFileThatIsALinkIsNot() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path("real"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: dir.path("link"), withDestinationPath: dir.path("real"))
        try StoreFixtureBuilder.database(at: dir.path("link/a.db"), sql: "CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        let viaLink = try SQLiteConnection(path: dir.path("link/a.db"), options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try viaLink.scalar("SELECT count(*) FROM t")?.int64 == 1)
        #expect(viaLink.path == dir.path("link/a.db"))
        try FileManager.default.createSymbolicLink(atPath: dir.path("real/b.db"), withDestinationPath: dir.path("real/a.db"))
        #expect(throws: SQLiteError.self) { try SQLiteConnection(path: dir.path("link/b.db"), options: SQLiteOpenOptions(mode: .readOnly)) }
        #expect(SQLiteConnection.resolvingFolder(of: "plain.db") == "plain.db")
        #expect(SQLiteConnection.resolvingFolder(of: dir.path("link/../link/a.db")) == dir.path("real/a.db"))
    }
}
