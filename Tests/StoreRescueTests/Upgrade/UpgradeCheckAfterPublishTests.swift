import Foundation
import Testing
@testable import StoreRescue

/// The store was replaced, then the check of what is at its path failed: the report says what is
/// in place (status `upgraded`, `published` set), where the original is (the backup) and what to
/// do, exit 70. It said `failed` — "the store is the original" — and "nothing was replaced" of a
/// store it had replaced (a review).
@Suite struct UpgradeCheckAfterPublishTests {
    /// `match` of the store in place finds V1, not V4: here the original's bytes, put back at
    /// the path between the rename and the check, as something outside the run could.
    @Test func aResultNotAtTheTargetAfterThePublishSaysTheStoreWasReplaced() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let original = fixture.directory.path("original.sqlite")
        try FileManager.default.copyItem(atPath: store, toPath: original)
        let report = StoreUpgrader.upgrade(
            store: store, catalog: try fixture.journalCatalog, options: fixture.options(), progress: nil, cancellation: nil,
            faultInjection: { stage in
                guard stage == .published else { return }
                try FileManager.default.removeItem(atPath: store)
                try FileManager.default.copyItem(atPath: original, toPath: store)
            })
        #expect(report.status == .upgraded, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.exitStatus == .internalError)
        let backup = try #require(report.backup?.path)
        let error = try #require(report.error)
        #expect(error.message == "\(store) was replaced by the store written as V4, but the check of it in place failed: match now says exact V1, not V4; the original is in the backup \(backup)", "\(error.message)")
        #expect(error.hint == "see what the store is now with storerescue match \(store) --catalog CATALOG; to put the original back (the app closed): storerescue restore \(backup) --to \(store) --force; please report a bug with the command line, the catalog and (if you can) the backup", "\(error.hint ?? "")")
        #expect(!error.message.contains("nothing was replaced"))
        let published = try #require(report.published)
        #expect(published.version == "V4" && published.matchOutcome == "exact", "what match found at the path: \(published)")
        let publish = try #require(report.phases.last)
        #expect(publish.name == "publish" && publish.status == "done", "the store was replaced: \(publish)")
        #expect(publish.detail == "\(store) replaced atomically; then the check of the result failed: match now says exact V1, not V4")
        // As a job reads it.
        let json = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(json["status"] as? String == "upgraded")
        #expect((json["error"] as? [String: Any])?["exitStatus"] as? Int == 70)
        // The text: the error, as Error:/Try:, with the backup named.
        let text = report.renderText()
        #expect(text.contains("Error: \(error.message)\n"), "\(text)")
        #expect(FileManager.default.fileExists(atPath: backup))
    }
}
