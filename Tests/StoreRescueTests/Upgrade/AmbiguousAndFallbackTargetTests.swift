import Foundation
import Testing
@testable import StoreRescue

/// Review rv6: F5's acceptance of an `ambiguous` store as the target skips a custom stage
/// between two versions with the same hashes (V1 → V2, both claimed by the stages: the planner
/// itself refuses the catalog for duplicate checksums when `--from V1` is given). Without
/// `--from`, upgrade and migrate call the V1 store "already at V2" (exit 2) and the stage's
/// `map` never runs. Before c5fde90: refused (storeNotIdentified, exit 3).
@Suite struct AmbiguousStoreWithAStageBetweenTests {
    private func catalog(_ fixture: UpgradeFixture) throws -> Catalog { try fixture.catsSameHashesCatalog() }

    @Test func upgradeDoesNotCallAV1StoreAlreadyAtV2() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture)
        let store = try fixture.catsStore(cats: 2, owners: 1, catalog: catalog)
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).outcome == .ambiguous)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        for dryRun in [true, false] {
            let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(dryRun: dryRun))
            #expect(report.status == .refused, "a V1 store whose custom stage V1 → V2 never ran was called \(report.status)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
        }
    }

    @Test func migrateDoesNotCallAV1StoreAlreadyAtV2() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture)
        let store = try fixture.catsStore(cats: 2, owners: 1, catalog: catalog)
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: fixture.directory.path("out.sqlite"), options: MigrationOptions())
        #expect(report.exitStatus == .refused, "\(report.status) \(report.exitStatus)")
    }
}

/// Review rv6: F2 made the clean fallback's target (when no plan was made: an unreadable store)
/// `StagePlanner.defaultTarget` — the end of the stages — also when the stages end BEFORE the
/// catalog's current version, which the planner itself refuses ("the app's current version V3 is
/// named by no stage ... the app then fails to open the store"). Before 948fe2d the clean store
/// was the catalog's current version.
@Suite struct CleanFallbackTargetTests {
    @Test func theCleanStoreIsNotAVersionTheAppCannotOpen() throws {
        let fixture = try UpgradeFixture()
        let path = fixture.directory.path("cats-early.json")
        let json = """
            {"formatVersion": 1, "app": "Cats", "current": "V3", "versions": [
              {"name": "V1", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]},
              {"name": "V2", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]},
              {"name": "V3", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true}, {"name": "nick", "type": "String", "optional": true}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]}],
             "stages": [{"kind": "lightweight", "versions": ["V1", "V2"]}]}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        let catalog = try Catalog.load(path: path)
        let store = try fixture.catsStore(cats: 40, owners: 1, catalog: catalog)
        // Damage the page Z_METADATA lives on, so no plan is made.
        let root: Int64 = try {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            return try #require(try connection.rows("SELECT rootpage FROM sqlite_master WHERE name = 'Z_METADATA'").first?.first?.int64)
        }()
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seek(toOffset: UInt64((Int(root) - 1) * 4096))
        handle.write(Data(repeating: 0xFF, count: 16))
        try handle.close()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.version == "V3", "the clean store is \(match.version ?? "none"), not the app's current version V3")
    }
}
