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
