import Foundation
import Testing
@testable import StoreRescue

/// Backup, verify and restore write every documented key, `null` when absent, and a manifest
/// without the optional keys (written before they were always present) still reads.
@Suite struct BackupJSONNullsTests {
    @Test func manifestOfAPlainDatabaseHasNullIdentityAndOldManifestsStillRead() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("plain.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: "CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        let result = try BackupRunner.run(store: store, options: .testing(temp.path("b")))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: result.manifestPath))) as? [String: Any])
        #expect(object["storeUUID"] is NSNull)
        #expect(object["frameworkVersion"] is NSNull)
        #expect(try BackupManifest.read(from: result.manifestPath) == result.manifest)

        var legacy = object
        legacy.removeValue(forKey: "storeUUID")
        legacy.removeValue(forKey: "frameworkVersion")
        let legacyPath = temp.path("legacy.manifest.json")
        try JSONSerialization.data(withJSONObject: legacy).write(to: URL(fileURLWithPath: legacyPath))
        let read = try BackupManifest.read(from: legacyPath)
        #expect(read.storeUUID == nil && read.frameworkVersion == nil)
        #expect(read.snapshotSHA256 == result.manifest.snapshotSHA256)
    }

    @Test(.enabled(if: CommandRunner.isAvailable)) func restoreJSONWritesNullsForWhatDidNotHappen() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("plain.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: "CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        let backup = try BackupRunner.run(store: store, options: .testing(temp.path("b")))
        let restored = try CommandRunner.run(["restore", backup.backupPath, "--to", temp.path("restored.sqlite"), "--json"])
        #expect(restored.status == 0, "\(restored.stderr)")
        let json = try restored.json()
        #expect(json["replacedStoreBackup"] is NSNull)
        #expect(json["replacedStoreRawCopy"] is NSNull)
        let verified = try CommandRunner.run(["verify", backup.backupPath, "--json"])
        #expect(verified.status == 0)
        #expect(try verified.json()["integrityCheck"] != nil)
    }
}
