import Foundation
import Testing
@testable import StoreRescue

@Suite struct SQLiteTransactionTests {
    struct Failure: Error {}

    /// The folder is kept as long as the test holds the connection.
    private let folder: TemporaryDirectory

    init() throws {
        folder = try TemporaryDirectory()
    }

    private func database() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: folder.path("t.sqlite"), options: SQLiteOpenOptions(mode: .create))
        try connection.execute("CREATE TABLE t (x INTEGER)")
        return connection
    }

    private func count(_ connection: SQLiteConnection) throws -> Int64 {
        try connection.scalar("SELECT count(*) FROM t")?.int64 ?? -1
    }

    @Test func commitsWhenTheBodyReturns() throws {
        let connection = try database()
        let value = try connection.inTransaction {
            try connection.execute("INSERT INTO t VALUES (1), (2)")
            return 42
        }
        #expect(value == 42)
        #expect(try count(connection) == 2)
        #expect(!connection.isInTransaction)
    }

    @Test func rollsBackWhenTheBodyThrows() throws {
        let connection = try database()
        #expect(throws: Failure.self) {
            try connection.inTransaction {
                try connection.execute("INSERT INTO t VALUES (1)")
                throw Failure()
            }
        }
        #expect(try count(connection) == 0)
        #expect(!connection.isInTransaction)
    }

    @Test func aFailedSavepointLeavesTheEnclosingTransactionAsItWas() throws {
        let connection = try database()
        try connection.inTransaction {
            try connection.execute("INSERT INTO t VALUES (1)")
            #expect(throws: Failure.self) {
                try connection.inSavepoint {
                    try connection.execute("INSERT INTO t VALUES (2)")
                    try connection.inSavepoint { try connection.execute("INSERT INTO t VALUES (3)") }
                    #expect(try count(connection) == 3)
                    throw Failure()
                }
            }
            #expect(try count(connection) == 1)
            #expect(connection.isInTransaction)
            try connection.inSavepoint { try connection.execute("INSERT INTO t VALUES (4)") }
        }
        #expect(try connection.rows("SELECT x FROM t ORDER BY x").map { $0[0] } == [.integer(1), .integer(4)])
    }

    @Test func aFailingStatementInsideRollsBackEverything() throws {
        let connection = try database()
        #expect(throws: SQLiteError.self) {
            try connection.inTransaction {
                try connection.execute("INSERT INTO t VALUES (1)")
                try connection.execute("INSERT INTO missing VALUES (1)")
            }
        }
        #expect(try count(connection) == 0)
    }

    @Test func rowsThrowsAtItsLimitInsteadOfTruncating() throws {
        let connection = try database()
        try connection.execute("INSERT INTO t VALUES (1), (2), (3)")
        #expect(try connection.rows("SELECT x FROM t", maximumRows: 3).count == 3)
        let error = #expect(throws: SQLiteRowLimitError.self) {
            try connection.rows("SELECT x FROM t", maximumRows: 2)
        }
        #expect(error?.limit == 2)
        #expect(error?.description.contains("more than 2 rows") == true)
    }
}
