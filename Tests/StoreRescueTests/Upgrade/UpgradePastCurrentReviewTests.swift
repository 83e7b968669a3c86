import Foundation
import Testing
@testable import StoreRescue

/// Review rv5, F1: a store newer than every catalog version (an entity no version has), whose
/// nearest version is the one `--from` / `adopt --as` names, is refused (exit 3, `storeNewer`)
/// and left as it is: never restamped as that version (its metadata would lose the newer
/// entity's hash) nor called "already at" it. 158c866 restamped it (exit 4): `decide` compared
/// match's nearest version with the source by name, whatever the hashes.
@Suite struct NewerStoreNamedVersionTests {
    private func newerStore(_ fixture: UpgradeFixture) throws -> (store: String, catalog: Catalog) {
        // The catalog: cats V1 → V2, V2 current (nothing past current involved).
        let catalog = try fixture.catsCatalog(named: "cats-rv5.json", stage: #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}"#)
        let plusPath = fixture.directory.path("cats-plus.json")
        let plus = """
            {"formatVersion": 1, "app": "Cats", "versions": [
              {"name": "V2plus", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16"}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}, {"name": "email", "type": "String", "optional": true}]},
                {"name": "Toy", "attributes": [{"name": "name", "type": "String"}]}]}]}
            """
        #expect(FileManager.default.createFile(atPath: plusPath, contents: Data(plus.utf8)))
        let plusCatalog = try Catalog.load(path: plusPath)
        let store = fixture.appFolder + "/Cats.sqlite"
        try StoreCreator.create(model: try #require(plusCatalog.version(named: "V2plus")).model, versionIdentifiers: nil, at: store)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .newer && match.version == "V2" && !match.candidates.contains(where: \.hashesMatch))
        return (store, catalog)
    }

    private func expectRefusedAsNewer(_ report: UpgradeReport, option: String) {
        #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
        let refusal = report.refusals.first
        #expect(refusal?.code == .storeNewer, "\(report.refusals.map(\.message))")
        #expect(refusal?.message.contains("newer than every version the catalog knows (nearest: V2)") == true, "\(refusal?.message ?? "")")
        #expect(refusal?.message.contains("\(option) V2") == true, "\(refusal?.message ?? "")")
        #expect(refusal?.remedy.contains("never") == true, "\(refusal?.remedy ?? "")")
    }

    @Test func upgradeFromTheNearestVersionRefusesANewerStore() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try newerStore(fixture)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        for dryRun in [true, false] {
            var options = fixture.options(dryRun: dryRun)
            options.sourceVersion = "V2"
            expectRefusedAsNewer(StoreUpgrader.upgrade(store: store, catalog: catalog, options: options), option: "--from")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
        }
        // Not even --on-failure clean replaces it: the catalog is behind the store.
        var clean = fixture.options(.clean)
        clean.sourceVersion = "V2"
        expectRefusedAsNewer(StoreUpgrader.upgrade(store: store, catalog: catalog, options: clean), option: "--from")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    @Test func adoptAsTheNearestVersionRefusesANewerStore() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try newerStore(fixture)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        for dryRun in [true, false] {
            let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(dryRun: dryRun, mode: .adopt(as: "V2")))
            expectRefusedAsNewer(report, option: "--as")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
        }
        // --as the older version: refused the same way.
        let older = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(mode: .adopt(as: "V1")))
        #expect(older.status == .refused && older.refusals.first?.code == .storeNewer, "\(older.status) \(older.error?.message ?? "")")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    /// `migrate --from` reads the store through the version named: a newer store's entity
    /// would be dropped. Refused too.
    @Test func migrateFromTheNearestVersionRefusesANewerStore() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try newerStore(fixture)
        let output = fixture.directory.path("out.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: output, options: MigrationOptions(sourceVersion: "V1"))
        #expect(report.exitStatus == .refused && report.refusals.first?.code == .storeNewer, "\(report.status) \(report.refusals.map(\.message))")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// A store exactly at a version after the catalog's current one is not stamped as an
    /// earlier version by `adopt --as` (its hashes contradict it): exit 3.
    @Test func adoptAsAnEarlierVersionOfAStoreAfterTheCurrentOneIsRefused() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(
            named: "cats-rv5-v1.json", stage: #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}"#, current: "V1")
        let store = fixture.appFolder + "/Cats.sqlite"
        try StoreCreator.create(model: try #require(catalog.version(named: "V2")).model, versionIdentifiers: nil, at: store)
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).outcome == .newer)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(mode: .adopt(as: "V1")))
        #expect(report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.error?.message.contains("V2") == true, "\(report.error?.message ?? "")")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }
}
/// Review rv5, F2: `upgrade` without `--to`, on a catalog whose stages end past its current
/// version (the plan's default target), succeeded once (exit 0, match newer V2) and refused the
/// same command's second run as "newer than V1" (exit 3): MigrationEngine.prepare's newer
/// branches defaulted the target to `catalog.latest`, the planner to the last version the
/// stages name. One rule now: `StagePlanner.defaultTarget`.
@Suite struct DefaultTargetPastCurrentTests {
    @Test func aSecondRunWithoutToIsAlreadyAtTheTarget() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(
            named: "cats-rv5-v1.json", stage: #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}"#, current: "V1")
        #expect(StagePlanner.defaultTarget(catalog) == "V2")
        let store = try fixture.catsStore(cats: 2, owners: 1, catalog: catalog)
        let first = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
        #expect(first.status == .upgraded && first.target?.version == "V2", "\(first.status) \(first.error?.message ?? "")")
        #expect(first.published?.matchOutcome == "newer")
        for dryRun in [true, false] {
            let again = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(dryRun: dryRun))
            #expect(again.status == .alreadyCurrent && again.exitStatus == .nothingToDo, "second run: \(again.status) \(again.refusals.map(\.message))")
            #expect(again.target?.version == "V2")
        }
        // migrate says the same.
        let output = fixture.directory.path("out.sqlite")
        let migrate = StoreMigrator.migrate(store: store, catalog: catalog, to: output, options: MigrationOptions())
        #expect(migrate.exitStatus == .nothingToDo, "\(migrate.status) \(migrate.refusals.map(\.message))")
    }
}

/// Review rv5, F5: a catalog with two versions whose entity hashes are identical (V2b is V2
/// but for its identifiers). Core Data cannot tell them apart and treats them as one model, and
/// `match` says `ambiguous`. The dry run said `upgrade --to V2` would succeed (exit 0), the run
/// wrote V2 and ended in exit 70 ("match says ambiguous V2, not exact V2"). Now the one rule
/// (`MigrationVerifier.isAtTarget`) accepts `ambiguous` when the target is among the versions
/// whose hashes the store has exactly, and a store read as ambiguous among versions that include
/// the target is taken as the target: the dry run, the run and the next run agree.
@Suite struct IdenticalHashesTargetTests {
    private func catalog(_ fixture: UpgradeFixture, current: String = "V1") throws -> Catalog {
        let path = fixture.directory.path("cats-amb-\(current).json")
        let v2 = #"""
            "entities": [
              {"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16"}]},
              {"name": "Owner", "attributes": [{"name": "name", "type": "String"}, {"name": "email", "type": "String", "optional": true}]}]
            """#
        let json = """
            {"formatVersion": 1, "app": "Cats", "current": "\(current)", "versions": [
              {"name": "V1", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]},
              {"name": "V2", \(v2), "identifiers": ["2"]},
              {"name": "V2b", \(v2), "identifiers": ["2b"]}],
             "stages": [{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}]}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        return try Catalog.load(path: path)
    }

    private func toV2(_ fixture: UpgradeFixture, dryRun: Bool = false) -> UpgradeOptions {
        var options = fixture.options(dryRun: dryRun)
        options.targetVersion = "V2"
        return options
    }

    @Test func upgradeToAVersionSharingItsHashesAgreesWithItsDryRun() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture)
        let store = try fixture.catsStore(cats: 3, owners: 1, catalog: catalog)

        let predicted = StoreUpgrader.upgrade(store: store, catalog: catalog, options: toV2(fixture, dryRun: true))
        #expect(predicted.exitStatus == .success, "\(predicted.status) \(predicted.error?.message ?? "")")
        let predictedVerify = try #require(predicted.phases.first { $0.name == "verify" })
        #expect(predictedVerify.detail.contains("V2b"), "the prediction names the version sharing V2's hashes: \(predictedVerify.detail)")

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: toV2(fixture))
        #expect(report.status == .upgraded && report.exitStatus == .success, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.published?.version == "V2" && report.published?.matchOutcome == "ambiguous")
        let publish = try #require(report.phases.first { $0.name == "publish" })
        #expect(publish.detail.contains("ambiguous V2") && publish.detail.contains("V2b"), "\(publish.detail)")
        #expect(try UpgradeFixture.count("ZCAT", in: store, where: "ZAGE = 0") == 3)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .ambiguous && MigrationVerifier.isAtTarget(match, target: "V2") && MigrationVerifier.isAtTarget(match, target: "V2b"))
        #expect(!MigrationVerifier.isAtTarget(match, target: "V1"))

        // The next run, and its dry run: already at V2.
        for dryRun in [true, false] {
            let again = StoreUpgrader.upgrade(store: store, catalog: catalog, options: toV2(fixture, dryRun: dryRun))
            #expect(again.status == .alreadyCurrent && again.exitStatus == .nothingToDo, "\(again.status) \(again.refusals.map(\.message)) \(again.error?.message ?? "")")
            #expect(again.notes.contains { $0.contains("V2, V2b") }, "\(again.notes)")
        }
    }

    @Test func migrateToAVersionSharingItsHashesAgreesWithItsDryRun() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture)
        let store = try fixture.catsStore(cats: 2, owners: 1, catalog: catalog)
        let output = fixture.directory.path("out.sqlite")
        let dry = StoreMigrator.migrate(store: store, catalog: catalog, to: output, options: MigrationOptions(targetVersion: "V2", isDryRun: true))
        #expect(dry.exitStatus == .success, "\(dry.status) \(dry.error?.message ?? "")")
        let run = StoreMigrator.migrate(store: store, catalog: catalog, to: output, options: MigrationOptions(targetVersion: "V2"))
        #expect(run.exitStatus == .success && run.status == .migrated, "\(run.status) \(run.error?.message ?? "")")
        #expect(run.result?.verification.matchOutcome == "ambiguous")
        let again = StoreMigrator.migrate(store: output, catalog: catalog, to: fixture.directory.path("out2.sqlite"), options: MigrationOptions(targetVersion: "V2"))
        #expect(again.exitStatus == .nothingToDo, "\(again.status) \(again.refusals.map(\.message))")
    }

    /// An ambiguous store whose tied versions do not include the target is still refused.
    /// Here both come after the target (`--to V1`): refused as a store the run would take
    /// backwards, as one of them alone is (review rv7: it was `versionsShareHashes`, advising
    /// `--from V2`, which then met this refusal).
    @Test func anAmbiguousStoreBeforeTheTargetIsStillRefused() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, current: "V2b")
        let store = fixture.appFolder + "/Cats.sqlite"
        try StoreCreator.create(model: try #require(catalog.version(named: "V2")).model, versionIdentifiers: nil, at: store)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .ambiguous)
        var toV1 = fixture.options()
        toV1.targetVersion = "V1"
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: toV1)
        #expect(report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
        // Never the clean fallback's (review rv6 R3: `storeNotIdentified` advised `--on-failure
        // clean`, which replaced the healthy store): both tied versions come after V1.
        #expect(report.refusals.map(\.code) == [.storeNewer], "\(report.refusals.map(\.message))")
        #expect(report.refusals.allSatisfy { $0.isCatalogsFault && $0.remedy.contains("never downgrade") && !$0.remedy.contains("--on-failure") }, "\(report.refusals.map(\.remedy))")
    }

    /// `adopt` without `--as` stamps the version a store is: with a tie, `--as` must name it.
    @Test func adoptWithoutAsStillRefusesAnAmbiguousStore() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, current: "V2b")
        let store = fixture.appFolder + "/Cats.sqlite"
        try StoreCreator.create(model: try #require(catalog.version(named: "V2")).model, versionIdentifiers: nil, at: store)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(report.exitStatus == .refused && report.refusals.contains { $0.remedy.contains("--as VERSION") }, "\(report.status) \(report.refusals.map(\.remedy))")
    }
}

/// Review rv5, F6: what `adopt` says of a store exactly at a version after the catalog's
/// current one names only what `adopt` has, or another command in full (it has no `--to`),
/// and its note names `--as`, not `--from`.
@Suite struct AdoptPastCurrentAdviceTests {
    private func employeesV2(_ fixture: UpgradeFixture) throws -> (store: String, catalog: Catalog) {
        let model = try fixture.directory.copySampleItem("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        let catalog = try Catalog.load(path: model)
        let copied = try fixture.directory.copySample("lineages/Employees/MWKCoreDataTests2.sqlite")
        let store = fixture.appFolder + "/MWKCoreDataTests2.sqlite"
        try FileManager.default.moveItem(atPath: copied, toPath: store)
        return (store, catalog)
    }

    @Test(.enabled(if: Samples.available)) func adoptWithoutAsNamesAsAndUpgradeTo() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try employeesV2(fixture)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(report.exitStatus == .refused && report.refusals.first?.code == .storeNewer, "\(report.status) \(report.error?.message ?? "")")
        let remedy = report.refusals.first?.remedy ?? ""
        #expect(!remedy.contains("(--to)") && !remedy.contains("--from"), "adopt has no --to: \(remedy)")
        #expect(remedy.contains("--as MWKCoreDataTests2") && remedy.contains("storerescue upgrade STORE --catalog CATALOG --to MWKCoreDataTests2"), "\(remedy)")
        #expect(!report.renderText().contains("(--to)"), "\(report.renderText())")

        // upgrade keeps its own advice: --to is its option.
        let upgrade = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
        #expect(upgrade.refusals.first?.remedy.contains("(--to)") == true, "\(upgrade.refusals.map(\.remedy))")
    }

    @Test(.enabled(if: Samples.available)) func adoptAsNotesAs() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try employeesV2(fixture)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(dryRun: true, mode: .adopt(as: "MWKCoreDataTests2")))
        #expect(report.exitStatus == .adoptedOnly, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.notes.contains { $0.hasPrefix("the store's version is taken from --as (MWKCoreDataTests2)") }, "\(report.notes)")
        #expect(!report.notes.contains { $0.contains("--from") }, "\(report.notes)")
    }
}
