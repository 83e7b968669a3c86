import Foundation
import Testing
@testable import StoreRescue

/// A signal during the SQLite check of a backup's snapshot (`BackupVerifier.integrityCheck`),
/// in `restore` and in `upgrade`'s check of the backup it took: the check is one statement,
/// which runs on past a cancellation unless it is interrupted (`SQLiteConnection.interruptible`).
/// Without that the command ran the check to its end and was ended by the handler's forced end,
/// `InterruptHandling.grace` (1 s) after the signal; a check shorter than that ran to its
/// verdict. Each test holds the check once it is under way (the test hook
/// `STORERESCUE_TEST_PAUSE=integrity-check`, from SQLite's progress handler), signals there and
/// lets it go on, on a store whose check takes seconds, and expects exit 75 well before the
/// forced end, with the store, and the backup, as they were. (`verify`'s own check:
/// `BackupVerifierTests.aCancellationDuringTheIntegrityCheckInterruptsIt`.)
@Suite(.enabled(if: CommandRunner.isAvailable, "needs the built executable"))
struct IntegrityCheckInterruptionTests {
    /// Sooner than `InterruptHandling.grace` (1 s): an exit this soon after the signal is the
    /// command's own, not the forced end's.
    static let promptExit: TimeInterval = 0.9

    /// A Core Data store of 4,000 `Item`s at V1 of a two-version catalog (V2 adds one
    /// attribute), of about 100 KB, whose `integrity_check` takes seconds.
    ///
    /// `ZITEM` has one index more than its layout, partial, whose condition no row meets: it holds
    /// no entry, but `integrity_check` evaluates the condition for every row, to find the rows
    /// the index lacks, and the condition builds and rewrites a 100 KB string (about 1.5 ms).
    /// `quick_check` skips indexes, and nothing else the commands run reads it (a migration
    /// writes the layout's indexes only; an index the version does not have is a benign
    /// difference). The index is created with a condition as false and cheap, then given the
    /// costly one in `sqlite_schema`: the same (empty) entries, so a sound store, without paying
    /// the check's time to build it. (The fixture was a 25 MB store of 60,000 rows and 32
    /// indexes, whose backup, sums and check took a minute per test under load.)
    static func slowCheckStore(in directory: String) throws -> (store: String, catalog: String) {
        let json = """
            {"formatVersion": 1, "app": "SlowCheck", "versions": [
              {"name": "V1", "entities": [{"name": "Item", "attributes": [{"name": "a", "type": "Int16"}]}]},
              {"name": "V2", "entities": [{"name": "Item", "attributes": [{"name": "a", "type": "Int16"},
                {"name": "flag", "type": "Bool", "default": false}]}]}]}
            """
        let catalog = directory + "/slow-check.json"
        let store = directory + "/SlowCheck.sqlite"
        #expect(FileManager.default.createFile(atPath: catalog, contents: Data(json.utf8)))
        let version = try #require(try Catalog.load(path: catalog).version(named: "V1"))
        try StoreCreator.create(model: version.model, versionIdentifiers: nil, at: store)
        let rows = 4_000
        try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite)).execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZA) SELECT i, 1, 1, i % 97 FROM n;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows);
            CREATE INDEX SLOW_CHECK ON ZITEM (ZA) WHERE ZA < 0;
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
        let costly = "length(replace(printf('%.*c', 100000 + ZA % 2, 'x'), 'x', 'yz')) < 0"
        try SalvageFixtures.editSchema(of: store, """
            UPDATE sqlite_schema SET sql = 'CREATE INDEX SLOW_CHECK ON ZITEM (ZA) WHERE \(costly.replacingLiterally("'", with: "''"))'
            WHERE name = 'SLOW_CHECK';
            """)
        return (store, catalog)
    }

    /// What happened around the signal.
    struct Signalled {
        var result: CommandRunner.Result
        /// The hook held the check, and the signal was sent there.
        var wasHeld: Bool
        /// Seconds from the signal to the process's end.
        var exitedAfter: TimeInterval
    }

    /// Runs `arguments` with the check held by the test hook; once held, calls `atTheHold` with
    /// the process, sends `signal`, and lets the check go on.
    static func run(_ arguments: [String], signal: Int32, marker: String, atTheHold: @escaping (Process) -> Void = { _ in }) throws -> Signalled {
        var environment = ProcessInfo.processInfo.environment
        environment["STORERESCUE_TEST_PAUSE"] = "\(TestPause.Point.integrityCheck.rawValue):\(marker)"
        var sentAt: Date?
        let result = try CommandRunner.run(arguments, environment: environment, timeout: 90, whileRunning: { process in
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning, Date() < deadline, !FileManager.default.fileExists(atPath: marker) { usleep(5_000) }
            guard FileManager.default.fileExists(atPath: marker) else { return }
            atTheHold(process)
            kill(process.processIdentifier, signal)
            sentAt = Date()
            try? FileManager.default.removeItem(atPath: marker)
        })
        return Signalled(result: result, wasHeld: sentAt != nil, exitedAfter: sentAt.map { Date().timeIntervalSince($0) } ?? .infinity)
    }

    static func name(of signal: Int32) -> String { signal == SIGTERM ? "SIGTERM" : "SIGINT" }

    /// The size of the file in `folder` whose name starts with `prefix` and this tool's
    /// temporary marker, or nil when there is none.
    static func temporarySize(_ prefix: String, in folder: String) -> Int64? {
        guard let name = BackupFixtures.fileNames(in: folder).first(where: { $0.hasPrefix(prefix + TemporaryItems.marker) }) else { return nil }
        var info = stat()
        guard stat(folder + "/" + name, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The paths the open descriptors of process `pid` lead to (`/proc/PID/fd`).
    static func openFiles(of pid: Int32) -> [String] {
        let folder = "/proc/\(pid)/fd"
        return BackupFixtures.fileNames(in: folder).compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0) }
    }

    /// `restore --force --full-check` signalled during the check of the snapshot, whole beside
    /// the target (decompressed and summed: the check is what is left before the replacement):
    /// exit 75 before the forced end, the target store and the backup untouched, nothing beside
    /// them.
    @Test func restoreSignalledDuringItsCheckStopsPromptlyAndReplacesNothing() throws {
        let signal = SIGTERM
        let directory = try TemporaryDirectory()
        let (store, _) = try Self.slowCheckStore(in: directory.url.path)
        let backup = try BackupRunner.run(store: store, options: BackupOptions.testing(directory.path("backups")))
        let target = directory.path("target/r.sqlite")
        try FileManager.default.createDirectory(atPath: directory.path("target"), withIntermediateDirectories: false)
        try BackupFixtures.makeStore(at: target, rows: 10, journalMode: "DELETE")
        let targetBefore = try FileDigest.of(path: target)
        let backupBefore = try FileDigest.of(path: backup.backupPath)
        let manifestBefore = try FileDigest.of(path: backup.manifestPath)

        var wasWhole = false
        let run = try Self.run(
            ["restore", backup.backupPath, "--to", target, "--force", "--full-check", "--backups-dir", directory.path("replaced")],
            signal: signal, marker: directory.path("held"),
            atTheHold: { _ in wasWhole = Self.temporarySize(".r.sqlite", in: directory.path("target")) == backup.manifest.snapshotSize })

        #expect(run.wasHeld, "the check was never held: \(run.result.stderr)")
        #expect(wasWhole, "the snapshot was not whole beside the target during the check")
        #expect(!run.result.timedOut)
        #expect(run.result.status == ExitStatus.temporaryFailure.rawValue, "\(run.result.stderr)")
        #expect(run.result.stderr.hasPrefix("Error: interrupted by \(Self.name(of: signal))"), "\(run.result.stderr)")
        #expect(run.exitedAfter < Self.promptExit, "exited \(run.exitedAfter) s after the signal: the check ran on to the forced end")
        #expect(try FileDigest.of(path: target) == targetBefore)
        #expect(BackupFixtures.fileNames(in: directory.path("target")) == ["r.sqlite"])
        #expect(BackupFixtures.fileNames(in: directory.path("replaced")) == [])
        #expect(try FileDigest.of(path: backup.backupPath) == backupBefore)
        #expect(try FileDigest.of(path: backup.manifestPath) == manifestBefore)
    }

    /// `upgrade` signalled during the check of its backup's kept snapshot (`integrity_check`,
    /// the default), which runs beside the write once the verification has read the whole
    /// `.gz` (the process has closed it). The write stops at the signal, or is done, and the run
    /// then waits for the verification, so only an interrupted check lets it end before the
    /// forced end. Exit 75, the store as it was, the published backup whole, nothing beside the
    /// store.
    @Test func upgradeSignalledDuringItsBackupCheckStopsPromptlyAndLeavesTheStore() throws {
        let signal = SIGINT
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path("app"), withIntermediateDirectories: false)
        let (store, catalog) = try Self.slowCheckStore(in: directory.path("app"))
        try FileManager.default.moveItem(atPath: catalog, toPath: directory.path("slow-check.json"))
        let storeBefore = try FileDigest.of(path: store)
        let backups = directory.path("backups")

        var gzipOpenAtTheHold: [String] = []
        let run = try Self.run(
            ["upgrade", store, "--catalog", directory.path("slow-check.json"), "--backup-dir", backups],
            signal: signal, marker: directory.path("held"),
            atTheHold: { gzipOpenAtTheHold = Self.openFiles(of: $0.processIdentifier).filter { $0.hasPrefix(backups + "/") && $0.hasSuffix(".gz") } })

        #expect(run.wasHeld, "the check was never held: \(run.result.stderr)")
        #expect(gzipOpenAtTheHold == [], "the verification still read the .gz during the check")
        #expect(!run.result.timedOut)
        #expect(run.result.status == ExitStatus.temporaryFailure.rawValue, "\(run.result.stderr)")
        #expect(run.result.stderr.hasPrefix("Error: interrupted by \(Self.name(of: signal))"), "\(run.result.stderr)")
        #expect(run.exitedAfter < Self.promptExit, "exited \(run.exitedAfter) s after the signal: the check ran on to the forced end")
        #expect(try FileDigest.of(path: store) == storeBefore)
        #expect(BackupFixtures.fileNames(in: directory.path("app")) == ["SlowCheck.sqlite"])
        let names = BackupFixtures.fileNames(in: backups)
        #expect(names.count == 2 && names.allSatisfy { !$0.contains(TemporaryItems.marker) }, "\(names)")
        let manifestName = try #require(names.first { $0.hasSuffix(".manifest.json") })
        let manifest = try BackupManifest.read(from: backups + "/" + manifestName)
        let gz = try #require(names.first { $0.hasSuffix(".gz") })
        #expect(try FileDigest.of(path: backups + "/" + gz).sha256 == manifest.backupSHA256)
    }
}
