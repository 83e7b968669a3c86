import Foundation
import Testing
@testable import StoreRescue

/// `upgrade --to` a version after the catalog's current one (the Employees lineage's folder
/// names its first version current): `match` calls such a store `newer`, with the target's
/// hashes exactly, and the upgrade accepts it as `MigrationVerifier` does — one rule — after
/// the migration, after the publish and in the clean fallback. A review's run said it would
/// succeed (`--dry-run`, exit 0) and then ended in exit 70 with the new store written.
@Suite struct UpgradePastCurrentTests {
    /// The cats catalog whose current version is V1: V2 comes after it.
    private func catalog(_ fixture: UpgradeFixture, map: Bool) throws -> Catalog {
        try fixture.catsCatalog(
            named: map ? "cats-map-current-v1.json" : "cats-current-v1.json",
            stage: map ? #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}"# : #"{"kind": "lightweight", "from": "V1", "to": "V2"}"#,
            current: "V1")
    }

    private func options(_ fixture: UpgradeFixture, _ policy: UpgradeOptions.FailurePolicy = .keep, dryRun: Bool = false) -> UpgradeOptions {
        var options = fixture.options(policy, dryRun: dryRun)
        options.targetVersion = "V2"
        return options
    }

    @Test func anUpgradeToAVersionAfterTheCurrentOneIsPublished() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, map: true)
        #expect(catalog.latest?.name == "V1")
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: catalog)

        let predicted = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options(fixture, dryRun: true))
        #expect(predicted.status == .upgraded && predicted.exitStatus == .success, "\(predicted.status) \(predicted.error?.message ?? "")")

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options(fixture))
        #expect(report.status == .upgraded && report.exitStatus == .success, "\(report.status) \(report.error?.message ?? "")")
        let published = try #require(report.published)
        #expect(published.version == "V2" && published.matchOutcome == "newer")
        let publish = try #require(report.phases.first { $0.name == "publish" })
        #expect(publish.detail.hasSuffix("match: newer V2 (its hashes exactly; the catalog's current version is V1)"), "\(publish.detail)")
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .newer && match.version == "V2" && MigrationVerifier.isAtTarget(match, target: "V2"))
        #expect(try UpgradeFixture.count("ZCAT", in: store, where: "ZAGE = 0") == 3)
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 2)
        #expect(try fixture.strayNames(besides: store) == [])

        // Run again: already at V2, nothing written.
        let again = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options(fixture))
        #expect(again.status == .alreadyCurrent, "\(again.status) \(again.error?.message ?? "")")
    }

    /// The clean fallback's store, made at a target after the current version, passes its check.
    @Test func theCleanFallbackToAVersionAfterTheCurrentOneIsPublished() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, map: false)
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: catalog)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options(fixture, .clean))
        #expect(report.status == .fellBackToClean && report.exitStatus == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        let incident = try #require(report.fallback)
        #expect(incident.state == "complete" && incident.reasons.first?.coreDataErrorCode == 134110)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .newer && match.version == "V2")
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 2)
        #expect(try UpgradeFixture.count("ZCAT", in: store) == 0)
    }

    /// The one rule: `exact` TARGET, or `newer` TARGET with TARGET's hashes exactly. A store
    /// `newer` for what no version has, or of another version, is not the target.
    @Test func theRuleAcceptsOnlyTheTargetsHashes() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, map: true)
        let store = try fixture.catsStore(cats: 1, owners: 1, catalog: catalog)
        let v1 = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(v1.outcome == .exact && v1.version == "V1")
        #expect(MigrationVerifier.isAtTarget(v1, target: "V1"))
        #expect(!MigrationVerifier.isAtTarget(v1, target: "V2"), "another version")

        var newer = v1
        newer.outcome = .newer
        #expect(MigrationVerifier.isAtTarget(newer, target: "V1"), "after the current version, with its hashes")
        #expect(!MigrationVerifier.isAtTarget(newer, target: "V2"))
        newer.candidates = newer.candidates.map { var candidate = $0; candidate.hashesMatch = false; return candidate }
        #expect(!MigrationVerifier.isAtTarget(newer, target: "V1"), "newer by what no version has")
        for outcome in [MatchResult.Outcome.drifted, .unknown, .notCoreData] {
            var other = v1
            other.outcome = outcome
            #expect(!MigrationVerifier.isAtTarget(other, target: "V1"), "\(outcome)")
        }
        // Ambiguous among versions with the same hashes: the target when it is one of them
        // (review rv5 F5), whichever match names first.
        var ambiguous = v1
        ambiguous.outcome = .ambiguous
        #expect(MigrationVerifier.isAtTarget(ambiguous, target: "V1"))
        #expect(!MigrationVerifier.isAtTarget(ambiguous, target: "V2"), "a version whose hashes the store lacks")
    }

    /// The Employees lineage as shipped: its folder names the first version current.
    @Test(.enabled(if: Samples.available)) func theEmployeesStoreIsUpgradedToItsSecondVersionWithTo() throws {
        let fixture = try UpgradeFixture()
        let model = try fixture.directory.copySampleItem("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        let catalog = try Catalog.load(path: model)
        #expect(catalog.latest?.name == "MWKCoreDataTests")
        let copied = try fixture.directory.copySample("lineages/Employees/MWKCoreDataTests.sqlite")
        let store = fixture.appFolder + "/MWKCoreDataTests.sqlite"
        try FileManager.default.moveItem(atPath: copied, toPath: store)
        var options = fixture.options()
        options.targetVersion = "MWKCoreDataTests2"
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options)
        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.published?.matchOutcome == "newer" && report.published?.rowsByEntity["Employee"] == 3)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .newer && match.version == "MWKCoreDataTests2")
    }

    /// A store at a version after the current one whose metadata does not name it exactly (the
    /// Employees lineage's second store has no checksum) is adopted as that version, as it is
    /// when the catalog names that version current: a review's run said "Already exactly at
    /// MWKCoreDataTests2" (exit 2) over the stamp its own plan listed, and wrote nothing.
    @Test(.enabled(if: Samples.available)) func aStoreAtAVersionAfterTheCurrentOneIsAdoptedAsIt() throws {
        let fixture = try UpgradeFixture()
        let model = try fixture.directory.copySampleItem("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        let catalog = try Catalog.load(path: model)
        let copied = try fixture.directory.copySample("lineages/Employees/MWKCoreDataTests2.sqlite")
        let store = fixture.appFolder + "/MWKCoreDataTests2.sqlite"
        try FileManager.default.moveItem(atPath: copied, toPath: store)
        func checksum() throws -> String? { StoreInspector.read(store: try OpenedStore(path: store)).metadata?.versionChecksum }
        #expect(try checksum() == nil)
        var options = fixture.options()
        options.targetVersion = "MWKCoreDataTests2"
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options)
        #expect(report.status == .adoptedOnly && report.adoption?.isNeeded == true, "\(report.status) \(report.error?.message ?? "")")
        #expect(!report.notes.contains { $0.contains("its hashes are also") }, "\(report.notes)")
        #expect(report.published?.matchOutcome == "newer")
        #expect(try checksum() == catalog.version(named: "MWKCoreDataTests2")?.versionChecksum)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .newer && match.version == "MWKCoreDataTests2")
        let again = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options)
        #expect(again.status == .alreadyCurrent, "\(again.status) \(again.error?.message ?? "")")
    }
}
