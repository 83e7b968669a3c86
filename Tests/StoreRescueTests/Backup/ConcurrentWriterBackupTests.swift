import Foundation
import Testing
@testable import StoreRescue

/// Backups taken while another process — a real one, python3's sqlite3 module — writes the store
/// continuously. Each of the writer's transactions inserts a batch of rows and updates a totals
/// row, so every committed state satisfies: count(*) = max(Z_PK) = ZTOTAL.ZCOUNT and
/// sum(ZVALUE) = ZTOTAL.ZSUM. A torn snapshot would break it.
@Suite struct ConcurrentWriterBackupTests {
    static let writerScript = """
        import os, sqlite3, sys, time
        path, seconds, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
        stop = sys.argv[4] if len(sys.argv) > 4 else None  # ends early once this file exists
        db = sqlite3.connect(path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=" + mode)
        db.execute("CREATE TABLE IF NOT EXISTS ZITEM (Z_PK INTEGER PRIMARY KEY, ZVALUE INTEGER, ZTEXT VARCHAR)")
        db.execute("CREATE TABLE IF NOT EXISTS ZTOTAL (Z_PK INTEGER PRIMARY KEY, ZCOUNT INTEGER, ZSUM INTEGER)")
        db.execute("INSERT OR IGNORE INTO ZTOTAL VALUES (1, 0, 0)")
        n = db.execute("SELECT ZCOUNT FROM ZTOTAL").fetchone()[0]
        print("ready", flush=True)
        end = time.time() + seconds
        transactions = 0
        while time.time() < end and not (stop and os.path.exists(stop)):
            db.execute("BEGIN IMMEDIATE")
            for _ in range(40):
                n += 1
                db.execute("INSERT INTO ZITEM VALUES (?, ?, ?)", (n, n * 7, "row %d " % n * 3))
            db.execute("UPDATE ZTOTAL SET ZCOUNT = ?, ZSUM = ? WHERE Z_PK = 1", (n, 7 * n * (n + 1) // 2))
            db.execute("COMMIT")
            transactions += 1
            time.sleep(0.001)  # a busy app, not a bulk load: keeps the store a few MB
        print(transactions, flush=True)
        """

    struct Invariant: Equatable {
        var count: Int64
        var maxPK: Int64
        var totalCount: Int64
        var sum: Int64
        var totalSum: Int64
        var holds: Bool { count == maxPK && count == totalCount && sum == totalSum }
    }

    static func invariant(of path: String) throws -> Invariant {
        let db = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        let row = try db.rows("""
            SELECT (SELECT count(*) FROM ZITEM), (SELECT coalesce(max(Z_PK), 0) FROM ZITEM),
                   (SELECT ZCOUNT FROM ZTOTAL), (SELECT coalesce(sum(ZVALUE), 0) FROM ZITEM), (SELECT ZSUM FROM ZTOTAL)
            """)[0].map { $0.int64 ?? -1 }
        return Invariant(count: row[0], maxPK: row[1], totalCount: row[2], sum: row[3], totalSum: row[4])
    }

    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"), arguments: ["WAL", "DELETE"])
    func backupWhileAnotherProcessWritesIsOneCommittedState(journalMode: String) throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("busy.sqlite")
        let script = temp.path("writer.py")
        try Data(Self.writerScript.utf8).write(to: URL(fileURLWithPath: script))
        // Seed a few MB so that each backup takes many steps while the writer commits.
        let seed = try BackupFixtures.run(try #require(BackupFixtures.pythonPath), [script, store, "1.0", journalMode])
        #expect(seed.status == 0, "seeding failed: \(seed.standardError)")

        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: try #require(BackupFixtures.pythonPath))
        // Writes until the backups are taken (the stop file), however long they take.
        writer.arguments = [script, store, "60", journalMode, temp.path("stop")]
        let output = Pipe()
        writer.standardOutput = output
        try writer.run()
        defer { if writer.isRunning { kill(writer.processIdentifier, SIGKILL) } }
        let ready = output.fileHandleForReading.readData(ofLength: 6)
        #expect(String(decoding: ready, as: UTF8.self) == "ready\n")

        var snapshots: [Invariant] = []
        for index in 0..<3 {
            Thread.sleep(forTimeInterval: 0.4)
            var options = BackupOptions.testing(temp.path("b"))
            options.pagesPerStep = 16
            options.lockTimeout = 30
            let backup = try BackupRunner.run(store: store, options: options)
            let restored = temp.path("restored-\(index).sqlite")
            _ = try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: restored))
            #expect(try BackupVerifier.integrityCheck(path: restored) == "ok")
            snapshots.append(try Self.invariant(of: restored))
        }
        #expect(FileManager.default.createFile(atPath: temp.path("stop"), contents: Data()))
        writer.waitUntilExit()
        let transactions = Int(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(writer.terminationStatus == 0)
        #expect(transactions > 10, "the writer should have kept committing during the backups")
        for snapshot in snapshots {
            #expect(snapshot.holds, "torn snapshot: \(snapshot)")
            #expect(snapshot.count > 0)
        }
        // The backups saw the writer's progress, not one frozen state.
        #expect(try #require(snapshots.last).count > (try #require(snapshots.first)).count)
    }

    /// Runs `body` with a rollback-mode store of 100 rows that a python writer holds with
    /// `BEGIN EXCLUSIVE` (for up to 15 s; killed when `body` returns), and the folder it is in.
    private func withStoreLockedByAWriter(_ body: (_ temp: TemporaryDirectory, _ store: String) throws -> Void) throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("locked.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 100, journalMode: "DELETE")
        let (locker, output) = try BackupFixtures.python("""
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(15)
            """, [store])
        try locker.run()
        defer {
            kill(locker.processIdentifier, SIGKILL)
            locker.waitUntilExit()
        }
        #expect(String(decoding: output.fileHandleForReading.readData(ofLength: 7), as: UTF8.self) == "locked\n")
        try body(temp, store)
    }

    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func storeLockedByAWriterTimesOut() throws {
        try withStoreLockedByAWriter { temp, store in
            var options = BackupOptions.testing(temp.path("b"))
            options.lockTimeout = 0.5
            let started = Date()
            let error = #expect(throws: BackupError.self) { try BackupRunner.run(store: store, options: options) }
            #expect(Date().timeIntervalSince(started) >= 0.4)
            #expect(error?.description == "the store \(store) stayed locked by another process for 0.5 s; no backup was taken")
            #expect(error?.exitStatus == .temporaryFailure)
            #expect(BackupFixtures.fileNames(in: temp.path("b")) == [])
        }
    }

    /// The wait for a writer's lock stops on a cancellation (SIGINT, SIGTERM) at once, where
    /// SQLite's busy timeout slept to its end (the signal handler's 1 s watchdog then ended the
    /// process): `BackupError.interrupted`, nothing written.
    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func theWaitForAWritersLockStopsOnACancellation() throws {
        try withStoreLockedByAWriter { temp, store in
            var options = BackupOptions.testing(temp.path("b"))
            options.lockTimeout = 8
            let flag = CancellationFlag()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { flag.cancel() }
            let started = Date()
            let error = #expect(throws: BackupError.self) { try BackupRunner.run(store: store, options: options, cancellation: flag) }
            #expect(Date().timeIntervalSince(started) < 4, "stopped long before the 8 s timeout")
            #expect(error == .interrupted)
            #expect(error?.exitStatus == .temporaryFailure)
            #expect(BackupFixtures.fileNames(in: temp.path("b")) == [])
        }
    }

    /// Found by CI (stop 18): a rollback-journal app holds no lock between transactions, so the
    /// store was found at rest, then read in place while the app was part way through a
    /// transaction: "database disk image is malformed" (exit 65) from a healthy store. Here the
    /// app begins a transaction that spills half-written pages into the main file right after the
    /// store is found at rest; the backup must wait for it and hold the committed state.
    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func aWriterThatBeginsAfterTheStoreIsFoundAtRestIsWaitedFor() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 3000, journalMode: "DELETE")
        let (writer, output) = try BackupFixtures.python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("PRAGMA cache_size = 8")
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE ZITEM SET ZTITLE = ZTITLE || ' ' || ZTITLE || ' rewritten', ZVALUE = -Z_PK")
            db.execute("DELETE FROM ZITEM WHERE Z_PK % 3 = 0")
            print("spilled", flush=True)
            sys.stdin.readline()
            db.execute("COMMIT")
            print("committed", flush=True)
            """, [store])
        let input = Pipe()
        writer.standardInput = input
        defer {
            if writer.isRunning { kill(writer.processIdentifier, SIGKILL) }
            writer.waitUntilExit()
        }
        var options = BackupOptions.testing(temp.path("b"))
        options.lockTimeout = 30
        let result = try BackupRunner.run(
            store: store, options: options, storeDescription: BackupRunner.readStoreDescription, progress: nil,
            cancellation: nil,
            afterFindingAtRest: {
                try writer.run()
                #expect(String(decoding: output.fileHandleForReading.readData(ofLength: 8), as: UTF8.self) == "spilled\n")
                var journal = stat()
                #expect(lstat(store + "-journal", &journal) == 0, "the writer's transaction is part way through")
                // The app commits a little later, while the backup waits for its lock.
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
                    try? input.fileHandleForWriting.write(contentsOf: Data("\n".utf8))
                }
            })
        #expect(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "committed\n")
        let restored = temp.path("restored.sqlite")
        _ = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))
        #expect(try BackupVerifier.integrityCheck(path: restored) == "ok")
        #expect(try BackupFixtures.count("ZITEM", in: restored) == 2000)
        let database = try SQLiteConnection(path: restored, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try database.scalar("SELECT count(*) FROM ZITEM WHERE ZVALUE = -Z_PK AND ZTITLE LIKE '% rewritten'")?.int64 == 2000)
        #expect(try BackupFixtures.content(of: restored, mode: .immutable) == BackupFixtures.content(of: store, mode: .readOnly))
    }

    /// Found by review (stop 19): an app that dies part way through a transaction after the
    /// store was found at rest leaves a hot `-journal` and half-written pages. Read in place,
    /// they made a backup that `integrity_check` refuses (exit 0); taken live, the read-only
    /// connection cannot roll the journal back (SQLITE_READONLY_ROLLBACK: exit 74, "check free
    /// space"). The backup must hold the last committed state: a private copy, rolled back.
    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func anAppThatDiesPartWayThroughATransactionLeavesTheCommittedStateToBackUp() throws {
        let temp = try TemporaryDirectory()
        let (folder, store, committed) = try InPlaceReadWhileWrittenTests.rollbackStoreInAFolder(of: temp, rows: 3000)
        var crashed: [String: Data] = [:]
        let result = try BackupRunner.run(
            store: store, options: .testing(temp.path("b")), storeDescription: BackupRunner.readStoreDescription,
            progress: nil, cancellation: nil,
            afterFindingAtRest: {
                try InPlaceReadWhileWrittenTests.dieHalfWayThroughATransaction(store: store, table: "ZITEM", column: "ZTITLE")
                crashed = try StoreFixtureBuilder.snapshot(of: folder)
            })
        let restored = temp.path("restored.sqlite")
        _ = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))
        #expect(try BackupVerifier.integrityCheck(path: restored) == "ok")
        #expect(try BackupFixtures.content(of: restored, mode: .immutable) == committed)
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == crashed, "the store and its hot -journal are left as found")
    }
}
