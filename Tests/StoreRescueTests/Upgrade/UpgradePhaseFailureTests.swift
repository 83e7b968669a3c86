import Foundation
import Testing
@testable import StoreRescue

/// A phase that fails is listed as `failed`, with what failed as its detail: `phases[]` is how a
/// job tells where a run stopped (review rv8 #6: a failed publish left the phases at
/// `verify: done`, the failure only in `error`).
@Suite struct UpgradePhaseFailureTests {
    struct RefusedSwap: Error, CustomStringConvertible {
        var description: String { "the rename was refused" }
    }

    @Test func aPublishThatFailsIsAFailedPublishPhase() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let report = StoreUpgrader.upgrade(
            store: store, catalog: try fixture.journalCatalog, options: fixture.options(), progress: nil, cancellation: nil,
            faultInjection: { if $0 == .beforeSwap { throw RefusedSwap() } })
        #expect(report.status == .failed && report.exitStatus == .internalError, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.phases.map(\.name) == ["read", "backup", "adopt", "migrate", "verify", "publish"], "\(report.phases.map(\.name))")
        let publish = try #require(report.phases.last)
        #expect(publish.name == "publish" && publish.status == "failed", "\(publish)")
        #expect(publish.detail.contains("the rename was refused"), "\(publish.detail)")
        #expect(report.published == nil)
        // As a job reads it: the last of `phases`, failed, its detail the error's message.
        let json = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        let phases = try #require(json["phases"] as? [[String: Any]])
        #expect(phases.compactMap { $0["name"] as? String } == ["read", "backup", "adopt", "migrate", "verify", "publish"])
        let last = try #require(phases.last)
        let error = try #require(json["error"] as? [String: Any])
        #expect(last["status"] as? String == "failed" && last["detail"] as? String == error["message"] as? String, "\(last) \(error)")
    }
}
