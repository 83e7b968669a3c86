import Foundation
import Testing
@testable import StoreRescue

/// `verify` and `restore` given a symbolic link to a backup (`latest.gz` → the newest one): the
/// backup is the link's target, with the manifest beside the target. They looked for the
/// manifest beside the link, so a good backup verified as bad (exit 1) and restore said "use
/// another backup" (66) (review rv8 #10).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct BackupThroughLinkTests {
    /// A store in `app/`, its backup in `backups/`, and `latest.gz` in the temporary folder
    /// pointing at it (relative, as `ln -s` usually makes it).
    struct Case {
        let temp: TemporaryDirectory
        let store: String
        let backup: String
        let manifest: String
        let link: String

        init() throws {
            temp = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: temp.path("app"), withIntermediateDirectories: false)
            store = temp.path("app/s.sqlite")
            try BackupFixtures.makeStore(at: store, rows: 200)
            let made = try CommandRunner.run(["backup", store, "--to", temp.path("backups"), "--json"])
            try #require(made.status == 0, "\(made.stdout) \(made.stderr)")
            let json = try made.json()
            backup = try #require(json["backup"] as? String)
            manifest = try #require(json["manifest"] as? String)
            link = temp.path("latest.gz")
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "backups/" + (backup as NSString).lastPathComponent)
        }
    }

    @Test func verifyReadsTheManifestBesideTheLinksTarget() throws {
        let fixture = try Case()
        let verified = try CommandRunner.run(["verify", fixture.link, "--json"])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        let json = try verified.json()
        #expect(json["good"] as? Bool == true && (json["problems"] as? [Any])?.isEmpty == true, "\(json)")
        // What was checked is named: the target and its manifest.
        #expect(json["backup"] as? String == fixture.backup)
        #expect(json["manifest"] as? String == fixture.manifest)
        let text = try CommandRunner.run(["verify", fixture.link])
        #expect(text.status == 0 && text.stdout == "OK: \(fixture.backup): gzip stream, SHA-256 sums and PRAGMA integrity_check all pass\n",
                "\(text.stdout) \(text.stderr)")
        // A link to the manifest, and a link to the backup folder, read the same backup.
        let manifestLink = fixture.temp.path("latest.manifest.json")
        try FileManager.default.createSymbolicLink(atPath: manifestLink, withDestinationPath: fixture.manifest)
        let viaManifest = try CommandRunner.run(["verify", manifestLink, "--json"])
        #expect(viaManifest.status == 0, "\(viaManifest.stdout) \(viaManifest.stderr)")
        #expect(try viaManifest.json()["backup"] as? String == fixture.backup)
        try FileManager.default.createSymbolicLink(atPath: fixture.temp.path("current"), withDestinationPath: fixture.temp.path("backups"))
        let viaFolder = try CommandRunner.run(["verify", fixture.temp.path("current/" + (fixture.backup as NSString).lastPathComponent)])
        #expect(viaFolder.status == 0, "\(viaFolder.stdout) \(viaFolder.stderr)")
    }

    @Test func restoreReadsTheManifestBesideTheLinksTarget() throws {
        let fixture = try Case()
        let target = fixture.temp.path("r.sqlite")
        let restored = try CommandRunner.run(["restore", fixture.link, "--to", target, "--json"])
        #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
        let json = try restored.json()
        #expect(json["backup"] as? String == fixture.backup)
        let manifest = try BackupManifest.read(from: fixture.manifest)
        #expect(try FileDigest.of(path: target).sha256 == manifest.snapshotSHA256)
        // --force: the replaced store is backed up beside the backup restored (the link's target), not beside the link.
        let forced = try CommandRunner.run(["restore", fixture.link, "--to", fixture.store, "--force", "--json"])
        #expect(forced.status == 0, "\(forced.stdout) \(forced.stderr)")
        let replaced = try #require(try forced.json()["replacedStoreBackup"] as? String)
        #expect(SafeFileOutput.folder(of: replaced) == fixture.temp.path("backups"))
    }

    @Test func aDanglingLinkIsAMissingBackup() throws {
        let fixture = try Case()
        let dangling = fixture.temp.path("gone.gz")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: fixture.temp.path("nothing.gz"))
        for command in ["verify", "restore"] {
            let arguments = command == "verify" ? [command, dangling, "--json"] : [command, dangling, "--to", fixture.temp.path("x.sqlite"), "--json"]
            let result = try CommandRunner.run(arguments)
            #expect(result.status == ExitStatus.noInput.rawValue, "\(result.stdout) \(result.stderr)")
            let error = try #require(try result.json()["error"] as? [String: Any])
            #expect(error["message"] as? String == "the backup \(dangling) does not exist")
        }
    }
}
