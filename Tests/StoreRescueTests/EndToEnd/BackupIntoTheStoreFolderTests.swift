import Foundation
import Testing
@testable import StoreRescue

/// `backup --to` the store's own folder: refused as `upgrade --backup-dir` refuses it (exit 64),
/// the folders compared with their links resolved. README and BACKUP.md say backups go "never
/// next to the store" (an app's container must not get new files by surprise), but it exited 0
/// (review rv8 #11).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct BackupIntoTheStoreFolderTests {
    @Test func backupToTheStoresFolderIsRefusedAsUpgradeRefusesIt() throws {
        let temp = try TemporaryDirectory()
        let app = temp.path("app")
        try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: false)
        let store = app + "/s.sqlite"
        try BackupFixtures.makeStore(at: store, rows: 50)
        try FileManager.default.createSymbolicLink(atPath: temp.path("app-link"), withDestinationPath: app)
        let before = BackupFixtures.fileNames(in: app).sorted()
        let hint = "give a --to outside the store's folder (an app must not find new files beside its store)"
        // The folder itself, `.` from inside it, a link to it, and the store through a link to its folder.
        let cases: [(arguments: [String], folderNamed: String)] = [
            (["backup", store, "--to", app], app),
            (["backup", store, "--to", temp.path("app-link")], temp.path("app-link")),
            (["backup", temp.path("app-link/s.sqlite"), "--to", app + "/"], app),
        ]
        for (arguments, folder) in cases {
            let result = try CommandRunner.run(arguments + ["--json"])
            #expect(result.status == ExitStatus.usage.rawValue, "\(arguments): \(result.stdout) \(result.stderr)")
            let error = try #require(try result.json()["error"] as? [String: Any], "\(result.stdout)")
            #expect(error["message"] as? String == "the backup folder \(folder) is the store's own folder")
            #expect(error["hint"] as? String == hint)
            #expect(error["exitStatus"] as? Int == 64)
        }
        let dot = try CommandRunner.run(program: "/bin/sh", ["-c", "cd \"$1\" && exec \"$0\" backup s.sqlite --to .", CommandRunner.executable.path, app])
        #expect(dot.status == ExitStatus.usage.rawValue, "\(dot.stdout) \(dot.stderr)")
        #expect(dot.stderr == "Error: the backup folder \(app) is the store's own folder\nTry: \(hint)\n", "\(dot.stderr)")
        #expect(BackupFixtures.fileNames(in: app).sorted() == before, "nothing new beside the store")
        // upgrade's refusal reads the same, with its own option.
        let catalog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/Journal/catalog.json").path
        let upgrade = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--backup-dir", app, "--json"])
        let upgradeError = try #require(try upgrade.json()["error"] as? [String: Any], "\(upgrade.stdout)")
        #expect(upgrade.status == ExitStatus.usage.rawValue)
        #expect(upgradeError["message"] as? String == "the backup folder \(app) is the store's own folder")
        #expect(upgradeError["hint"] as? String == "give a --backup-dir outside the store's folder (an app must not find new files beside its store)")
        // A folder inside the store's folder (the default ./storerescue-backups run from there) is not the store's folder.
        let inside = try CommandRunner.run(program: "/bin/sh", ["-c", "cd \"$1\" && exec \"$0\" backup s.sqlite", CommandRunner.executable.path, app])
        #expect(inside.status == 0, "\(inside.stdout) \(inside.stderr)")
    }

    /// Two folders whose names are canonically equivalent but spelled with other bytes are two
    /// folders: a backup into the other one is not refused (review rv9: the paths were compared
    /// with Swift's `==`). The folders are compared by device and inode when both exist.
    @Test func aFolderNamedAsTheStoresFolderWithOtherBytesIsAnotherFolder() throws {
        let temp = try TemporaryDirectory()
        let composed = temp.path("Caf\u{E9}")
        let decomposed = temp.path("Cafe\u{301}")
        for folder in [composed, decomposed] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false) }
        let store = composed + "/s.sqlite"
        try BackupFixtures.makeStore(at: store, rows: 20)
        let result = try CommandRunner.run(["backup", store, "--to", decomposed, "--json"])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(BackupFixtures.fileNames(in: decomposed).contains { $0.hasSuffix(".gz") }, "\(BackupFixtures.fileNames(in: decomposed))")
        #expect(BackupFixtures.fileNames(in: composed) == ["s.sqlite"], "nothing beside the store: \(BackupFixtures.fileNames(in: composed))")
    }
}
