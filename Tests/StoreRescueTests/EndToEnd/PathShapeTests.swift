import Foundation
import Testing
@testable import StoreRescue

/// Paths whose shape is wrong before anything is looked at (review rv10): a trailing `/` names a
/// folder, so `backup "j.sqlite/"` must not back up the file `j.sqlite` (it did, exit 0, while
/// `inspect "j.sqlite/"` said missing), nor `restore --to new.sqlite/` create `new.sqlite`; an
/// empty path is the command line's mistake (64), not "the store /cwd is a folder".
@Suite(.enabled(if: StoreRescueExecutable.hasBackupCommands, "storerescue does not register backup yet"))
struct PathShapeTests {
    @Test func aStoreWithATrailingSlashIsRefusedAs66() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("j.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 5)
        let run = try BackupCommandEndToEndTests.storerescue(["backup", store + "/", "--to", temp.path("BK")])
        #expect(run.status == 66, "\(run.standardOutput) \(run.standardError)")
        #expect(run.standardError == "Error: the store \(store)/ ends with \"/\", which names a folder; no backup was taken\n"
            + "Try: pass the store's main file without the trailing \"/\": \(store)\n", "\(run.standardError)")
        #expect(!FileManager.default.fileExists(atPath: temp.path("BK")), "nothing written")
    }

    @Test func aRestoreTargetWithATrailingSlashIsRefusedAs73() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 20)
        let target = temp.path("newt.sqlite")
        let run = try BackupCommandEndToEndTests.storerescue(["restore", backup.backupPath, "--to", target + "/"])
        #expect(run.status == 73, "\(run.standardOutput) \(run.standardError)")
        #expect(run.standardError == "Error: refusing to restore to \(target)/: it ends with \"/\", which names a folder\n"
            + "Try: name the store file without the trailing \"/\": \(target)\n", "\(run.standardError)")
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    @Test func anEmptyPathIsAUsageError() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 20)
        let store = try BackupCommandEndToEndTests.storerescue(["backup", "", "--to", temp.path("BK")])
        #expect(store.status == 64, "\(store.standardError)")
        #expect(store.standardError == "Error: the store's path is empty\nTry: give the path of the store's main file (e.g. default.store)\n", "\(store.standardError)")
        let target = try BackupCommandEndToEndTests.storerescue(["restore", backup.backupPath, "--to", "", "--json"])
        #expect(target.status == 64, "\(target.standardOutput)")
        let error = try #require(try BackupCommandEndToEndTests.json(target.standardOutput)["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("--to") == true, "\(error)")
    }
}
