import Foundation
import Testing
@testable import StoreRescue

/// Every way a backup can fail that an operator can hit: a clear error naming the file, nothing
/// partial left in the backup folder, the store untouched.
@Suite struct BackupFailureTests {
    static let date = Date(timeIntervalSince1970: 1_738_314_900)  // names: s.sqlite.20250131T091500Z.*

    /// No file of ours (published or temporary) is in `folder`.
    static func expectNothingWritten(in folder: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let names = BackupFixtures.fileNames(in: folder)
        #expect(names.allSatisfy { !$0.hasSuffix(".gz") && !$0.contains(TemporaryItems.marker) && !$0.contains(".snapshot") },
                "left behind: \(names)", sourceLocation: sourceLocation)
    }

    @Test func fileSizeLimitIsAClearErrorAndLeavesNothing() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20_000, journalMode: "DELETE")
        let before = try FileDigest.of(path: store)
        let folder = temp.path("b")
        // 256 blocks of 512 bytes: far below the store's size. The child ignores SIGXFSZ itself.
        let result = try BackupFixtures.run("/bin/sh", ["-c", "ulimit -f 256 && exec \"$0\" backup \"$1\" \"$2\"",
                                                         BackupFixtures.probePath, store, folder])
        #expect(result.status == ExitStatus.ioError.rawValue, "stderr: \(result.standardError)")
        #expect(result.standardError.hasPrefix(
            "Error: the snapshot of \(store) failed: cannot write the snapshot in \(folder): File too large; nothing was written\nTry: "))
        Self.expectNothingWritten(in: folder)
        #expect(BackupFixtures.fileNames(in: folder) == [])
        #expect(try FileDigest.of(path: store) == before)
    }

    @Test(.enabled(if: FullDisk.isAvailable, "needs root and tmpfs mounts (a full disk is simulated with a 64 KiB tmpfs)"))
    func fullDiskIsAClearErrorAndLeavesNothing() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 30_000, journalMode: "DELETE")
        let before = try FileDigest.of(path: store)
        let disk = try FullDisk(at: temp.path("tiny"))
        defer { disk.unmount() }
        var options = BackupOptions.testing(disk.path, at: Self.date)
        options.temporaryDirectory = temp.url.path  // the snapshot fits; the .gz does not
        let backupPath = disk.path + "/s.sqlite.20250131T091500Z.gz"

        #expect(throws: SafeFileOutputError.writeFailed(path: backupPath, reason: "No space left on device")) {
            try BackupRunner.run(store: store, options: options)
        }
        #expect(BackupFixtures.fileNames(in: disk.path) == [])
        Self.expectNothingWritten(in: temp.url.path)
        #expect(try FileDigest.of(path: store) == before)
    }

    @Test func unwritableDestinationIsAClearError() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 50)
        let folder = temp.path("locked")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let lock = try UnwritableFolder(folder)
        defer { lock.restore() }

        let error = #expect(throws: BackupError.self) { try BackupRunner.run(store: store, options: .testing(folder)) }
        #expect(error?.description == "cannot use the backup folder \(folder): cannot create files there: \(lock.expectedReason)")
        #expect(error?.recoverySuggestion == "choose a backup folder you may write to with --to, or fix its permissions")
        #expect(error?.exitStatus == .cannotCreateOutput)
        lock.restore()
        #expect(BackupFixtures.fileNames(in: folder) == [])

        let nested = folder + "/missing/deeper"
        let relock = try UnwritableFolder(folder)
        defer { relock.restore() }
        #expect(throws: BackupError.destinationUnusable(path: nested, reason: "it does not exist and cannot be created")) {
            try BackupRunner.run(store: store, options: .testing(nested))
        }
    }

    @Test(arguments: ["s.sqlite.20250131T091500Z.gz", "s.sqlite.20250131T091500Z.manifest.json"])
    func plantedSymbolicLinkIsRefusedNotFollowed(plantedName: String) throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 50)
        let folder = temp.path("b")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let victim = temp.path("victim.txt")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: folder + "/" + plantedName, withDestinationPath: victim)

        let error = #expect(throws: SafeFileOutputError.self) {
            try BackupRunner.run(store: store, options: .testing(folder, at: Self.date))
        }
        #expect(error?.description == "\(folder)/\(plantedName) is a symbolic link; it was neither followed nor replaced")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
        #expect(BackupFixtures.fileNames(in: folder) == [plantedName])
    }

    @Test func missingSourceIsAClearError() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("gone.sqlite")
        let error = #expect(throws: BackupError.self) { try BackupRunner.run(store: store, options: .testing(temp.path("b"))) }
        #expect(error?.description == "the store \(store) does not exist")
        #expect(error?.exitStatus == .noInput)
        #expect(!FileManager.default.fileExists(atPath: temp.path("b")))
    }

    @Test func sourceThatVanishesAfterItWasFoundIsAClearError() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 50)
        // The path now names something else: a file that is not a database.
        try FileManager.default.removeItem(atPath: store)
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: store))
        // Refused as inspect refuses it, before SQLite opens anything.
        let error = #expect(throws: StoreAccessError.self) { try BackupRunner.run(store: store, options: .testing(temp.path("b"))) }
        #expect(error?.description == "\(store): is not an SQLite database (no SQLite header)")
        #expect(error?.exitStatus == .notAStore)
        #expect(BackupFixtures.fileNames(in: temp.path("b")) == [])
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == Data(repeating: 0x41, count: 8192))
    }

    @Test func symbolicLinkSourceIsRefused() throws {
        let temp = try TemporaryDirectory()
        let real = temp.path("real.sqlite")
        try BackupFixtures.makeStore(at: real, rows: 5)
        let link = temp.path("link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        #expect(throws: BackupError.sourceNotARegularFile(path: link, kind: "a symbolic link")) {
            try BackupRunner.run(store: link, options: .testing(temp.path("b")))
        }
    }

    @Test func interruptionRemovesEverything() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20_000)
        let before = try FileDigest.of(path: store)
        let flag = CancellationFlag()
        var options = BackupOptions.testing(temp.path("b"))
        options.pagesPerStep = 16
        var calls = 0
        let error = #expect(throws: BackupError.self) {
            try BackupRunner.run(store: store, options: options, progress: { _ in
                calls += 1
                if calls == 3 { flag.cancel() }  // part way through the snapshot
            }, cancellation: flag)
        }
        #expect(error == .interrupted)
        #expect(error?.description == "interrupted; partial files were removed and the store was left untouched")
        #expect(BackupFixtures.fileNames(in: temp.path("b")) == [])
        #expect(try FileDigest.of(path: store) == before)
    }

    /// `storerescue` (not the probe) run under `ulimit -n limit` in a child shell, so the test's
    /// own limit is untouched.
    static func runUnderOpenFileLimit(_ limit: Int, _ arguments: [String]) throws -> (status: Int32, standardOutput: String, standardError: String) {
        try BackupFixtures.run("/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$@\"", "sh", CommandRunner.executable.path] + arguments)
    }

    /// No file descriptor left at any step of a backup (limits 5 to 16: the store, the snapshot,
    /// its -journal, the .gz's temporary file, the manifest): exit 74 with "raise the limit on
    /// open files", nothing in the backup folder, the store untouched. A review, under `ulimit
    /// -n 9`, had the .gz's temporary file refused read as an unusable folder (73, "check that
    /// the folder exists"); the snapshot's -journal refused read as a missing store (66), the
    /// snapshot file as a failed snapshot with "check free space" (74). The .gz case must be met
    /// at least once, and the highest limit must let the backup through (every step was reached).
    @Test(.enabled(if: CommandRunner.isAvailable, "needs the built storerescue"))
    func noFileDescriptorLeftIsTheLimitAndLeavesNothing() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 50, journalMode: "DELETE")
        let before = try FileDigest.of(path: store)
        var metTheGzip = false
        var succeededAt: Int?
        for limit in 5...16 {
            let folder = temp.path("b\(limit)")
            let result = try Self.runUnderOpenFileLimit(limit, ["backup", store, "--to", folder])
            let name = "ulimit -n \(limit)"
            if result.status == 0 {
                succeededAt = succeededAt ?? limit
                continue
            }
            #expect(result.status == ExitStatus.ioError.rawValue, "\(name): \(result.standardError)")
            #expect(result.standardError.contains("no file descriptor left"), "\(name): \(result.standardError)")
            #expect(result.standardError.contains("\nTry: not a lack of disk space: raise the limit on open files"), "\(name): \(result.standardError)")
            if result.standardError.hasPrefix("Error: cannot create \(folder)/s.sqlite."),
               result.standardError.contains(".gz: no file descriptor left: Too many open files; nothing was left behind\n") {
                metTheGzip = true
            }
            #expect(BackupFixtures.fileNames(in: folder) == [], "\(name): left behind")
        }
        #expect(metTheGzip)
        #expect(succeededAt != nil)
        #expect(try FileDigest.of(path: store) == before)
        #expect(BackupFixtures.fileNames(in: temp.url.path).filter { $0.hasPrefix("s.sqlite") } == ["s.sqlite"])
    }

    /// No file descriptor left to read a backup's manifest (`restore` under `ulimit -n` 5 to 8):
    /// exit 74 with the open-files hint, not 66 "the backup cannot be checked without its
    /// manifest; use another backup" — the backup is fine. Nothing is restored.
    @Test(.enabled(if: CommandRunner.isAvailable, "needs the built storerescue"))
    func noFileDescriptorLeftForTheManifestIsTheLimitNotTheBackup() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 50, journalMode: "DELETE")
        let backup = try BackupRunner.run(store: store, options: BackupOptions.testing(temp.path("b"), at: Self.date))
        var metTheManifest = false
        for limit in 5...8 {
            let target = temp.path("restored\(limit).sqlite")
            let result = try Self.runUnderOpenFileLimit(limit, ["restore", backup.backupPath, "--to", target])
            let name = "ulimit -n \(limit)"
            #expect(result.status != ExitStatus.noInput.rawValue, "\(name): \(result.standardError)")
            #expect(!result.standardError.contains("use another backup"), "\(name): \(result.standardError)")
            if result.standardError.hasPrefix("Error: \(backup.manifestPath): cannot be opened, no file descriptor left") {
                metTheManifest = true
                #expect(result.status == ExitStatus.ioError.rawValue, "\(name)")
                #expect(result.standardError.contains("\nTry: not a lack of disk space: raise the limit on open files"), "\(name)")
                #expect(!FileManager.default.fileExists(atPath: target), "\(name)")
            }
        }
        #expect(metTheManifest)
    }
}

extension BackupFailureTests {
    /// The store is deleted (main file and sidecars) while the snapshot is being copied. SQLite
    /// keeps reading the file it opened, so the backup is still one consistent committed state:
    /// nothing half-copied is published.
    @Test func sourceDeletedMidBackupStillYieldsAConsistentSnapshot() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20_000)
        let expected = try BackupFixtures.content(of: store)
        var options = BackupOptions.testing(temp.path("b"))
        options.pagesPerStep = 16
        var deleted = false
        let result = try BackupRunner.run(store: store, options: options, progress: { _ in
            guard !deleted else { return }
            deleted = true
            for suffix in ["", "-wal", "-shm"] { unlink(store + suffix) }
        })
        #expect(deleted)
        #expect(!FileManager.default.fileExists(atPath: store))
        let restored = temp.path("restored.sqlite")
        _ = try BackupRestorer.restore(backup: result.backupPath, options: RestoreOptions(targetPath: restored))
        #expect(try BackupFixtures.content(of: restored, mode: .immutable) == expected)
        #expect(try BackupVerifier.verify(backup: result.backupPath).isGood)
    }
}
