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
    }

    @Test func aStoreWrittenAfterItsBackupFailsThePublishPhase() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let report = StoreUpgrader.upgrade(
            store: store, catalog: try fixture.journalCatalog, options: fixture.options(), progress: nil, cancellation: nil,
            faultInjection: { stage in
                guard stage == .backedUp else { return }
                let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
                try connection.execute("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (4, 2, 1, 'late')")
            })
        #expect(report.exitStatus.rawValue == 75, "\(report.error?.message ?? "")")
        let publish = try #require(report.phases.last)
        #expect(publish.name == "publish" && publish.status == "failed", "\(report.phases.map { "\($0.name): \($0.status)" })")
        #expect(publish.detail == report.error?.message, "the detail says what failed, as the error does")
    }
}
