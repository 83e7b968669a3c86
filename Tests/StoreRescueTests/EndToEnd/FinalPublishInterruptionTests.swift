import Foundation
import Testing
@testable import StoreRescue

/// SIGTERM then SIGINT a few milliseconds apart, at the end of a run: each writing command is
/// stopped (the test hook `STORERESCUE_TEST_PAUSE`) just before the section that puts its final
/// result in place, or just after it, and signalled there. Before: exit 75, nothing published,
/// nothing left. After: the command reports what it did (exit 0) — never "nothing was replaced"
/// — and the result is whole. Either way exactly one outcome is printed, one JSON document with
/// `--json`, and no temporary is left.
@Suite(.serialized, .enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct FinalPublishInterruptionTests {
    static let commands = ["salvage", "migrate", "create", "upgrade", "backup", "restore"]

    /// A V1 store in `app/`, its V1 → V2 catalog, a backup of it, and empty `out/`, `backups/`
    /// and `tmp/` (the run's `$TMPDIR`).
    final class Setup {
        let dir: TemporaryDirectory
        let store: String
        let catalog: String
        let backup: String
        let storeDigest: String

        init() throws {
            dir = try TemporaryDirectory()
            for folder in ["app", "out", "backups", "tmp", "kept"] {
                try FileManager.default.createDirectory(atPath: dir.path(folder), withIntermediateDirectories: false)
            }
            (store, catalog) = try BigStore.make(store: dir.path("app/big.sqlite"), catalog: dir.path("big.json"), rows: 3000)
            let taken = try CommandRunner.run(["backup", store, "--to", dir.path("kept"), "--json"])
            try #require(taken.status == 0, "\(taken.stderr)")
            backup = try #require(try taken.json()["backup"] as? String)
            storeDigest = try FileDigest.of(path: store).sha256
        }

        var output: String { dir.path("out/new.sqlite") }

        func arguments(_ command: String, json: Bool) -> [String] {
            let arguments: [String]
            switch command {
            case "salvage": arguments = ["salvage", store, "--out", output, "--catalog", catalog]
            case "migrate": arguments = ["migrate", store, "--catalog", catalog, "--out", output]
            case "create": arguments = ["create", "--catalog", catalog, "--version", "V2", output]
            case "upgrade": arguments = ["upgrade", store, "--catalog", catalog, "--backup-dir", dir.path("backups")]
            case "backup": arguments = ["backup", store, "--to", dir.path("out")]
            default: arguments = ["restore", backup, "--to", output]
            }
            return arguments + (json ? ["--json"] : [])
        }

        /// What the command's text report says of its result: it is in place.
        func reportSays(_ command: String) -> String {
            switch command {
            case "salvage": return "Salvaged \(store) into \(output) in "
            case "migrate": return "\nOutcome\n  Migrated in "
            case "create": return "Created \(output)\n"
            case "upgrade": return "\nOutcome\n  Upgraded to V2 in "
            case "backup": return "Backed up \(store) "
            default: return "Restored \(backup)\n"
            }
        }

        /// The command's final result, once in place: the new store (for `backup`, its `.gz`).
        func result(_ command: String) -> String? {
            switch command {
            case "upgrade":
                return (try? FileDigest.of(path: store).sha256) == storeDigest ? nil : store
            case "backup":
                return BackupFixtures.fileNames(in: dir.path("out")).first { $0.hasSuffix(".gz") }.map { dir.path("out/" + $0) }
            default:
                return FileManager.default.fileExists(atPath: output) ? output : nil
            }
        }

        /// Every item of this tool's temporary pattern left anywhere in the setup.
        func temporariesLeft() -> [String] {
            let enumerator = FileManager.default.enumerator(atPath: dir.url.path)
            var left: [String] = []
            while let name = enumerator?.nextObject() as? String {
                if name.contains(TemporaryItems.marker) { left.append(name) }
            }
            return left
        }

        /// The environment that stops the run at `point` (`TestPause`), with the private `$TMPDIR`.
        func environment(pausingAt point: String) -> [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["TMPDIR"] = dir.path("tmp")
            environment["STORERESCUE_TEST_PAUSE"] = "\(point):\(marker)"
            return environment
        }

        var marker: String { dir.path("paused") }
    }

    /// Once the run is stopped at the hook: SIGTERM, then SIGINT 2 ms later (the second signal
    /// ends the process from the signal handler at once). With `resuming`, the command is let go
    /// on 0.3 s later: a handler that wrongly ends the run does so within milliseconds, and the
    /// right one waits for the command whatever the delay.
    static func interrupting(at marker: String, resuming: Bool) -> (Process) -> Void {
        { process in
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning, !FileManager.default.fileExists(atPath: marker), Date() < deadline { usleep(2_000) }
            kill(process.processIdentifier, SIGTERM)
            usleep(2_000)
            kill(process.processIdentifier, SIGINT)
            guard resuming else { return }
            Thread.sleep(forTimeInterval: 0.3)
            try? FileManager.default.removeItem(atPath: marker)
        }
    }

    /// Race 1: the result was put in place, then the signals came before the report.
    @Test(arguments: commands, [false, true])
    func signalsRightAfterTheFinalPublishLetTheCommandReportIt(command: String, json: Bool) throws {
        let setup = try Setup()
        let run = try CommandRunner.run(
            setup.arguments(command, json: json), environment: setup.environment(pausingAt: "after-final-publish"), timeout: 60,
            whileRunning: Self.interrupting(at: setup.marker, resuming: true))
        #expect(run.status == 0, "\(command): \(run.stdout)\(run.stderr)")
        if json {
            let report = try run.json()
            #expect((report["error"] ?? NSNull()) is NSNull, "\(command): \(run.stdout)")
            #expect(report["staleTemporariesRemoved"] as? [String] == [])
        } else {
            #expect(run.stdout.contains(setup.reportSays(command)), "\(command): \(run.stdout)")
            #expect(run.stderr.isEmpty, "\(command): \(run.stderr)")
        }
        let result = try #require(setup.result(command), "\(command): the result is in place")
        if command == "backup" {
            #expect(try CommandRunner.run(["verify", result]).status == 0)
        } else {
            let check = try SQLiteConnection(path: result, options: SQLiteOpenOptions(mode: .immutable)).scalar("PRAGMA integrity_check")?.string
            #expect(check == "ok", "\(command)")
        }
        #expect(setup.temporariesLeft() == [], "\(command)")
    }

    /// The interruption's message cannot be written — its stream is a pipe nobody reads, already
    /// full — yet the process still ends (exit 75, nothing published, nothing left) within the
    /// message's 2 s: before, the signal handler's queue blocked in the write and the process
    /// hung until SIGKILL, every later signal ignored.
    @Test(arguments: [false, true])
    func anInterruptionWhoseMessageCannotBeWrittenStillEnds(json: Bool) throws {
        let setup = try Setup()
        let pipe = Pipe()
        // Fill the pipe's buffer (64 KiB on Linux) without blocking: what the process writes next blocks.
        let writeEnd = pipe.fileHandleForWriting.fileDescriptor
        let flags = fcntl(writeEnd, F_GETFL)
        _ = fcntl(writeEnd, F_SETFL, flags | O_NONBLOCK)
        let chunk = [UInt8](repeating: 0x2E, count: 4096)
        while chunk.withUnsafeBytes({ Foundation.write(writeEnd, $0.baseAddress, $0.count) }) > 0 {}
        _ = fcntl(writeEnd, F_SETFL, flags)
        let process = Process()
        process.executableURL = CommandRunner.executable
        process.arguments = setup.arguments("salvage", json: json)
        process.environment = setup.environment(pausingAt: "before-final-publish")
        process.standardOutput = json ? pipe.fileHandleForWriting : FileHandle.nullDevice
        process.standardError = json ? FileHandle.nullDevice : pipe.fileHandleForWriting
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        Self.interrupting(at: setup.marker, resuming: false)(process)
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        #expect(!process.isRunning, "the process hung on its interruption message")
        guard !process.isRunning else { return }
        #expect(process.terminationStatus == 75)
        #expect(setup.result("salvage") == nil, "nothing was published")
        #expect(setup.temporariesLeft() == [])
    }

    /// The signals came while the command was about to put its result in place: it never does.
    @Test(arguments: commands, [false, true])
    func signalsRightBeforeTheFinalPublishPublishNothing(command: String, json: Bool) throws {
        let setup = try Setup()
        let run = try CommandRunner.run(
            setup.arguments(command, json: json), environment: setup.environment(pausingAt: "before-final-publish"), timeout: 60,
            whileRunning: Self.interrupting(at: setup.marker, resuming: false))
        #expect(run.status == 75, "\(command): \(run.stdout)\(run.stderr)")
        #expect(!run.timedOut)
        let message = "interrupted by SIGTERM; temporary files were removed and nothing was replaced"
        if json {
            let error = try #require(try run.json()["error"] as? [String: Any], "\(command): \(run.stdout)")
            #expect(error["message"] as? String == message)
            #expect(error["exitStatus"] as? Int == 75)
        } else {
            #expect(run.stdout.isEmpty, "\(command): \(run.stdout)")
            #expect(run.stderr == "Error: \(message)\nTry: run the command again when it can finish\n", "\(command)")
        }
        #expect(setup.result(command) == nil, "\(command): nothing was published")
        #expect(setup.temporariesLeft() == [], "\(command)")
    }
}
