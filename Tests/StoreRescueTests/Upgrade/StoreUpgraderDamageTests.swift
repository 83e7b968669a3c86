import Foundation
import Testing
@testable import StoreRescue

/// Damaged stores the hostile-input campaign (`Scripts/hostile-inputs.py`) found exiting 70
/// (the status that means a bug) instead of being refused or falling back to a clean store.
struct StoreUpgraderDamageTests {
    /// A page the read never looks at (an index's b-tree header) is damaged: the store matches
    /// exactly, and only `integrity_check` sees it. The adopted copy then fails its own check;
    /// that is the store's damage, which the backup's check proves, not a bug.
    @Test func adoptingAStoreDamagedWhereTheReadDoesNotLookIsARefusalNotABug() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seek(toOffset: 6 * 4096)  // page 7: Z_1TAGS_Z_2TAGS_INDEX
        handle.write(Data(repeating: 0xFF, count: 12))
        try handle.close()
        let before = try fixture.appFiles()

        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.error == nil)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .storeDamaged && refusal.message.hasPrefix("the store is damaged: "), "\(refusal.message)")
        #expect(refusal.remedy.contains("storerescue upgrade") && refusal.remedy.contains("--on-failure clean"), "\(refusal.remedy)")
        #expect(report.backup?.verified == false)
        #expect(try fixture.appFiles() == before, "nothing changed")
        #expect(try fixture.strayNames(besides: store) == [], "the workspace is removed")
    }

    /// A header write version SQLite does not know (byte 18 flipped) makes SQLite open the file
    /// read only: stamping the workspace copy failed with "attempt to write a readonly database"
    /// reported as an internal error. It is a store that cannot be stamped in place.
    @Test func adoptingAStoreWhoseHeaderSQLiteWillNotWriteIsARefusal() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seek(toOffset: 18)
        handle.write(Data([0xC1]))
        try handle.close()
        let before = try fixture.appFiles()

        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.error == nil)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .storeDamaged)
        #expect(refusal.message == "\(store): its header's write version (byte 18) is 193, which SQLite does not write (1 rollback journal, 2 WAL), so it cannot be stamped in place")
        #expect(refusal.remedy.contains("salvage"))
        #expect(try fixture.appFiles() == before, "nothing changed")
        #expect(try fixture.strayNames(besides: store) == [])
    }

    /// The clean fallback salvages a damaged store whose lost page held an owner's only cat: the
    /// owner's required to-many `cats` is then empty and the migrated clean store fails the final
    /// check. The owners are left out (their rows stay in the salvage database) and the cats carried.
    @Test func aCleanFallbackLeavesOutAnEntityWhoseRequiredLinksWereLost() throws {
        let fixture = try UpgradeFixture()
        let catalog = try Self.ownersCatalog(in: fixture)
        let store = try Self.ownersStore(in: fixture, catalog: catalog, cats: 2_000)
        // Zero the page that holds cat 1000, the only cat of owner 1.
        try UpgradeFixture.zeroPage(holding: "cat 1000 x", in: store)

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean && report.exitStatus == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        let incident = try #require(report.fallback)
        #expect(incident.state == "complete")
        // What the entity counts do not show is said: the table lost a page (a review's lost
        // links went unreported).
        #expect(incident.notes.contains { $0.hasPrefix("ZCAT: ") && $0.contains("1 of its pages damaged or missing") }, "\(incident.notes)")
        let owner = try #require(incident.entities.first { $0.entity == "Owner" })
        #expect(owner.rowsInCleanStore == 0 && owner.keptIn == "salvage database")
        #expect(owner.reason?.contains("Owner objects have no value for the required cats") == true, "\(owner.reason ?? "")")
        let cat = try #require(incident.entities.first { $0.entity == "Cat" })
        #expect(cat.rowsInCleanStore > 1_900 && cat.keptIn == "clean store", "\(cat)")
        #expect(try UpgradeFixture.count("ZCAT", in: store) == cat.rowsInCleanStore)
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 0)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .exact && match.version == "V2")
        let check = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable)).scalar("PRAGMA integrity_check")?.string
        #expect(check == "ok")
        #expect(try fixture.strayNames(besides: store) == [])
    }

    /// A store already at the target whose damage is on a page the read does not look at (a cat
    /// leaf in the middle of the table): nothing would be written, so nothing read every page,
    /// and it was reported "already current" (exit 2, a success) with the damage left in place.
    /// It is now checked (`quick_check`): refused with `--on-failure keep`, saved with `clean`.
    @Test(arguments: [UpgradeOptions.FailurePolicy.keep, .clean])
    func aStoreAtTheTargetWithADamagedPageIsNotAlreadyCurrent(policy: UpgradeOptions.FailurePolicy) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = fixture.appFolder + "/Cats.sqlite"
        let v2 = try #require(catalog.version(named: "V2"))
        try StoreCreator.create(model: v2.model, versionIdentifiers: nil, at: store)
        let catEnt = try #require(try StoreLayoutBuilder.layout(for: v2.model).entityNumber(of: "Cat"))
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                INSERT INTO ZCAT (Z_PK, Z_ENT, Z_OPT, ZNAME, ZAGE) SELECT i, \(catEnt), 1, 'cat ' || i || ' ' || printf('%.*c', 300, 'x'), 1 FROM n;
                UPDATE Z_PRIMARYKEY SET Z_MAX = 2000 WHERE Z_NAME = 'Cat';
                PRAGMA wal_checkpoint(TRUNCATE);
                """)
        }
        let undamaged = try directoryCopy(of: store, in: fixture)
        #expect(StoreUpgrader.upgrade(store: undamaged, catalog: catalog, options: fixture.options(policy)).status == .alreadyCurrent,
                "undamaged, it is already current")
        try UpgradeFixture.zeroPage(holding: "cat 1000 x", in: store)
        let before = try fixture.appFiles()

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(policy))
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .storeDamaged && refusal.message.hasPrefix("the store is at V2 but damaged: quick_check"), "\(refusal.message)")
        if policy == .keep {
            #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status)")
            #expect(try fixture.appFiles() == before, "nothing changed")
        } else {
            #expect(report.status == .fellBackToClean && report.exitStatus == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
            let cats = try UpgradeFixture.count("ZCAT", in: store)
            #expect(cats > 1_900 && cats < 2_000, "the cats of every other page")
            let match = StoreMatcher.match(storePath: store, catalog: catalog)
            #expect(match.outcome == .exact && match.version == "V2")
        }
        #expect(try fixture.strayNames(besides: store) == [])
    }

    /// A copy of `store` in the fixture's directory (outside the app folder), for a run that
    /// must not touch the store itself.
    private func directoryCopy(of store: String, in fixture: UpgradeFixture) throws -> String {
        let copy = fixture.directory.path("undamaged-copy.sqlite")
        try FileManager.default.copyItem(atPath: store, toPath: copy)
        return copy
    }

    /// Owners with a required to-many `cats`; V2 adds `Cat.age` (default 0) and `Owner.email`.
    static func ownersCatalog(in fixture: UpgradeFixture) throws -> Catalog {
        let path = fixture.directory.path("owners.json")
        func version(_ name: String, _ catExtra: String, _ ownerExtra: String) -> String {
            """
            {"name": "\(name)", "entities": [
              {"name": "Cat", "attributes": [{"name": "name", "type": "String"}\(catExtra)],
               "relationships": [{"name": "owner", "destination": "Owner", "inverse": "cats", "optional": true, "deleteRule": "nullify"}]},
              {"name": "Owner", "attributes": [{"name": "name", "type": "String"}\(ownerExtra)],
               "relationships": [{"name": "cats", "destination": "Cat", "inverse": "owner", "toMany": true, "optional": false}]}]}
            """
        }
        let json = """
            {"formatVersion": 1, "app": "Owners", "versions": [
              \(version("V1", "", "")),
              \(version("V2", #", {"name": "age", "type": "Int16", "default": 0}"#, #", {"name": "email", "type": "String", "optional": true}"#))],
             "stages": [{"kind": "lightweight", "from": "V1", "to": "V2"}]}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        return try Catalog.load(path: path)
    }

    /// A V1 store: owner 1 has cat 1000 alone, owner 2 every other cat.
    static func ownersStore(in fixture: UpgradeFixture, catalog: Catalog, cats: Int) throws -> String {
        let store = fixture.appFolder + "/Owners.sqlite"
        let version = try #require(catalog.version(named: "V1"))
        try StoreCreator.create(model: version.model, versionIdentifiers: nil, at: store)
        let layout = try StoreLayoutBuilder.layout(for: version.model)
        let catEnt = try #require(layout.entityNumber(of: "Cat"))
        let ownerEnt = try #require(layout.entityNumber(of: "Owner"))
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(cats))
            INSERT INTO ZCAT (Z_PK, Z_ENT, Z_OPT, ZNAME, ZOWNER) SELECT i, \(catEnt), 1, 'cat ' || i || ' ' || printf('%.*c', 300, 'x'),
                CASE WHEN i = 1000 THEN 1 ELSE 2 END FROM n;
            INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, \(ownerEnt), 1, 'owner 1'), (2, \(ownerEnt), 1, 'owner 2');
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(cats) WHERE Z_NAME = 'Cat';
            UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_NAME = 'Owner';
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
        return store
    }
}
