import Foundation
import Testing
@testable import StoreRescue

/// FIFOs, devices, links and folders wherever a command opens a file (a backup, its manifest, a
/// store's sidecar): refused at once with a message naming the file, never blocked on or read
/// without end. Each run is bounded; a hang fails the test instead of stalling the suite.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct SpecialFileTests {
    /// A run that must end promptly with `status`, one `Error:` line naming `names`, and a `Try:`.
    static func expectRefusal(_ result: CommandRunner.Result, status: Int32, names: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!result.timedOut, "the command hung", sourceLocation: sourceLocation)
        #expect(result.status == status, "\(result.stderr)", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("Error: ") && lines[1].hasPrefix("Try: "), "\(result.stderr)",
                sourceLocation: sourceLocation)
        #expect(result.stderr.contains(names), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    /// A real backup (and manifest) of a small store, in `dir`.
    static func makeBackup(in dir: TemporaryDirectory) throws -> BackupResult {
        try BackupFixtures.makeStore(at: dir.path("s.sqlite"), rows: 20)
        return try BackupRunner.run(store: dir.path("s.sqlite"), options: .testing(dir.path("backups")))
    }

    @Test func verifyAndRestoreRefuseAFIFOBackup() throws {
        let dir = try TemporaryDirectory()
        #expect(mkfifo(dir.path("b.gz"), 0o600) == 0)
        Self.expectRefusal(try CommandRunner.run(["verify", dir.path("b.gz")], timeout: 60), status: 66, names: dir.path("b.gz"))
        Self.expectRefusal(try CommandRunner.run(["restore", dir.path("b.gz"), "--to", dir.path("r.sqlite")], timeout: 60),
                           status: 66, names: dir.path("b.gz"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("r.sqlite")))
    }

    /// A link to a device beside a real manifest: before, the digest of the "backup" read
    /// /dev/zero without end.
    @Test(arguments: ["/dev/zero", "/dev/urandom"])
    func verifyAndRestoreRefuseALinkToADevice(device: String) throws {
        let dir = try TemporaryDirectory()
        let backup = try Self.makeBackup(in: dir)
        let link = dir.path("device.gz")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: device)
        try FileManager.default.copyItem(atPath: backup.manifestPath, toPath: dir.path("device.manifest.json"))
        Self.expectRefusal(try CommandRunner.run(["verify", link], timeout: 60), status: 66, names: link)
        Self.expectRefusal(try CommandRunner.run(["restore", link, "--to", dir.path("r.sqlite")], timeout: 60), status: 66, names: link)
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        #expect(before["r.sqlite"] == nil)
    }

    @Test func verifyOfABackupWhoseManifestIsAFIFOReportsIt() throws {
        let dir = try TemporaryDirectory()
        let backup = try Self.makeBackup(in: dir)
        try FileManager.default.removeItem(atPath: backup.manifestPath)
        #expect(mkfifo(backup.manifestPath, 0o600) == 0)
        let result = try CommandRunner.run(["verify", backup.backupPath], timeout: 60)
        #expect(!result.timedOut)
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot read the backup manifest \(backup.manifestPath): it is not a regular file"))
    }

    /// A sidecar that is not a regular file: refused up front, naming it, and the folder is left
    /// exactly as found (no new -wal or -shm).
    @Test(arguments: [("-journal", "fifo"), ("-wal", "fifo"), ("-wal", "folder"), ("-wal", "link"),
                      ("-shm", "fifo"), ("-shm", "folder"), ("-shm", "link")])
    func backupRefusesAnIrregularSidecar(suffix: String, kind: String) throws {
        let dir = try TemporaryDirectory()
        let folder = dir.path("store")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let store = folder + "/s.sqlite"
        try BackupFixtures.makeStore(at: store, rows: 20, journalMode: suffix == "-journal" ? "DELETE" : "WAL")
        let sidecar = store + suffix
        switch kind {
        case "fifo": #expect(mkfifo(sidecar, 0o600) == 0)
        case "folder": try FileManager.default.createDirectory(atPath: sidecar, withIntermediateDirectories: false)
        default: try FileManager.default.createSymbolicLink(atPath: sidecar, withDestinationPath: dir.path("elsewhere"))
        }
        let before = try StoreFixtureBuilder.snapshot(of: folder)
        let result = try CommandRunner.run(["backup", store, "--to", dir.path("backups")], timeout: 60)
        Self.expectRefusal(result, status: 66, names: "its sidecar \(sidecar) is a")
        #expect(!result.stderr.contains("does not exist"))
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == before, "nothing created or changed beside the store")
        for command in [["inspect", store], ["match", store, "--catalog", store]] {
            Self.expectRefusal(try CommandRunner.run(command, timeout: 60), status: 66, names: sidecar)
        }
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == before)
    }

    @Test func backupOfAnEmptyFileSaysItIsEmpty() throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.path("empty.sqlite"), contents: Data()))
        let result = try CommandRunner.run(["backup", dir.path("empty.sqlite"), "--to", dir.path("backups")], timeout: 60)
        Self.expectRefusal(result, status: 65, names: "\(dir.path("empty.sqlite")): is empty (0 bytes)")
        #expect(!result.stderr.contains("report a bug"))
        #expect(BackupFixtures.fileNames(in: dir.path("backups")) == [])
    }
}

/// A folder reached through a symbolic link is a folder: backups, restores, verify's scratch
/// folder, new stores and reads work there (the file itself may not be a link).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct SymlinkedFolderTests {
    @Test func everyCommandWorksInAFolderReachedThroughALink() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path("real"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: dir.path("link"), withDestinationPath: dir.path("real"))
        try BackupFixtures.makeStore(at: dir.path("link/s.sqlite"), rows: 20)
        // Never into the store's own folder (refused since review rv8 #11): a folder inside it,
        // reached through the same link.
        let backup = try CommandRunner.run(["backup", dir.path("link/s.sqlite"), "--to", dir.path("link/backups"), "--json"])
        #expect(backup.status == 0, "\(backup.stdout)")
        #expect(!backup.stdout.contains("free space"))
        let gz = try #require(try backup.json()["backup"] as? String)
        let verify = try CommandRunner.run(["verify", gz, "--temp-dir", dir.path("link")])
        #expect(verify.status == 0, "\(verify.stderr)")
        let restore = try CommandRunner.run(["restore", gz, "--to", dir.path("link/restored.sqlite")])
        #expect(restore.status == 0, "\(restore.stderr)")
        let inspect = try CommandRunner.run(["inspect", dir.path("link/restored.sqlite")])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(BackupFixtures.fileNames(in: dir.path("real")).filter { $0.contains(TemporaryItems.marker) } == [])
    }
}
