import Foundation
import Testing
import SRSQLite
@testable import StoreRescue

/// `OutputCheck`: SQLite's `quick_check` of a salvage's new file on a thread of its own, of the
/// file as it stood when the check began, while another connection goes on writing; and, once
/// waited for or stopped, no connection of its own left open (the salvage's connection must be
/// the last one, to take the `-wal` and `-shm` away when it closes).
@Suite struct OutputCheckTests {
    /// A WAL-mode database of `rows` rows with an index, and the connection that wrote it.
    static func database(at path: String, rows: Int) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        _ = try connection.scalar("PRAGMA journal_mode = WAL")
        try connection.execute("""
            CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, size INTEGER);
            CREATE INDEX t_name ON t (name);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO t (id, name, size) SELECT i, printf('name %08d', i * 7919 % \(rows)), i FROM n;
            """)
        return connection
    }

    /// Whether `connection` is the only one open on its file: only then may it leave WAL mode.
    static func isTheOnlyConnection(_ connection: SQLiteConnection) throws -> Bool {
        do {
            let mode = try connection.scalar("PRAGMA journal_mode = DELETE")?.string?.lowercased()
            return mode == "delete"
        } catch let error as SQLiteError where error.primaryResultCode == SQLITE_BUSY {
            return false
        }
    }

    @Test func aSoundFileIsOkWhileAnotherConnectionWrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("new.sqlite")
        let writer = try Self.database(at: path, rows: 20_000)
        let check = try OutputCheck(path: path)
        #expect(try Self.isTheOnlyConnection(writer) == false, "the check holds a read transaction")
        // The writer goes on while the check reads: into the -wal, not under the check.
        try writer.execute("BEGIN; UPDATE t SET size = size + 1 WHERE id % 3 = 0; DELETE FROM t WHERE id % 5 = 0; COMMIT")
        #expect(try check.wait(cancellation: nil) == ["ok"])
        _ = consume check
        #expect(try writer.scalar("SELECT count(*) FROM t")?.int64 == 16_000)
        #expect(try Self.isTheOnlyConnection(writer), "the check's connection is closed once it is let go")
        #expect(try writer.rows("PRAGMA integrity_check").compactMap { $0.first?.string } == ["ok"])
    }

    /// A table leaf whose rowids are out of order: what SQLite's check says, as the check returns it.
    @Test func aFileSQLiteWouldNotVouchForIsReported() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("new.sqlite")
        do {
            let writer = try Self.database(at: path, rows: 2_000)
            _ = try writer.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        #expect(try SalvageFailureTests.swapFirstTwoCellsOfTheLastTableLeaf(in: path) != nil)
        let writer = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        let check = try OutputCheck(path: path)
        let problems = try check.wait(cancellation: nil)
        #expect(problems != ["ok"])
        #expect(problems.contains { $0.contains("out of order") }, "\(problems)")
        _ = consume check
        #expect(try Self.isTheOnlyConnection(writer))
    }

    /// Stopped part way (a salvage that fails or is cancelled meanwhile): SQLite is interrupted,
    /// the thread waited for, and no connection of the check's is left.
    @Test func aStoppedCheckLeavesNoConnectionOpen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("new.sqlite")
        let writer = try Self.database(at: path, rows: 200_000)
        let started = Date()
        let check = try OutputCheck(path: path)
        check.stop()
        check.stop()  // a second stop does nothing
        _ = consume check
        #expect(Date().timeIntervalSince(started) < 30)
        #expect(try Self.isTheOnlyConnection(writer))
    }

    /// A cancellation while the salvage waits stops the check (SQLite's check alone would not
    /// notice it before its end): `interrupted`, and no connection of the check's left.
    @Test func aCancellationWhileWaitingStopsTheCheck() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("new.sqlite")
        let writer = try Self.database(at: path, rows: 200_000)
        let flag = CancellationFlag()
        flag.cancel()
        let check = try OutputCheck(path: path)
        let error = #expect(throws: SalvageError.self) { try check.wait(cancellation: flag) }
        #expect(error == .interrupted)
        _ = consume check
        #expect(try Self.isTheOnlyConnection(writer))
    }

    /// The check run on the salvage's own connection (plain mode; Core Data mode when no page
    /// was written by the salvage itself) stops on a cancellation too: the b-tree check is one
    /// step of SQLite's program, which the connection's progress handler cannot cut short (a
    /// 3 GB plain salvage ran 1.6 s past a SIGTERM, and the 1 s watchdog ended it instead).
    @Test func aCancellationStopsTheCheckOnTheSalvagesOwnConnection() throws {
        let directory = try TemporaryDirectory()
        // About 100 MB, so that SQLite's check lasts long enough for the watcher's 20 ms ticks
        // even on a machine busy with other tests.
        let connection = try SQLiteConnection(path: directory.path("new.sqlite"), options: SQLiteOpenOptions(mode: .create))
        try connection.execute("""
            CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000)
            INSERT INTO t SELECT i, zeroblob(4000) FROM n;
            """)
        let flag = CancellationFlag()
        flag.cancel()
        let error = #expect(throws: SQLiteError.self) { _ = try OutputCheck.verdict(of: connection, cancellation: flag) }
        #expect(error?.isInterrupt == true, "\(String(describing: error))")
        // Stopped, the watcher never touches a later statement.
        Thread.sleep(forTimeInterval: 0.05)
        #expect(try OutputCheck.verdict(of: connection) == ["ok"])
    }
}
