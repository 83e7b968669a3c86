import Foundation
import Testing
@testable import StoreRescue

/// `restore --force` backs up the store it replaces first — never beside the store (README,
/// BACKUP.md), as `backup --to` and `upgrade --backup-dir` never write there. A review's restore
/// of a backup lying in the store's folder (the default folder for the replaced store's backup
/// is the backup's) wrote `s.sqlite.<UTC>.gz` and its manifest beside the store, exit 0; so did
/// `--backups-dir` naming that folder. Both are refused before anything is written (exit 64).
@Suite struct RestoreIntoTheStoreFolderTests {
    /// `app/s.sqlite` (5 rows) and a backup of another store (50 rows) copied into `app/`, as an
    /// operator may copy the backup to restore beside the store.
    struct Fixture {
        let temp: TemporaryDirectory
        let app: String
        let store: String
        let backup: String

        init() throws {
            temp = try TemporaryDirectory()
            app = temp.path("app")
            try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: false)
            store = app + "/s.sqlite"
            try BackupFixtures.makeStore(at: store, rows: 5, uuid: "LIVE")
            let source = temp.path("other.sqlite")
            try BackupFixtures.makeStore(at: source, rows: 50)
            let made = try BackupRunner.run(store: source, options: BackupOptions(destinationDirectory: temp.path("b")))
            backup = app + "/" + (made.backupPath as NSString).lastPathComponent
            try FileManager.default.moveItem(atPath: made.backupPath, toPath: backup)
            try FileManager.default.moveItem(atPath: made.manifestPath, toPath: app + "/" + (made.manifestPath as NSString).lastPathComponent)
        }
    }

    @Test(arguments: [nil, "app", "app/."] as [String?])
    func theReplacedStoresBackupNeverGoesBesideIt(backupsDir: String?) throws {
        let fixture = try Fixture()
        let before = BackupFixtures.fileNames(in: fixture.app)
        let digest = try FileDigest.of(path: fixture.store)
        let options = RestoreOptions(targetPath: fixture.store, force: true, replacedStoreBackupDirectory: backupsDir.map(fixture.temp.path))
        let error = #expect(throws: BackupError.self) {
            try BackupRestorer.restore(backup: fixture.backup, options: options)
        }
        let said = backupsDir == nil
            ? " (the folder of the backup restored: the default without --backups-dir)"
            : " (--backups-dir)"
        #expect(error?.description == "\(fixture.store) would be backed up, before it is replaced, into \(fixture.app)\(said), which is the store's own folder; nothing was changed")
        #expect(error?.recoverySuggestion == "give a --backups-dir outside the store's folder (an app must not find new files beside its store)")
        #expect(error?.exitStatus == .usage)
        #expect(BackupFixtures.fileNames(in: fixture.app) == before, "nothing written beside the store")
        #expect(try FileDigest.of(path: fixture.store) == digest)
    }

    /// The command: exit 64, the refusal and what to try; following it restores, the replaced
    /// store backed up where `--backups-dir` says.
    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func theCommandRefusesAndSaysWhatToTry() throws {
        let fixture = try Fixture()
        let before = BackupFixtures.fileNames(in: fixture.app)
        let refused = try CommandRunner.run(["restore", fixture.backup, "--to", fixture.store, "--force"])
        #expect(refused.status == ExitStatus.usage.rawValue, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr == "Error: \(fixture.store) would be backed up, before it is replaced, into \(fixture.app) (the folder of the backup restored: the default without --backups-dir), which is the store's own folder; nothing was changed\n"
            + "Try: give a --backups-dir outside the store's folder (an app must not find new files beside its store)\n", "\(refused.stderr)")
        #expect(BackupFixtures.fileNames(in: fixture.app) == before)
        let safety = fixture.temp.path("safety")
        let followed = try CommandRunner.run(["restore", fixture.backup, "--to", fixture.store, "--force", "--backups-dir", safety, "--json"])
        #expect(followed.status == 0, "\(followed.stdout) \(followed.stderr)")
        let replaced = try #require(try followed.json()["replacedStoreBackup"] as? String)
        #expect(replaced.hasPrefix(safety + "/s.sqlite."), "\(replaced)")
        #expect(BackupFixtures.fileNames(in: fixture.app) == before, "the store restored in place, nothing added beside it")
    }
}
