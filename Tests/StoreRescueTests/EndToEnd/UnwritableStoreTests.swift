import Foundation
import Testing
@testable import StoreRescue

/// A store the user may not write — a 0444 file, one in a read-only folder — is refused before
/// anything is written: exit 73, the permission named, nothing beside the store, no backup, and
/// never the advice for a damaged store. A review's `upgrade` of a 0444 store backed it up,
/// migrated it, then failed to settle it: SQLite had opened it read only and left a `-wal` and
/// `-shm` beside it; exit 65, "cannot be checkpointed … a damaged store is saved with
/// --on-failure clean".
///
/// Root writes any file, so the commands run as `nobody` (setpriv) when the tests run as root,
/// and as the user itself otherwise: the refusal is the kernel's answer for the user who runs
/// the command.
@Suite struct UnwritableStoreTests {
    static let canRunUnprivileged = geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// A folder `nobody` (or this user) owns: `app/` with the Journal sample (V1, WAL), the
    /// catalog, and an empty `backups/`.
    struct Fixture {
        let directory: TemporaryDirectory
        let app: String
        let store: String
        let catalog: String
        let backups: String

        init() throws {
            directory = try TemporaryDirectory()
            app = directory.path("app")
            backups = directory.path("backups")
            store = app + "/Journal.sqlite"
            // The catalog with the model folder it names, readable by the user who runs the tool.
            let models = directory.path("Journal")
            catalog = models + "/catalog.json"
            try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: backups, withIntermediateDirectories: false)
            try FileManager.default.copyItem(atPath: UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
            try FileManager.default.copyItem(atPath: UpgradeFixture.journal.path, toPath: models)
            chmod(directory.url.path, 0o755)
            if geteuid() == 0 {
                let inside = FileManager.default.enumerator(atPath: directory.url.path)?.compactMap { $0 as? String } ?? []
                for path in [directory.url.path] + inside.map(directory.path) { chown(path, 65534, 65534) }
            }
        }

        /// Runs the built tool as `nobody` (as root) or as this user.
        func run(_ arguments: [String]) throws -> CommandRunner.Result {
            guard geteuid() == 0 else { return try CommandRunner.run(arguments) }
            return try CommandRunner.run(
                program: "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", CommandRunner.executable.path] + arguments)
        }

        func names(in folder: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
        }
    }

    @Test(.enabled(if: canRunUnprivileged, "needs setpriv to run as nobody when run as root"),
          arguments: [["--on-failure", "keep"], ["--on-failure", "clean"]])
    func aStoreTheUserMayNotWriteIsRefusedBeforeAnything(onFailure: [String]) throws {
        let fixture = try Fixture()
        chmod(fixture.store, 0o444)
        let before = try FileDigest.of(path: fixture.store)
        let result = try fixture.run(["upgrade", fixture.store, "--catalog", fixture.catalog, "--backup-dir", fixture.backups, "--json"] + onFailure)
        #expect(result.status == ExitStatus.cannotCreateOutput.rawValue, "\(result.stdout) \(result.stderr)")
        let report = try result.json()
        #expect(report["status"] as? String == "failed")
        let error = try #require(report["error"] as? [String: Any])
        let message = try #require(error["message"] as? String)
        let hint = try #require(error["hint"] as? String)
        #expect(message.hasPrefix("\(fixture.store) cannot be replaced in place: it is not writable by you (mode 0444, owner uid "), "\(message)")
        #expect(message.hasSuffix("Permission denied); nothing was changed"), "\(message)")
        #expect(hint.hasPrefix("run the command as a user who may write the store"), "\(hint)")
        #expect(hint.hasSuffix("the store is not damaged"))
        #expect(!message.contains("--on-failure") && !hint.contains("--on-failure"), "a permission problem is no damage")
        #expect((report["refusals"] as? [Any])?.isEmpty == true)
        #expect(report["fallback"] is NSNull)
        // Nothing written: nothing beside the store, no backup, no quarantine; the store as it was.
        #expect(fixture.names(in: fixture.app) == ["Journal.sqlite"])
        #expect(fixture.names(in: fixture.backups) == [])
        #expect(try FileDigest.of(path: fixture.store) == before)
        // Text: the same, as Error:/Try:.
        let text = try fixture.run(["upgrade", fixture.store, "--catalog", fixture.catalog, "--backup-dir", fixture.backups] + onFailure)
        #expect(text.status == ExitStatus.cannotCreateOutput.rawValue)
        #expect(text.stderr.contains("Error: \(message)\nTry: \(hint)"), "\(text.stderr)")
        #expect(fixture.names(in: fixture.app) == ["Journal.sqlite"])
        // Writable again, the same command upgrades it.
        chmod(fixture.store, 0o644)
        let upgraded = try fixture.run(["upgrade", fixture.store, "--catalog", fixture.catalog, "--backup-dir", fixture.backups] + onFailure)
        #expect(upgraded.status == 0, "\(upgraded.stdout) \(upgraded.stderr)")
    }

    @Test(.enabled(if: canRunUnprivileged, "needs setpriv to run as nobody when run as root"))
    func aStoreInAReadOnlyFolderIsRefusedBeforeAnything() throws {
        let fixture = try Fixture()
        chmod(fixture.app, 0o555)
        defer { chmod(fixture.app, 0o755) }
        let before = try FileDigest.of(path: fixture.store)
        let result = try fixture.run(["upgrade", fixture.store, "--catalog", fixture.catalog, "--backup-dir", fixture.backups, "--on-failure", "clean", "--json"])
        #expect(result.status == ExitStatus.cannotCreateOutput.rawValue, "\(result.stdout) \(result.stderr)")
        let error = try #require(try result.json()["error"] as? [String: Any])
        let message = try #require(error["message"] as? String)
        #expect(message.hasPrefix("\(fixture.store) cannot be replaced in place: its folder \(fixture.app) is not writable by you (mode 0555, owner uid "), "\(message)")
        #expect(message.hasSuffix("Permission denied): the new store is written there and renamed over it; nothing was changed"), "\(message)")
        #expect(!(error["hint"] as? String ?? "").contains("--on-failure"))
        #expect(fixture.names(in: fixture.app) == ["Journal.sqlite"])
        #expect(fixture.names(in: fixture.backups) == [])
        #expect(try FileDigest.of(path: fixture.store) == before)
    }

    /// A dry run writes nothing and is not refused, but says what the run would meet.
    @Test(.enabled(if: canRunUnprivileged, "needs setpriv to run as nobody when run as root"))
    func aDryRunSaysTheRunWouldBeRefused() throws {
        let fixture = try Fixture()
        chmod(fixture.store, 0o444)
        let result = try fixture.run(["upgrade", fixture.store, "--catalog", fixture.catalog, "--backup-dir", fixture.backups, "--dry-run", "--json"])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let notes = try #require(try result.json()["notes"] as? [String])
        #expect(notes.contains { $0.hasPrefix("the run itself would be refused (exit 73): \(fixture.store) cannot be replaced in place: it is not writable by you") }, "\(notes)")
        #expect(fixture.names(in: fixture.app) == ["Journal.sqlite"])
    }

    /// `restore --force` over a store the user may not write: refused before its pre-restore
    /// backup is taken, exit 73, nothing beside it.
    @Test(.enabled(if: canRunUnprivileged, "needs setpriv to run as nobody when run as root"))
    func restoreOverAStoreTheUserMayNotWriteIsRefused() throws {
        let fixture = try Fixture()
        let backup = try BackupRunner.run(store: fixture.store, options: BackupOptions(destinationDirectory: fixture.backups))
        if geteuid() == 0 { for path in [backup.backupPath, backup.manifestPath] { chown(path, 65534, 65534) } }
        chmod(fixture.store, 0o444)
        let before = try FileDigest.of(path: fixture.store)
        let safety = fixture.directory.path("safety")
        let result = try fixture.run(["restore", backup.backupPath, "--to", fixture.store, "--force", "--backups-dir", safety, "--json"])
        #expect(result.status == ExitStatus.cannotCreateOutput.rawValue, "\(result.stdout) \(result.stderr)")
        let error = try #require(try result.json()["error"] as? [String: Any])
        #expect((error["message"] as? String)?.hasPrefix("\(fixture.store) cannot be replaced in place: it is not writable by you (mode 0444") == true, "\(error)")
        #expect(fixture.names(in: fixture.app) == ["Journal.sqlite"])
        #expect(!FileManager.default.fileExists(atPath: safety), "no pre-restore backup of a store that cannot be replaced")
        #expect(try FileDigest.of(path: fixture.store) == before)
    }
}
