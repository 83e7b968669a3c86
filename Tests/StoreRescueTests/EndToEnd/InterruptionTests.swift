import Foundation
import Testing
@testable import StoreRescue

/// SIGTERM and SIGINT stop a command promptly, exit 75 and leave nothing behind, also while it
/// waits inside SQLite; what a `kill -9` leaves is removed (and reported) by the next run.
@Suite(.enabled(if: CommandRunner.isAvailable && BackupFixtures.pythonPath != nil, "needs the built executable and python3"))
struct InterruptionTests {
    /// A python process holding an exclusive lock on `store` until its stdin closes.
    final class LockHolder {
        let process = Process()
        let input = Pipe()

        init(store: String) throws {
            let script = """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute("BEGIN EXCLUSIVE")
                print("locked", flush=True); sys.stdin.read()
                """
            process.executableURL = URL(fileURLWithPath: BackupFixtures.pythonPath ?? "/usr/bin/python3")
            process.arguments = ["-c", script, store]
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = input
            try process.run()
            _ = output.fileHandleForReading.availableData  // "locked"
        }

        deinit {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    /// A store in rollback-journal mode (an exclusive lock blocks every reader) and a private `$TMPDIR`.
    static func lockedStore(in dir: TemporaryDirectory) throws -> (store: String, holder: LockHolder, environment: [String: String]) {
        let store = dir.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 100, journalMode: "DELETE")
        try FileManager.default.createDirectory(atPath: dir.path("tmp"), withIntermediateDirectories: false)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = dir.path("tmp")
        return (store, try LockHolder(store: store), environment)
    }

    /// Sends `signal` once `ready` holds (polled every 5 ms, for up to 20 s), and no sooner
    /// than `after` seconds into the run. Waiting for what the command visibly does, not for a
    /// fixed time: on a loaded machine a command can take more than a second to get that far,
    /// and a signal that comes before it installed its handlers kills it outright (CI, stop 19:
    /// a SIGKILL at 1 s found no staging folder yet).
    static func signalling(_ signal: Int32, after: TimeInterval = 0, when ready: @escaping () -> Bool) -> (Process) -> Void {
        { process in
            let started = Date()
            let deadline = started.addingTimeInterval(20)
            while process.isRunning, !ready(), Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            let rest = after - Date().timeIntervalSince(started)
            if rest > 0 { Thread.sleep(forTimeInterval: rest) }
            kill(process.processIdentifier, signal)
        }
    }

    /// True once a temporary item of this tool's (`TemporaryItems.marker`) named `prefix…` is in
    /// `folder`, other than those in `except`.
    static func hasTemporary(_ prefix: String, in folder: String, except: [String] = []) -> () -> Bool {
        {
            BackupFixtures.fileNames(in: folder).contains { $0.hasPrefix(prefix + TemporaryItems.marker) && !except.contains($0) }
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func backupWaitingForALockStopsPromptlyAndCleansUp(signal: Int32) throws {
        let dir = try TemporaryDirectory()
        let (store, holder, environment) = try Self.lockedStore(in: dir)
        let result = try CommandRunner.run(["backup", store, "--to", dir.path("backups"), "--timeout", "60"],
                                           environment: environment, timeout: 30,
                                           whileRunning: Self.signalling(signal, after: 1, when: Self.hasTemporary(".snapshot", in: dir.path("backups"))))
        withExtendedLifetime(holder) {}
        #expect(!result.timedOut)
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.seconds < 8, "stopped \(result.seconds) s after it started (signal at 1 s or later, once it waited)")
        #expect(result.stderr.hasPrefix("Error: interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT")"))
        #expect(BackupFixtures.fileNames(in: dir.path("backups")) == [], "no staging folder or partial .gz left")
        #expect(BackupFixtures.fileNames(in: dir.path("tmp")) == [])
    }

    @Test func jsonModeReportsTheInterruptionAsJSON() throws {
        let dir = try TemporaryDirectory()
        let (store, holder, environment) = try Self.lockedStore(in: dir)
        let result = try CommandRunner.run(["backup", store, "--to", dir.path("backups"), "--timeout", "60", "--json"],
                                           environment: environment, timeout: 30,
                                           whileRunning: Self.signalling(SIGTERM, when: Self.hasTemporary(".snapshot", in: dir.path("backups"))))
        withExtendedLifetime(holder) {}
        #expect(result.status == 75)
        let error = try #require(try result.json()["error"] as? [String: Any])
        #expect(error["exitStatus"] as? Int == 75)
        #expect((error["message"] as? String)?.contains("interrupted by SIGTERM") == true)
    }

    /// `kill -9` leaves the staging folder; the next backup into that folder removes it once it
    /// is stale, and says so in text and JSON.
    @Test func whatAKilledBackupLeavesIsRemovedByTheNextRun() throws {
        let dir = try TemporaryDirectory()
        let backups = dir.path("backups")
        do {
            let (store, holder, environment) = try Self.lockedStore(in: dir)
            let killed = try CommandRunner.run(["backup", store, "--to", backups, "--timeout", "60"], environment: environment,
                                               timeout: 30, whileRunning: Self.signalling(SIGKILL, when: Self.hasTemporary(".snapshot", in: backups)))
            withExtendedLifetime(holder) {}
            #expect(killed.status == SIGKILL)
        }
        let left = BackupFixtures.fileNames(in: backups)
        try #require(left.count == 1, "\(left)")
        #expect(left[0].hasPrefix(".snapshot\(TemporaryItems.marker)"), "\(left)")
        // Fresh: a live process's item could still be young, so it stays.
        let store = dir.path("s.sqlite")
        let early = try CommandRunner.run(["backup", store, "--to", backups])
        #expect(early.status == 0)
        #expect(BackupFixtures.fileNames(in: backups).contains(left[0]))
        TemporaryItemsTests.backdate(backups + "/" + left[0])
        let text = try CommandRunner.run(["backup", store, "--to", backups])
        #expect(text.status == 0)
        #expect(text.stdout.contains("Removed a stale temporary left by an interrupted run: \(backups)/\(left[0])"))
        #expect(!BackupFixtures.fileNames(in: backups).contains(left[0]))
        // JSON: the key is always there.
        let json = try CommandRunner.run(["backup", store, "--to", backups, "--json"])
        #expect(try json.json()["staleTemporariesRemoved"] as? [String] == [])
    }

    /// A verify killed part way leaves its folder in `$TMPDIR`; the next verify removes it.
    @Test func whatAKilledVerifyLeavesInTMPDIRIsRemovedByTheNextVerify() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path("tmp"), withIntermediateDirectories: false)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = dir.path("tmp")
        let backup = try SlowBackup.make(in: dir)
        let killed = try CommandRunner.run(["verify", backup], environment: environment, timeout: 60,
                                           whileRunning: Self.signalling(SIGKILL, when: Self.hasTemporary("verify", in: dir.path("tmp"))))
        #expect(killed.status == SIGKILL)
        let left = BackupFixtures.fileNames(in: dir.path("tmp"))
        try #require(left.count == 1, "\(left)")
        #expect(left[0].hasPrefix("verify\(TemporaryItems.marker)"), "\(left)")
        TemporaryItemsTests.backdate(dir.path("tmp") + "/" + left[0])
        // Signalled once the stale item is gone and its own is there: its handlers are in place.
        let next = try CommandRunner.run(["verify", backup, "--json"], environment: environment, timeout: 60,
                                         whileRunning: Self.signalling(SIGINT, when: {
                                             !BackupFixtures.fileNames(in: dir.path("tmp")).contains(left[0])
                                                 && Self.hasTemporary("verify", in: dir.path("tmp"), except: [left[0]])()
                                         }))
        // Interrupted itself (cooperatively: it polls between blocks), it removed its own and the stale one.
        #expect(next.status == 75, "\(next.stdout)\(next.stderr)")
        #expect(BackupFixtures.fileNames(in: dir.path("tmp")) == [])
        #expect(try next.json()["staleTemporariesRemoved"] as? [String] == [dir.path("tmp") + "/" + left[0]])
    }

    /// A restore killed part way leaves its temporary beside the target; the next restore there removes it.
    @Test func whatAKilledRestoreLeavesBesideTheTargetIsRemovedByTheNextRestore() throws {
        let dir = try TemporaryDirectory()
        let backup = try SlowBackup.make(in: dir)
        try FileManager.default.createDirectory(atPath: dir.path("target"), withIntermediateDirectories: false)
        let killed = try CommandRunner.run(["restore", backup, "--to", dir.path("target/r.sqlite")], timeout: 60,
                                           whileRunning: Self.signalling(SIGKILL, when: Self.hasTemporary(".r.sqlite", in: dir.path("target"))))
        #expect(killed.status == SIGKILL)
        let left = BackupFixtures.fileNames(in: dir.path("target"))
        try #require(left.count == 1, "\(left)")
        #expect(left[0].hasPrefix(".r.sqlite\(TemporaryItems.marker)"), "\(left)")
        TemporaryItemsTests.backdate(dir.path("target") + "/" + left[0])
        let next = try CommandRunner.run(["restore", backup, "--to", dir.path("target/r.sqlite")], timeout: 60,
                                         whileRunning: Self.signalling(SIGTERM, when: {
                                             !BackupFixtures.fileNames(in: dir.path("target")).contains(left[0])
                                                 && Self.hasTemporary(".r.sqlite", in: dir.path("target"), except: [left[0]])()
                                         }))
        #expect(next.status == 75)
        #expect(next.stdout.contains("Removed a stale temporary left by an interrupted run: \(dir.path("target"))/\(left[0])"))
        #expect(BackupFixtures.fileNames(in: dir.path("target")) == [])
    }
}

/// A backup that takes seconds to verify or restore: its manifest describes 1 GiB of zeros,
/// which compress to about 1 MB.
enum SlowBackup {
    static func make(in dir: TemporaryDirectory) throws -> String {
        let gz = dir.path("zeros.gz")
        let script = """
            import gzip, hashlib, json, os, sys
            gz, chunk, total = sys.argv[1], b"\\0" * (1 << 20), 1024
            digest = hashlib.sha256()
            with gzip.open(gz, "wb", compresslevel=1) as out:
                for _ in range(total):
                    out.write(chunk); digest.update(chunk)
            data = open(gz, "rb").read()
            manifest = {"formatVersion": 1, "toolName": "storerescue", "toolVersion": "test", "sqliteVersion": "3",
                "zlibVersion": "1", "createdAt": "2026-01-01T00:00:00Z", "reason": "manual", "sourcePath": "/nowhere/zeros",
                "sourceSize": total << 20, "sourceWALSize": 0, "pageSize": 4096, "pageCount": (total << 20) // 4096,
                "snapshotSize": total << 20, "snapshotSHA256": digest.hexdigest(), "backupFileName": os.path.basename(gz),
                "backupSize": len(data), "backupSHA256": hashlib.sha256(data).hexdigest(), "compressionLevel": 1,
                "storeUUID": None, "frameworkVersion": None}
            json.dump(manifest, open(gz[:-3] + ".manifest.json", "w"))
            """
        let result = try BackupFixtures.run(BackupFixtures.pythonPath ?? "/usr/bin/python3", ["-c", script, gz])
        #expect(result.status == 0, "\(result.standardError)")
        return gz
    }
}
