import Foundation
import Testing
@testable import StoreRescue

/// A folder a command cannot write into: the error names the folder as what it is for, and the
/// hint the option of the command that failed. Until review rv8 (#4) every one said "choose a
/// folder you may write to with --to": `restore --to` the folder is "it is a folder" (73),
/// `upgrade --to` a version (64), and `verify` called its temporary folder "the backup folder".
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct FolderOptionHintTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")
    static let catalog = samples.appendingPathComponent("Journal/catalog.json").path

    /// A copy of the Journal sample in `app/`, its backup in `backups/`, and an empty `locked/`.
    struct Case {
        let temp: TemporaryDirectory
        let store: String
        let backup: String
        let locked: String

        init() throws {
            temp = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: temp.path("app"), withIntermediateDirectories: false)
            store = temp.path("app/j.sqlite")
            try FileManager.default.copyItem(atPath: FolderOptionHintTests.samples.appendingPathComponent("Journal/Journal.sqlite").path,
                                             toPath: store)
            let made = try CommandRunner.run(["backup", store, "--to", temp.path("backups"), "--json"])
            try #require(made.status == 0, "\(made.stdout) \(made.stderr)")
            backup = try #require(try made.json()["backup"] as? String)
            locked = temp.path("locked")
            try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        }
    }

    /// The `error` object of a `--json` run that failed with 73.
    static func error(_ result: CommandRunner.Result, sourceLocation: SourceLocation = #_sourceLocation) throws -> (message: String, hint: String) {
        #expect(result.status == ExitStatus.cannotCreateOutput.rawValue, "\(result.stdout) \(result.stderr)", sourceLocation: sourceLocation)
        let error = try #require(try result.json()["error"] as? [String: Any], sourceLocation: sourceLocation)
        #expect(error["exitStatus"] as? Int == 73, sourceLocation: sourceLocation)
        return (try #require(error["message"] as? String, sourceLocation: sourceLocation),
                try #require(error["hint"] as? String, sourceLocation: sourceLocation))
    }

    @Test func restoreNamesItsBackupsDirectory() throws {
        let fixture = try Case()
        let folder = SafeFileOutput.folder(of: fixture.backup)
        let lock = try UnwritableFolder(folder)
        defer { lock.restore() }
        let refused = try Self.error(CommandRunner.run(["restore", fixture.backup, "--to", fixture.store, "--force", "--json"]))
        #expect(refused.message == "cannot use the backup folder \(folder): cannot create files there: \(lock.expectedReason)")
        #expect(refused.hint == "choose a backup folder you may write to with --backups-dir, or fix its permissions")
        // Text mode says the same; following the hint works.
        let text = try CommandRunner.run(["restore", fixture.backup, "--to", fixture.store, "--force"])
        #expect(text.stderr.hasSuffix("\nTry: choose a backup folder you may write to with --backups-dir, or fix its permissions\n"), "\(text.stderr)")
        let followed = try CommandRunner.run(["restore", fixture.backup, "--to", fixture.store, "--force", "--backups-dir", fixture.temp.path("elsewhere")])
        #expect(followed.status == 0, "\(followed.stdout) \(followed.stderr)")
    }

    @Test(arguments: ["upgrade", "adopt"])
    func upgradeAndAdoptNameTheirBackupDirectory(command: String) throws {
        let fixture = try Case()
        let lock = try UnwritableFolder(fixture.locked)
        defer { lock.restore() }
        let before = try FileDigest.of(path: fixture.store)
        let refused = try Self.error(CommandRunner.run([command, fixture.store, "--catalog", Self.catalog, "--backup-dir", fixture.locked, "--json"]))
        #expect(refused.message == "cannot use the backup folder \(fixture.locked): cannot create files there: \(lock.expectedReason)")
        #expect(refused.hint == "choose a backup folder you may write to with --backup-dir, or fix its permissions")
        #expect(try FileDigest.of(path: fixture.store) == before)
    }

    @Test func verifyNamesItsTemporaryFolderAndTempDir() throws {
        let fixture = try Case()
        let lock = try UnwritableFolder(fixture.locked)
        defer { lock.restore() }
        // Given relative, named absolute (it read "the backup folder locked").
        let refused = try Self.error(CommandRunner.run(
            program: "/bin/sh", ["-c", "cd \"$1\" && exec \"$0\" verify \"$2\" --temp-dir locked --json",
                                 CommandRunner.executable.path, fixture.temp.url.path, fixture.backup]))
        #expect(refused.message == "cannot use the temporary folder \(fixture.locked): cannot create a private temporary folder there")
        #expect(refused.hint == "choose a temporary folder you may write to with --temp-dir, or fix its permissions")
    }

    @Test func backupNamesTo() throws {
        let fixture = try Case()
        let lock = try UnwritableFolder(fixture.locked)
        defer { lock.restore() }
        let refused = try Self.error(CommandRunner.run(["backup", fixture.store, "--to", fixture.locked, "--json"]))
        #expect(refused.message == "cannot use the backup folder \(fixture.locked): cannot create files there: \(lock.expectedReason)")
        #expect(refused.hint == "choose a backup folder you may write to with --to, or fix its permissions")
    }
}
