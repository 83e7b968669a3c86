import Foundation
import Testing
@testable import StoreRescue

/// `SQLiteConnection.interruptible(by:)`: a watcher on a thread of its own interrupts the running
/// statement once the cancellation is set; when the system refuses that thread, the body runs to
/// its end without it. (It was a Dispatch timer, whose thread libdispatch asks for again and
/// again when refused: `upgrade` under `ulimit -u 1` waited for ever in `MigrationVerifier`.)
@Suite struct InterruptibleTests {
    static let countTo = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) FROM c"

    static func connection(_ directory: String) throws -> SQLiteConnection {
        try SQLiteConnection(path: directory + "/a.db", options: SQLiteOpenOptions(mode: .create))
    }

    @Test func aCancelledStatementIsInterrupted() throws {
        let temp = try TemporaryDirectory()
        let folder = temp.url.path
        let interrupted = try RefusedThreads.within(30, "the interrupted statement") { () -> Bool in
            let db = try Self.connection(folder)
            let cancellation = CancellationFlag()
            cancellation.cancel()
            do {
                _ = try db.interruptible(by: cancellation) { try db.scalar(Self.countTo, [.integer(1 << 40)]) }
                return false
            } catch let error as SQLiteError {
                return error.isInterrupt
            }
        }
        #expect(interrupted == true)
    }

    @Test func withoutAThreadTheBodyRunsToItsEnd() throws {
        let temp = try TemporaryDirectory()
        let folder = temp.url.path
        let starts = RefusedThreads()
        let count = try RefusedThreads.within(30, "the statement without a watcher") { () -> Int64? in
            let db = try Self.connection(folder)
            let cancellation = CancellationFlag()
            cancellation.cancel()
            return try db.interruptible(by: cancellation, startThread: starts.start) {
                try db.scalar(Self.countTo, [.integer(200_000)])?.int64
            }
        }
        #expect(starts.starts == 1)
        #expect(count == 200_000)
    }
}
