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
}
