import Foundation
import Testing

/// A publish that fails is the last phase of `upgrade --json`, `failed`, its detail the error
/// (review rv8 #6: the phases ended at `verify: done`). A store named 248 bytes long has no room
/// for its `-journal` (255 bytes), so SQLite cannot settle it for the replacement.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct UpgradePublishFailureTests {
    @Test func aFailedPublishIsListedAsAFailedPhase() throws {
        let fixture = try UpgradeFixture()
        let store = fixture.appFolder + "/" + String(repeating: "e", count: 248)
        try FileManager.default.copyItem(atPath: UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        let before = try fixture.appFiles()
        let catalog = UpgradeFixture.journal.appendingPathComponent("catalog.json").path
        let result = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--backup-dir", fixture.backups, "--json"])
        let json = try result.json()
        #expect(json["status"] as? String == "failed", "\(result.stdout)")
        let phases = try #require(json["phases"] as? [[String: Any]])
        #expect(phases.compactMap { $0["name"] as? String } == ["read", "backup", "adopt", "migrate", "verify", "publish"],
                "\(phases.map { "\($0["name"] ?? ""): \($0["status"] ?? "")" })")
        let publish = try #require(phases.last)
        #expect(publish["name"] as? String == "publish" && publish["status"] as? String == "failed")
        let error = try #require(json["error"] as? [String: Any])
        #expect(publish["detail"] as? String == error["message"] as? String, "\(publish["detail"] ?? "")")
        #expect(result.status == Int32(error["exitStatus"] as? Int ?? -1))
        #expect(try fixture.appFiles() == before, "the store is the original")
    }
}
