import Foundation
import Testing
@testable import StoreRescue

/// `StoreUpgrader` end to end through its library API: both phases, the backup, refusals, the
/// clean fallback, and — with a fault injected at every stage — that the store at its path is
/// always the original (every row) or the finished upgrade.
struct StoreUpgraderTests {
    struct InjectedFailure: StandsForAKill {}
    /// A real failure at that point (a full disk), not a kill: the run cleans up after itself.
    struct FailedThere: Error {}

    @Test func theJournalSampleIsAdoptedAsV1AndMigratedToV4InOneRun() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let uuid = try UpgradeFixture.uuid(of: store)
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())

        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.exitStatus == .success)
        #expect(report.phases.map(\.name) == ["read", "backup", "adopt", "migrate", "verify", "publish"])
        #expect(report.phases.allSatisfy { $0.status == "done" }, "\(report.phases)")
        #expect(report.source?.version == "V1" && report.target?.version == "V4")
        #expect(report.adoption?.isNeeded == true && report.adoption?.version == "V1")
        #expect(report.migration?.hops.map(\.to) == ["V2", "V3", "V4"])
        let backup = try #require(report.backup)
        #expect(backup.kind == "snapshot" && backup.verified && backup.integrityCheck == "ok")
        #expect(backup.path.hasPrefix(fixture.backups + "/") && FileManager.default.fileExists(atPath: backup.path))
        #expect(try FileDigest.of(path: backup.path).sha256 == backup.sha256)

        let match = StoreMatcher.match(storePath: store, catalog: try fixture.journalCatalog)
        #expect(match.outcome == .exact && match.version == "V4")
        #expect(report.published?.rowsByEntity == ["Entry": 5, "Tag": 3])
        #expect(try UpgradeFixture.count("ZENTRY", in: store) == 5)
        #expect(try UpgradeFixture.uuid(of: store) == uuid, "the store UUID is kept")
        #expect(try fixture.strayNames(besides: store) == [], "no workspace or stray file is left beside the store")
        #expect(!FileManager.default.fileExists(atPath: store + "-wal"))

        // Again: exactly at the target, nothing written, its own status.
        let before = try fixture.appFiles()
        let again = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(again.status == .alreadyCurrent && again.exitStatus == .nothingToDo)
        #expect(try fixture.appFiles() == before)
    }

    @Test func aDryRunShowsEveryPhaseAndTouchesNothing() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(dryRun: true))
        #expect(report.dryRun && report.status == .upgraded)
        #expect(report.phases.map(\.name) == ["read", "backup", "adopt", "migrate", "verify", "publish"])
        #expect(report.phases.dropFirst().allSatisfy { $0.status == "predicted" })
        #expect(report.migration?.hops.count == 3)
        #expect(try fixture.appFiles() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.backups), "not even the backup folder is created")
    }

    @Test func adoptStampsTheVersionAndChangesNoRow() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let entries = try UpgradeFixture.rows("ZENTRY", in: store)
        let uuid = try UpgradeFixture.uuid(of: store)
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(report.command == "adopt")
        #expect(report.status == .adoptedOnly && report.exitStatus == .adoptedOnly, "\(report.error?.message ?? "")")
        // No --as: the version is match's, not "requested" (a review).
        #expect(report.source?.choice == "matched", "\(report.source?.choice ?? "none")")
        #expect(report.phases.map(\.name) == ["read", "backup", "adopt", "verify", "publish"])
        let changed = Set(report.adoption?.changes.map(\.key) ?? [])
        #expect(changed.contains("NSStoreModelVersionChecksumKey") && changed.contains("NSPersistenceFrameworkVersion"), "\(changed)")
        let match = StoreMatcher.match(storePath: store, catalog: try fixture.journalCatalog)
        #expect(match.outcome == .exact && match.version == "V1")
        #expect(try UpgradeFixture.rows("ZENTRY", in: store) == entries)
        #expect(try UpgradeFixture.uuid(of: store) == uuid)

        // Adopting again: nothing to adopt.
        let again = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(again.status == .alreadyCurrent)
        // --as a version the store's hashes contradict: refused, nothing written.
        let before = try fixture.appFiles()
        let wrong = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(mode: .adopt(as: "V2")))
        #expect(wrong.exitStatus == .refused || wrong.error?.exitStatus == 3, "\(wrong.status) \(wrong.error?.message ?? "")")
        #expect(try fixture.appFiles() == before)
    }

    @Test func a134110IsRefusedWithKeepAndChangesNothing() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: false)
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: catalog)
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
        #expect(report.status == .refused && report.exitStatus == .refused)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .mandatoryValueMissing && refusal.coreDataErrorCode == 134110)
        #expect(refusal.entity == "Cat" && refusal.property == "age" && refusal.rowCount == 3)
        #expect(refusal.remedy.contains("\"map\""))
        #expect(try fixture.appFiles() == before)
        #expect(report.backup == nil && !FileManager.default.fileExists(atPath: fixture.backups))

        // With the one-line map, the same store upgrades.
        let mapped = StoreUpgrader.upgrade(store: store, catalog: try fixture.catsCatalog(map: true), options: fixture.options())
        #expect(mapped.status == .upgraded, "\(mapped.error?.message ?? "") \(mapped.refusals.map(\.message))")
        #expect(try UpgradeFixture.count("ZCAT", in: store, where: "ZAGE = 0") == 3)
    }

    /// Orders that already had no customer (Core Data validates only at save): upgraded, with
    /// and without `--on-failure clean`, the gap noted; no fallback, nothing left out.
    @Test(arguments: [UpgradeOptions.FailurePolicy.keep, .clean])
    func aStoreThatAlreadyLackedRequiredValuesIsUpgradedWithThemNoted(policy: UpgradeOptions.FailurePolicy) throws {
        let shop = try MigrationFixture(versions: [PreexistingGapMigrationTests.v1, PreexistingGapMigrationTests.v2])
        try FileManager.default.createDirectory(atPath: shop.directory.path("app"), withIntermediateDirectories: false)
        let path = try shop.store(at: "V1", name: "app/Shop.sqlite")
        try shop.edit(path, at: "V1") { context in
            let ann = try context.insert("Customer", values: ["name": .text("Ann")])
            try context.link("Order", key: try context.insert("Order", values: ["code": .text("A1")]), "customer", to: ann)
            try context.insert("Order", values: ["code": .text("loose")])
        }
        let options = UpgradeOptions(backupDirectory: shop.directory.path("backups"), onFailure: policy, lockTimeout: 2)
        let report = StoreUpgrader.upgrade(store: path, catalog: shop.catalog, options: options)
        #expect(report.status == .upgraded && report.exitStatus == .success, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.fallback == nil)
        #expect(report.notes.contains("1 Order objects already had no customer before the migration (a required relationship); carried as they were"))
        #expect(report.migration?.result?.verification.preexistingMissingValues.map(\.objectsBefore) == [1])
        #expect(StoreMatcher.match(storePath: path, catalog: shop.catalog).version == "V2")
        #expect(try UpgradeFixture.count("ZORDER", in: path) == 2)
    }

    @Test func aRefusedPlanFallsBackToACleanStoreCarryingWhatItCan() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: false)
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: catalog)
        let originalCopy = fixture.directory.path("original.sqlite")
        try FileManager.default.copyItem(atPath: store, toPath: originalCopy)
        let uuid = try UpgradeFixture.uuid(of: store)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean && report.exitStatus == .fellBackToClean, "\(report.error?.message ?? "")")
        // No verified backup, no write: the fallback waited for the backup's verification (a
        // review's report said "verified: no" and had no verify phase).
        #expect(report.backup?.verified == true && report.backup?.integrityCheck == "ok")
        #expect(report.phases.contains { $0.name == "verify" && $0.status == "done" }, "\(report.phases)")
        let incident = try #require(report.fallback)
        #expect(incident.state == "complete")
        #expect(incident.reasons.first?.coreDataErrorCode == 134110)
        // The clean store is exactly V2, keeps the UUID, has the owners; the cats are left out.
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .exact && match.version == "V2")
        #expect(try UpgradeFixture.uuid(of: store) == uuid && incident.cleanStore?.uuidKept == true)
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 2)
        #expect(try UpgradeFixture.count("ZCAT", in: store) == 0)
        let cat = try #require(incident.entities.first { $0.entity == "Cat" })
        #expect(cat.keptIn == "salvage database" && cat.rowsInStore == 3 && cat.rowsNotCarried == 3)
        let owner = try #require(incident.entities.first { $0.entity == "Owner" })
        #expect(owner.keptIn == "clean store" && owner.rowsInCleanStore == 2 && owner.rowsNotCarried == 0)
        // Nothing deleted: the original main file is in the quarantine, byte for byte; every cat
        // is in the salvage database; the incident files are there.
        let kept = incident.quarantine + "/Cats.sqlite"
        #expect(try UpgradeFixture.sameDatabase(kept, originalCopy), "the original database, settled (its -wal folded in)")
        let salvage = try #require(incident.salvageDatabase)
        #expect(try UpgradeFixture.count("ZCAT", in: salvage) == 3)
        for name in ["incident.json", "incident.txt", "intent.json"] {
            #expect(FileManager.default.fileExists(atPath: incident.quarantine + "/" + name), "\(name)")
        }
        let text = try String(contentsOfFile: incident.quarantine + "/incident.txt", encoding: .utf8)
        #expect(text.contains("storerescue restore") && text.contains("134110"))
        #expect(incident.quarantine.hasPrefix(fixture.backups + "/quarantine/"))
        #expect(try fixture.strayNames(besides: store) == [])
        // The restore command in the incident puts the original back.
        let backup = try #require(report.backup)
        #expect(incident.restoreCommand == "storerescue restore \(backup.path) --to \(store) --force --as-backed-up")
    }

    /// A fault of the catalog (here a model default that is not of its attribute's type) is
    /// refused whatever `--on-failure` says, with nothing changed: the catalog must change, not
    /// the store. A review's healthy store was quarantined for an almost empty clean one.
    @Test(arguments: [false, true])
    func aFaultOfTheCatalogNeverFallsBackToACleanStore(dryRun: Bool) throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: try fixture.catsCatalog(map: false))
        let catalog = try fixture.catsCatalog(
            named: "bad-default.json", stage: #"{"kind": "lightweight", "from": "V1", "to": "V2"}"#,
            age: #"{"name": "age", "type": "Int16", "default": "70000"}"#, v2OwnerEmail: false)
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean, dryRun: dryRun))
        #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status)")
        #expect(report.refusals.map(\.code) == [.invalidCustomStage])
        #expect(report.refusals.first?.message.contains("the default value \"70000\" of Cat.age in V2 is not a") == true, "\(report.refusals)")
        #expect(report.notes.contains { $0.hasPrefix("not falling back to a clean store: the catalog must change, not the store") })
        #expect(report.fallback == nil && report.backup == nil)
        let text = report.renderText()
        #expect(text.contains("Refused: the catalog must change, not the store") && !text.contains("Run with --on-failure clean"), "\(text)")
        #expect(try fixture.appFiles() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.backups))
    }

    /// Refusals of which one is the catalog's: the run refuses whatever --on-failure says, so
    /// the text must not advise --on-failure clean (it did while its test was "all of them").
    @Test func aMixOfRefusalsWithOneOfTheCatalogsIsNotAdvisedTheFallback() {
        var report = UpgradeReport(command: "upgrade", store: "/s.sqlite", catalog: "/c.json", dryRun: false)
        report.status = .refused
        report.refusals = [
            MigrationRefusal(code: .mandatoryValueMissing, hop: "V1 → V2", entity: "Cat", property: "age", rowCount: 3, message: "needs a value", remedy: "map it"),
            MigrationRefusal(code: .invalidCustomStage, hop: "V1 → V2", entity: "Cat", property: nil, rowCount: nil, message: "bad default", remedy: "correct it"),
        ]
        let text = report.renderText()
        #expect(text.contains("Refused: the catalog must change, not the store") && !text.contains("Run with --on-failure clean"), "\(text)")
    }

    /// The catalog's custom stage failing on the store's data while writing (a map value that
    /// does not fit, a step SQLite stops) is the catalog's fault too: the run fails (exit 3)
    /// with nothing changed, even with `--on-failure clean`. A review's healthy store was
    /// quarantined, and its clean store carried none of its rows.
    @Test(arguments: ["map", "step"])
    func aCustomStageFailingOnTheDataNeverFallsBackToACleanStore(kind: String) throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: try fixture.catsCatalog(map: false))
        let stage = kind == "map"
            ? #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "name"}}}"#
            : #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}, "willMigrate": [{"update": "Cat", "set": {"name": "json_extract(name, '$.a')"}}]}"#
        let catalog = try fixture.catsCatalog(named: "failing.json", stage: stage, v2OwnerEmail: false)
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.fallback == nil)
        #expect(try fixture.appFiles() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.backups + "/quarantine"))
        guard kind == "step" else {
            // A map value that does not fit is refused when the store is read (the catalog's
            // fault: `invalidCustomStage`), before any backup or write.
            #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
            #expect(report.refusals.map(\.code) == [.invalidCustomStage], "\(report.refusals.map(\.message))")
            #expect(report.notes.contains { $0.hasPrefix("not falling back to a clean store: the catalog must change") }, "\(report.notes)")
            return
        }
        #expect(report.status == .failed && report.exitStatus == .refused, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.notes.contains { $0.hasPrefix("not falling back to a clean store: the catalog's custom stage failed") })
        // The plan that failed stays in the report, marked failed, nothing reported written.
        #expect(report.migration?.status == .failed && report.migration?.result == nil)
        #expect(report.migration?.hops.map { "\($0.from) → \($0.to)" } == ["V1 → V2"])
    }

    /// A store matched as a version after the current one only by an index (hashes leave
    /// indexes out) has the current version's hashes: Core Data opens it as is, as `match`
    /// says, so upgrade takes it as that version. A review's upgrade refused it as "newer than
    /// every version" and, with --on-failure clean, left an empty store in its place.
    @Test(arguments: [false, true])
    func aStoreNewerOnlyByAnIndexIsTakenAsTheCurrentVersion(identifiers: Bool) throws {
        let fixture = try UpgradeFixture()
        let path = fixture.directory.path("idx.json")
        // With identifiers (as SwiftData's versions have), stamping V1's over V2's would write
        // an older version over a newer app's: a review's run ended in exit 70.
        let (one, two) = identifiers ? (#""identifiers": ["1.0.0"], "#, #""identifiers": ["2.0.0"], "#) : ("", "")
        let json = """
            {"formatVersion": 1, "app": "Idx", "current": "V1", "versions": [
              {"name": "V1", \(one)"entities": [{"name": "Item", "attributes": [{"name": "title", "type": "String"}]}]},
              {"name": "V2", \(two)"entities": [{"name": "Item", "attributes": [{"name": "title", "type": "String", "indexed": true}]}]}]}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        let catalog = try Catalog.load(path: path)
        let store = fixture.appFolder + "/Idx.sqlite"
        let v2 = try #require(catalog.version(named: "V2"))
        try StoreCreator.create(model: v2.model, versionIdentifiers: v2.versionIdentifiers, at: store)
        try StoreFixtureBuilder.run(store, "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 1, 1, 'a'), (2, 1, 1, 'b')")
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).diagnosis.prediction == .opensAsIs)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .alreadyCurrent, "\(report.status) \(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.fallback == nil)
        #expect(report.notes.contains { $0.contains("its hashes are also V1's: Core Data opens it as V1") })
        #expect(try UpgradeFixture.count("ZITEM", in: store) == 2)
    }

    /// Two stores the clean fallback would only destroy, whatever --on-failure says: a store
    /// newer than the catalog's versions (no row can be carried backwards; the catalog lacks
    /// its version) and a healthy SQLite database that is no Core Data store (the wrong file).
    /// A review's runs quarantined both and left an empty store in their place.
    @Test(arguments: ["newer", "notCoreData"])
    func aNewerStoreOrAnotherDatabaseNeverFallsBackToACleanStore(kind: String) throws {
        let fixture = try UpgradeFixture()
        let cats = try fixture.catsCatalog(map: true)
        let store: String
        let catalog: Catalog
        if kind == "newer" {
            store = fixture.appFolder + "/Cats.sqlite"
            try StoreCreator.create(model: try #require(cats.version(named: "V2")).model, versionIdentifiers: nil, at: store)
            try StoreFixtureBuilder.run(store, "INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 2, 1, 'ann')")
            catalog = Catalog(name: "Cats", versions: [try #require(cats.version(named: "V1"))], sourcePath: cats.sourcePath)
        } else {
            store = fixture.appFolder + "/history.db"
            // A table that merely has an entity table's name (no Z_PK, Z_ENT, Z_OPT) does not
            // make it a damaged Core Data store (a review's `ztag` was quarantined).
            try StoreFixtureBuilder.database(at: store, sql: """
                CREATE TABLE history (id INTEGER PRIMARY KEY, url TEXT); INSERT INTO history (url) VALUES ('a'), ('b');
                CREATE TABLE zcat (id INTEGER PRIMARY KEY, label TEXT); INSERT INTO zcat (label) VALUES ('keep me');
                """)
            catalog = cats
        }
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.fallback == nil, "\(report.status)")
        #expect(kind == "newer" ? report.status == .refused && report.exitStatus == .refused : report.exitStatus == .notAStore,
                "\(report.status) \(report.exitStatus)")
        #expect(try fixture.appFiles() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.backups + "/quarantine"))
    }

    /// An undamaged store of a version the catalog lacks (V2 taken out of the Journal catalog):
    /// its stored hashes name its version, so the catalog must change, not the store. A
    /// review's `--on-failure clean` put an empty V4 store in its place (exit 5).
    @Test func aHealthyStoreOfAVersionTheCatalogLacksNeverFallsBack() throws {
        let fixture = try UpgradeFixture()
        let journal = try fixture.journalCatalog
        let v2 = try #require(journal.version(named: "V2"))
        let custom = try #require(journal.stages.last)
        let catalog = Catalog(
            name: "Journal", versions: journal.versions.filter { $0.name != "V2" }, currentVersionName: "V4",
            stages: [CatalogStage(from: "V1", to: "V3", kind: .lightweight), custom], sourcePath: journal.sourcePath)
        let store = fixture.appFolder + "/Journal.sqlite"
        try StoreCreator.create(model: v2.model, versionIdentifiers: v2.versionIdentifiers, at: store)
        try StoreFixtureBuilder.run(store, """
            INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZCREATEDAT, ZTEXT, ZTITLE, ZMOOD) VALUES (1, 1, 1, 0, 'a', 't1', 3), (2, 1, 1, 0, 'b', 't2', 4);
            UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_NAME = 'Entry'
            """)
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .refused && report.exitStatus == .refused && report.fallback == nil, "\(report.status)")
        #expect(report.refusals.map(\.code) == [.versionNotInCatalog])
        #expect(report.renderText().contains("Refused: the catalog must change, not the store"))
        #expect(try fixture.appFiles() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.backups + "/quarantine"))
    }

    /// Damage only writing meets (a broken overflow chain: SQLite's "malformed" surfaces as a
    /// failed step of the migration) and a store that lost Z_METADATA (its entity tables
    /// intact) are damaged stores, saved by the clean fallback, not faults of the catalog or
    /// another database (a review: exit 3 "correct the step in the catalog", and exit 65).
    @Test(arguments: ["overflow", "metadata"])
    func damageTheMigrationMeetsStillFallsBack(damage: String) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 4, owners: 2, catalog: catalog)
        if damage == "overflow" {
            let page: Int64
            do {
                let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
                try connection.execute("UPDATE ZCAT SET ZNAME = hex(randomblob(6000)) WHERE Z_PK = 2; PRAGMA wal_checkpoint(TRUNCATE)")
                page = try #require(try connection.scalar("SELECT pageno FROM dbstat WHERE pagetype = 'overflow' ORDER BY pageno LIMIT 1")?.int64)
            }
            try SalvageFixtures.overwrite(store, at: Int(page - 1) * 4096, with: Data([0, 0, 0xFF, 0xFF]))
        } else {
            try SalvageFixtures.editSchema(of: store, "DELETE FROM sqlite_schema WHERE name = 'Z_METADATA';")
        }
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean && report.exitStatus == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.refusals.first?.code == .storeDamaged, "\(report.refusals.map(\.message))")
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 2)
    }

    /// A store in PERSIST journal mode keeps a zeroed -journal; the upgrade removes it under
    /// the lock and says so in `published.removedSpentJournal` (a review found it gone and
    /// reported nowhere).
    @Test func aSpentJournalRemovedByTheUpgradeIsReported() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            _ = try connection.scalar("PRAGMA journal_mode = PERSIST")
            try connection.execute("UPDATE ZENTRY SET ZTITLE = ZTITLE")
        }
        #expect(FileManager.default.fileExists(atPath: store + "-journal"))
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.published?.removedSpentJournal == store + "-journal")
        #expect(!FileManager.default.fileExists(atPath: store + "-journal"))
    }

    /// The workspace folder swapped for another while the run writes (the store's folder is
    /// the app user's, who could rename it away and put their own, holding a file of theirs
    /// under the written store's name): refused, nothing published (a review's code reading).
    @Test func aWorkspaceSwappedMeanwhileIsRefused() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let before = try UpgradeFixture.rows("ZENTRY", in: store)
        let report = StoreUpgrader.upgrade(
            store: store, catalog: try fixture.journalCatalog, options: fixture.options(), progress: nil, cancellation: nil,
            faultInjection: fixture.swappingTheWorkspace(at: .backedUp))
        #expect(report.status == .failed, "\(report.status)")
        #expect(report.error?.message.contains("its folder is not the one this process made") == true, "\(report.error?.message ?? "")")
        #expect(try UpgradeFixture.rows("ZENTRY", in: store) == before)
        #expect(StoreMatcher.match(storePath: store, catalog: try fixture.journalCatalog).version == "V1", "not upgraded")
    }

    /// The clean fallback checks its workspace too before it takes the clean store's identity:
    /// a workspace swapped meanwhile refuses the swap, the store not quarantined.
    @Test func aFallbacksWorkspaceSwappedMeanwhileIsRefused() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1])
        let damaged = try Data(contentsOf: URL(fileURLWithPath: store))
        let report = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: fixture.swappingTheWorkspace(at: .backedUp))
        #expect(report.status == .failed, "\(report.status)")
        #expect(report.error?.message.contains("its folder is not the one this process made") == true, "\(report.error?.message ?? "")")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == damaged, "the store is where it was, as it was")
    }

    @Test func aDamagedStoreFallsBackWithItsReadableRowsSalvaged() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        // Zero three pages in the middle of the cats' table.
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
        let damaged = try FileDigest.of(path: store)
        let damagedCopy = fixture.directory.path("damaged.sqlite")
        try FileManager.default.copyItem(atPath: store, toPath: damagedCopy)

        // A dry run says it would fall back, writes nothing, and names the salvage that shows
        // what would be carried (its `fallback` is null: documented).
        let predicted = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean, dryRun: true))
        #expect(predicted.status == .fellBackToClean && predicted.fallback == nil)
        #expect(predicted.phases.last?.detail.contains("storerescue salvage \(store) --out NEW --catalog CATALOG") == true, "\(predicted.phases.last?.detail ?? "")")
        #expect(try FileDigest.of(path: store) == damaged, "a dry run changes nothing")

        let kept = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(kept.status == .refused, "\(kept.status) \(kept.error?.message ?? "")")
        #expect(kept.refusals.contains { $0.code == .storeDamaged })
        #expect(try FileDigest.of(path: store) == damaged, "keep changes nothing")

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        let incident = try #require(report.fallback)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .exact && match.version == "V2")
        let cats = try UpgradeFixture.count("ZCAT", in: store)
        #expect(cats > 1_900 && cats < 2_000, "most cats survive three zeroed pages: \(cats)")
        #expect(try UpgradeFixture.count("ZCAT", in: store, where: "ZAGE = 0") == cats, "carried through the custom stage")
        let cat = try #require(incident.entities.first { $0.entity == "Cat" })
        #expect(cat.rowsInCleanStore == cats && cat.rowsSalvaged == cats && cat.keptIn == "clean store")
        #expect(try FileDigest.of(path: incident.quarantine + "/Cats.sqlite") == damaged || (try UpgradeFixture.sameDatabase(incident.quarantine + "/Cats.sqlite", damagedCopy)),
                "the damaged file is kept as it was (settled when SQLite could settle it)")
        let check = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable)).scalar("PRAGMA integrity_check")?.string
        #expect(check == "ok")
    }

    @Test func aStoreSQLiteCannotOpenIsCopiedRawQuarantinedAndItsRowsSalvagedByShape() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 500, owners: 3, catalog: catalog)
        // No SQLite header any more: nothing opens it.
        try UpgradeFixture.zeroHeader(of: store)
        let damaged = try FileDigest.of(path: store)

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        let backup = try #require(report.backup)
        #expect(backup.kind == "raw" && backup.verified)
        #expect(try FileDigest.of(path: backup.path + "/Cats.sqlite") == damaged, "the raw backup is the file as it was")
        let incident = try #require(report.fallback)
        #expect(try FileDigest.of(path: incident.quarantine + "/Cats.sqlite") == damaged, "never settled, never changed")
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .exact && match.version == "V2")
        #expect(try UpgradeFixture.count("ZCAT", in: store) > 400, "rows told by their shape")
    }

    /// A file that is no store at all (empty, or text: no header and no page of a database) is
    /// left as it is by `--on-failure clean`, as by `keep`: refused, nothing written anywhere.
    /// Review rv8: `/etc/services` given as the store was quarantined and an empty store put in
    /// its place.
    @Test(arguments: ["text", "empty"])
    func aFileWithNoPageOfADatabaseIsNotReplacedByACleanStore(kind: String) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = fixture.directory.path("app.store")
        let text = (0..<400).map { "service\($0)\t\($0 * 7)/tcp\t# a line of a configuration file\n" }.joined()
        try Data(kind == "text" ? text.utf8 : "".utf8).write(to: URL(fileURLWithPath: store))
        let before = try FileDigest.of(path: store)
        for dryRun in [true, false] {
            let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean, dryRun: dryRun))
            #expect(report.status == .refused && report.exitStatus == .refused, "dry run \(dryRun): \(report.status) \(report.error?.message ?? "")")
            #expect(report.fallback == nil && report.backup == nil)
            #expect(report.notes.contains { $0.hasPrefix("not replaced by a clean store: ") && $0.contains("replaces only a store") }, "\(report.notes)")
            #expect(try FileDigest.of(path: store) == before, "the file is left as it was")
            let written = (try? FileManager.default.contentsOfDirectory(atPath: fixture.backups)) ?? []
            #expect(written.isEmpty, "nothing backed up or quarantined: \(written)")
        }
    }

    /// The raw fallback's restore command, run as printed after the app used the clean store
    /// (its `-wal` and `-shm` beside it), puts the original's main file and `-wal` back and
    /// keeps the clean store and its sidecars in the quarantine. Review rv8: `cp -p RAW/NAME
    /// STORE` overwrote the clean store and left its `-wal` beside the original's bytes, which
    /// SQLite and `salvage` then read as the original's.
    @Test func theRawFallbacksRestoreCommandPutsTheOriginalBackWithoutTheCleanStoresSidecars() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 50, owners: 2, catalog: catalog)
        try UpgradeFixture.zeroHeader(of: store)
        let originalWAL = Data("the original's own -wal".utf8)
        try originalWAL.write(to: URL(fileURLWithPath: store + "-wal"))
        let damaged = try FileDigest.of(path: store)

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.backup?.kind == "raw")
        let incident = try #require(report.fallback)
        // The app opens the clean store and leaves sidecars of its own.
        let cleanStore = try FileDigest.of(path: store)
        for (suffix, text) in [("-wal", "the clean store's -wal"), ("-shm", "the clean store's -shm")] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: store + suffix))
        }

        #expect(try Self.runShell(incident.restoreCommand, in: (store as NSString).deletingLastPathComponent) == 0, "\(incident.restoreCommand)")

        #expect(try FileDigest.of(path: store) == damaged, "the original's main file is back")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store + "-wal")) == originalWAL, "with its own -wal")
        #expect(!FileManager.default.fileExists(atPath: store + "-shm"), "no -shm of the clean store beside it")
        let aside = incident.quarantine + "/Cats.sqlite.clean"
        #expect(try FileDigest.of(path: aside) == cleanStore, "the clean store is kept")
        #expect(try String(contentsOfFile: aside + "-wal", encoding: .utf8) == "the clean store's -wal")
        #expect(try String(contentsOfFile: aside + "-shm", encoding: .utf8) == "the clean store's -shm")
        #expect(!FileManager.default.fileExists(atPath: store + ".restoring"), "no temporary copy left")

        // Run again (review rv9): refused, and neither the original nor the kept clean store moves.
        #expect(try Self.runShell(incident.restoreCommand, in: (store as NSString).deletingLastPathComponent) != 0)
        #expect(try FileDigest.of(path: store) == damaged)
        #expect(try FileDigest.of(path: aside) == cleanStore, "the clean store is not overwritten by a second run")
        #expect(try String(contentsOfFile: aside + "-wal", encoding: .utf8) == "the clean store's -wal")
    }

    /// The command a store with a hostile name gets runs nothing but its own moves and copies
    /// (review rv9: a newline in the name ended a comment that named it, and the rest ran).
    @Test func theRawFallbacksRestoreCommandRunsNothingFromTheStoresName() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let created = try fixture.catsStore(cats: 20, owners: 1, catalog: catalog)
        let name = "C\n touch PWNED #'$(touch PWNED2); x\n--y.sqlite"
        let store = (created as NSString).deletingLastPathComponent + "/" + name
        #expect(rename(created, store) == 0)
        try UpgradeFixture.zeroHeader(of: store)
        let damaged = try FileDigest.of(path: store)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        let incident = try #require(report.fallback)
        let scratch = fixture.directory.path("scratch")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)

        #expect(try Self.runShell(incident.restoreCommand, in: scratch) == 0, "\(incident.restoreCommand)")
        #expect(try FileDigest.of(path: store) == damaged, "the original is back")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty, "nothing else ran")
        let appFiles = try FileManager.default.contentsOfDirectory(atPath: (store as NSString).deletingLastPathComponent)
        #expect(!appFiles.contains { $0.hasPrefix("PWNED") }, "\(appFiles)")
        for line in incident.restoreByHand {
            #expect(!line.contains("\n") || line.contains("'"), "a newline only inside quotes: \(line)")
        }
    }

    /// Runs `command` with `/bin/sh -c` in `folder`; its exit status.
    static func runShell(_ command: String, in folder: String) throws -> Int32 {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", command]
        shell.currentDirectoryURL = URL(fileURLWithPath: folder)
        shell.standardError = FileHandle.nullDevice
        try shell.run()
        shell.waitUntilExit()
        return shell.terminationStatus
    }

    /// A failure (or a stop) at any stage leaves the original store with every row, or — after
    /// publishing — the finished upgrade; never a workspace beside it.
    @Test(arguments: [StoreUpgrader.Stage.backedUp, .written, .beforeSwap, .published])
    func aFailureAtAnyStageLeavesTheOriginalOrTheUpgrade(stage: StoreUpgrader.Stage) throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let before = try fixture.appFiles()
        let entries = try UpgradeFixture.rows("ZENTRY", in: store)
        let originalCopy = fixture.directory.path("original.sqlite")
        try FileManager.default.copyItem(atPath: store, toPath: originalCopy)
        let catalog = try fixture.journalCatalog
        let report = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(), progress: nil, cancellation: nil,
            faultInjection: { if $0 == stage { throw InjectedFailure() } })
        // After the publish the store is the upgrade, and the status says so (`failed` says the
        // store is the original); the error says what failed.
        #expect(report.status == (stage == .published ? .upgraded : .failed) && report.error != nil, "\(report.status)")
        #expect(report.exitStatus == .internalError)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        if stage == .published {
            #expect(match.outcome == .exact && match.version == "V4")
            #expect(try UpgradeFixture.count("ZENTRY", in: store) == 5)
        } else if stage == .beforeSwap {
            // Settled (its WAL folded in, rollback mode: Core Data switches back on its next
            // open) and locked when the fault struck: the same database, every row.
            #expect(try UpgradeFixture.sameDatabase(store, originalCopy))
            #expect(try UpgradeFixture.rows("ZENTRY", in: store) == entries)
        } else {
            #expect(try fixture.appFiles() == before, "the original, byte for byte")
        }
        #expect(try fixture.strayNames(besides: store) == [])
        // The next run finishes the job.
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
        #expect([.upgraded, .alreadyCurrent].contains(next.status), "\(next.error?.message ?? "")")
    }

    @Test func aStoreWrittenAfterItsBackupIsNotReplaced() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let report = StoreUpgrader.upgrade(
            store: store, catalog: try fixture.journalCatalog, options: fixture.options(), progress: nil, cancellation: nil,
            faultInjection: { stage in
                guard stage == .backedUp else { return }
                let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
                try connection.execute("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (4, 2, 1, 'late')")
            })
        #expect(report.status == .failed)
        #expect(report.exitStatus.rawValue == 75, "\(report.error?.message ?? "")")
        #expect(report.error?.message.contains("changed") == true)
        // Where the run stopped is in `phases[]` too (review rv8 #6): a failed publish phase
        // whose detail says what failed, as the error does.
        let publish = try #require(report.phases.last)
        #expect(publish.name == "publish" && publish.status == "failed", "\(report.phases.map { "\($0.name): \($0.status)" })")
        #expect(publish.detail == report.error?.message, "the detail says what failed, as the error does")
        #expect(try UpgradeFixture.count("ZTAG", in: store) == 4, "the late write is still there")
        let match = StoreMatcher.match(storePath: store, catalog: try fixture.journalCatalog)
        #expect(match.version == "V1" || match.diagnosis.adoptAs == "V1")
    }

    @Test func bytesAppendedAfterTheLastPageDoNotLookLikeAWriteAfterTheBackup() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seekToEnd()
        handle.write(Data(repeating: 0x5A, count: 5000))
        try handle.close()
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.error?.message ?? "")")
        #expect(report.notes.contains { $0.contains("5000 bytes after its database's last page") }, "\(report.notes)")
        #expect(try UpgradeFixture.count("ZENTRY", in: store) == 5)
    }

    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func aStoreHeldOpenIsWaitedForThenRefused() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let before = try fixture.appFiles()
        let holder = try UpgradeFixture.holdOpen(store)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let started = Date()
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(lockTimeout: 0.5))
        #expect(report.exitStatus.rawValue == 75, "\(report.status) \(report.error?.message ?? "")")
        #expect(report.error?.message.contains("open in another process") == true, "\(report.error?.message ?? "")")
        #expect(Date().timeIntervalSince(started) >= 0.5)
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        // The main file as it was (the holder's own -wal/-shm aside), nothing else beside it.
        #expect(try fixture.appFiles()["Journal.sqlite"] == before["Journal.sqlite"])
        #expect(try fixture.strayNames(besides: store) == [])
    }

    @Test func symbolicLinksAndABackupFolderBesideTheStoreAreRefused() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let link = fixture.appFolder + "/Link.sqlite"
        #expect(symlink(store, link) == 0)
        let linked = StoreUpgrader.upgrade(store: link, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(linked.exitStatus.rawValue == 66, "\(linked.error?.message ?? "")")
        unlink(link)
        var options = fixture.options()
        options.backupDirectory = fixture.appFolder
        let beside = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: options)
        #expect(beside.exitStatus.rawValue == 64, "\(beside.error?.message ?? "")")
        #expect(try fixture.strayNames(besides: store) == [])
    }

    @Test func aFallbackKilledAfterItsSwapIsMarkedCompleteByTheNextRun() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: false)
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: catalog)
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        let quarantine = try #require(report.fallback?.quarantine)
        // As a kill right after the rename leaves them: the journal still says replacing, the
        // incident pending.
        for (name, from, to) in [("intent.json", "\"done\"", "\"replacing\""), ("incident.json", "\"complete\"", "\"pending\"")] {
            let path = quarantine + "/" + name
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains(from))
            try text.replacingOccurrences(of: from, with: to).write(toFile: path, atomically: true, encoding: .utf8)
        }
        let clean = try fixture.appFiles()
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.count == 1 && next.recovered.first?.contains("finished an interrupted fallback") == true, "\(next.recovered)")
        #expect(next.status == .alreadyCurrent, "the clean store is exactly V2")
        #expect(try String(contentsOfFile: quarantine + "/incident.json", encoding: .utf8).contains("\"complete\""))
        #expect(try fixture.appFiles() == clean, "the clean store is left as it is")
    }

    /// A fallback killed after it moved a damaged store's `-wal` into the quarantine, before the
    /// rename: the next run puts the `-wal` back only beside the main file as it was then. One
    /// written since (an app opened the store without its `-wal`) keeps it out of its way: a
    /// review's rerun put the old `-wal` back beside a main file an app had changed.
    @Test(arguments: [false, true])
    func anInterruptedSwapPutsTheWALBackOnlyBesideTheUnchangedMainFile(changed: Bool) throws {
        let fixture = try UpgradeFixture()
        let store = fixture.appFolder + "/S.sqlite"
        try StoreFixtureBuilder.database(at: store, sql: "CREATE TABLE t (a); INSERT INTO t VALUES (1)")
        let quarantine = fixture.backups + "/quarantine/S.sqlite.20261126T000000Z"
        try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: true)
        let wal = Data("the store's committed frames".utf8)
        #expect(FileManager.default.createFile(atPath: quarantine + "/S.sqlite-wal", contents: wal))
        let now = try #require(FallbackIntent.state(of: store))
        var intent = FallbackIntent(
            store: store, quarantine: quarantine, cleanDevice: 0, cleanInode: 0,
            sidecarMoves: [FallbackIntent.Move(from: store + "-wal", to: quarantine + "/S.sqlite-wal")],
            mainMove: FallbackIntent.Move(from: store, to: quarantine + "/S.sqlite"), state: "replacing", createdAt: "20261126T000000Z")
        intent.mainSize = now.size
        intent.mainModified = now.modified
        try intent.write(into: quarantine)
        if changed { try StoreFixtureBuilder.run(store, "INSERT INTO t VALUES (2)") }
        let lines = try FallbackIntent.finishInterrupted(store: store, backupFolder: fixture.backups)
        #expect(lines.count == 1)
        if changed {
            #expect(lines.first?.contains("the store was written after it stopped") == true, "\(lines)")
            #expect(!FileManager.default.fileExists(atPath: store + "-wal"))
            #expect(FileManager.default.contents(atPath: quarantine + "/S.sqlite-wal") == wal)
        } else {
            #expect(lines.first?.contains("moved sidecars put back") == true, "\(lines)")
            #expect(FileManager.default.contents(atPath: store + "-wal") == wal)
        }
        #expect(try String(contentsOfFile: quarantine + "/intent.json", encoding: .utf8).contains("\"abandoned\""))
    }

    /// A damaged cats store (three zeroed pages in the middle) whose owners 6–10 live only in
    /// its `-wal`, as an app killed leaves them.
    private func damagedStoreWithALiveWAL(_ fixture: UpgradeFixture, catalog: Catalog) throws -> String {
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        do {
            let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            _ = try writer.scalar("PRAGMA journal_mode = WAL")
            try writer.disableCheckpointOnClose()
            try writer.execute("""
                PRAGMA wal_autocheckpoint = 0;
                INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT Z_PK + 5, Z_ENT, 1, 'late owner ' || Z_PK FROM ZOWNER;
                UPDATE Z_PRIMARYKEY SET Z_MAX = 10 WHERE Z_NAME = 'Owner';
                """)
        }
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
        #expect(try ownersIn(mainFileAlone: store, of: fixture) == 5, "the main file alone has the first five")
        return store
    }

    /// The owners SQLite reads from a copy of the store's main file alone (no sidecar).
    private func ownersIn(mainFileAlone store: String, of fixture: UpgradeFixture) throws -> Int64 {
        let folder = fixture.directory.path("alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: store, toPath: folder + "/Cats.sqlite")
        let connection = try SQLiteConnection(path: folder + "/Cats.sqlite", options: SQLiteOpenOptions(mode: .readOnly))
        return try connection.scalar("SELECT count(*) FROM ZOWNER")?.int64 ?? -1
    }

    /// `--on-failure clean` of a damaged store with a live `-wal`, stopped after its sidecars moved
    /// into the quarantine and before the clean store took the store's name. A review's kill
    /// there left the main file without the transactions only its `-wal` held. The `-wal` is now
    /// folded into a copy of the main file put in its place first: the store alone holds every
    /// owner, and the next run leaves it so and says why.
    @Test func aFallbackStoppedAfterTheSidecarsMovedLeavesTheStoreWithTheRowsOfItsWAL() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try damagedStoreWithALiveWAL(fixture, catalog: catalog)
        let stopped = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { if $0 == .sidecarsQuarantined { throw InjectedFailure() } })
        #expect(stopped.status == .failed, "\(stopped.status) \(stopped.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: store + "-wal"), "the -wal is in the quarantine")
        #expect(try ownersIn(mainFileAlone: store, of: fixture) == 10, "the main file holds the -wal's owners")

        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.count == 1 && next.recovered.first?.contains("folded into a copy of its main file") == true, "\(next.recovered)")
        #expect(!FileManager.default.fileExists(atPath: store + "-wal"), "the moved -wal is not put back")
        #expect(try ownersIn(mainFileAlone: store, of: fixture) == 10)
        let quarantine = try #require(try FileManager.default.contentsOfDirectory(atPath: fixture.backups + "/quarantine").first)
        let intent = try String(contentsOfFile: fixture.backups + "/quarantine/" + quarantine + "/intent.json", encoding: .utf8)
        #expect(intent.contains("\"abandoned\"") && intent.contains("foldedInode"))
    }

    /// A swap that fails (not killed) after the fold, or after the sidecars moved: the run deals
    /// with what it began at once, as the next run would after a kill — the store keeps its
    /// content (the folded copy), the journal and incident say `abandoned`, the report says so
    /// — instead of leaving a `replacing` journal and a `pending` incident (a review's EFBIG).
    @Test(arguments: [StoreUpgrader.Stage.walFolded, .sidecarsQuarantined])
    func aSwapThatFailsIsDealtWithByTheRunItself(stage: StoreUpgrader.Stage) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try damagedStoreWithALiveWAL(fixture, catalog: catalog)
        let failed = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { if $0 == stage { throw FailedThere() } })
        #expect(failed.status == .failed)
        #expect(failed.notes.contains { $0.contains("the fallback failed") && $0.contains("folded into a copy of its main file") }, "\(failed.notes)")
        #expect(try ownersIn(mainFileAlone: store, of: fixture) == 10, "the store keeps its content")
        let quarantine = try Self.onlyQuarantine(of: fixture)
        #expect(try Self.intentState(in: quarantine) == "abandoned")
        #expect(IncidentFiles.state(in: quarantine) == "abandoned")
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.isEmpty, "nothing left for the next run: \(next.recovered)")
    }

    /// A fallback that fails (not killed) before its swap — once its folder is made, or with the
    /// incident written — leaves the store as it was and its folder marked abandoned, its
    /// incident too, and says so: nothing stays `preparing`, `replacing` or `pending` (stop 24's
    /// review: an exit-74 fallback left its incident pending).
    @Test(arguments: [StoreUpgrader.Stage.fallbackPreparing, .quarantineReady])
    func aFallbackThatFailsBeforeItsSwapLeavesItsFolderAbandoned(stage: StoreUpgrader.Stage) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
        let before = try fixture.appFiles()
        let failed = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { if $0 == stage { throw FailedThere() } })
        #expect(failed.status == .failed)
        #expect(try fixture.appFiles() == before)
        #expect(failed.notes.contains { $0.hasPrefix("the fallback failed; what it had begun was dealt with at once: ") }, "\(failed.notes)")
        let quarantine = try Self.onlyQuarantine(of: fixture)
        #expect(try Self.intentState(in: quarantine) == "abandoned")
        #expect(IncidentFiles.state(in: quarantine) == (stage == .quarantineReady ? "abandoned" : nil))
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.isEmpty, "\(next.recovered)")
    }

    /// The same store, run to its end: the clean store has every owner, and the incident says
    /// the `-wal` was folded before it moved into the quarantine.
    @Test func aDamagedStoreWithALiveWALFallsBackWithItsWALFoldedFirst() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try damagedStoreWithALiveWAL(fixture, catalog: catalog)
        let wal = try Data(contentsOf: URL(fileURLWithPath: store + "-wal"))
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        let incident = try #require(report.fallback)
        #expect(incident.notes.contains { $0.contains("pages were folded into a copy of the main file") }, "\(incident.notes)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: incident.quarantine + "/Cats.sqlite-wal")) == wal)
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 10)
        #expect(try fixture.strayNames(besides: store) == [])
    }

    @Test func anInterruptedFallbackIsUndoneByTheNextRun() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: false)
        let store = try fixture.catsStore(cats: 3, owners: 2, catalog: catalog)
        let before = try fixture.appFiles()
        let stopped = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { if $0 == .quarantineReady { throw InjectedFailure() } })
        #expect(stopped.status == .failed)
        #expect(try fixture.appFiles() == before, "the store set is as it was")
        let quarantine = try Self.onlyQuarantine(of: fixture)
        #expect(IncidentFiles.state(in: quarantine) == "pending")
        #expect(try String(contentsOfFile: quarantine + "/incident.txt", encoding: .utf8).hasPrefix("State: pending."))
        // The next run (keep) finds the unfinished fallback, undoes it, and reports it; the
        // incident says the attempt was abandoned (it stayed "pending" until stop 25).
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.count == 1 && next.recovered.first?.contains("undid an interrupted fallback") == true, "\(next.recovered)")
        #expect(next.status == .refused)
        #expect(try fixture.appFiles() == before)
        #expect(IncidentFiles.state(in: quarantine) == "abandoned")
        let text = try String(contentsOfFile: quarantine + "/incident.txt", encoding: .utf8)
        #expect(text.hasPrefix("State: abandoned.") && !text.contains("State: pending"), "\(text.prefix(300))")
    }

    /// A run stopped after the swap and its journal's `done`, before the incident's last rewrite:
    /// the next run marks the incident complete (a review's stayed "pending" for ever).
    @Test func aFallbackStoppedBeforeItsIncidentsLastRewriteIsCompletedByTheNextRun() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
        let stopped = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { if $0 == .fallbackSwapped { throw InjectedFailure() } })
        #expect(stopped.status == .failed)
        let quarantine = try Self.onlyQuarantine(of: fixture)
        #expect(IncidentFiles.state(in: quarantine) == "pending")
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).version == "V2", "the clean store is in place")
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.count == 1 && next.recovered.first?.contains("its incident is now marked complete") == true, "\(next.recovered)")
        #expect(next.status == .alreadyCurrent, "\(next.status)")
        #expect(IncidentFiles.state(in: quarantine) == "complete")
        #expect(try !String(contentsOfFile: quarantine + "/incident.txt", encoding: .utf8).contains("State: "))
        let again = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(again.recovered.isEmpty, "once")
    }

    /// A backup folder too full for the backup: a store at rest whose rows are in its `-wal` is
    /// copied into the backup folder to be read, and that copy fails (ENOSPC on a 64 KiB
    /// tmpfs). The run says the backup failed, in which folder, and what to free there — it said
    /// "cannot make a private copy to read", advising to free the removed staging folder, and no
    /// phase said the backup failed (a review).
    @Test(.enabled(if: FullDisk.isAvailable, "needs root and tmpfs mounts (a full disk is simulated with a 64 KiB tmpfs)"))
    func aBackupFolderTooFullForTheBackupSaysTheBackupFailed() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        try UpgradeFixture.moveEntriesIntoWAL(of: store, table: "ZCAT")
        let disk = try FullDisk(at: fixture.directory.path("full-backups"))
        defer { disk.unmount() }
        let before = try fixture.appFiles()
        var options = fixture.options()
        options.backupDirectory = disk.path
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options)
        #expect(report.status == .failed && report.exitStatus == .ioError, "\(report.status) \(report.error?.message ?? "")")
        let error = try #require(report.error)
        #expect(error.message.hasPrefix("the backup of \(store) failed: the store and its sidecars could not be copied into the backup folder \(disk.path) to be read: "), "\(error.message)")
        #expect(error.message.contains("No space left on device") && !error.message.contains("private copy"), "\(error.message)")
        #expect(error.hint == "free space in \(disk.path) (the store and its -wal are copied there, then snapshotted and compressed) or raise the file-size limit (ulimit -f), or back up into another folder; then run the command again")
        #expect(report.phases.map(\.name) == ["read", "backup"] && report.phases.last?.status == "failed", "\(report.phases)")
        #expect(report.refusals.isEmpty && report.fallback == nil)
        #expect(try fixture.appFiles() == before, "the store, byte for byte, and nothing beside it")
        #expect(BackupFixtures.fileNames(in: disk.path) == [])
    }

    /// A fallback that fails — an error, not a kill — after its swap, before its last rewrite:
    /// the clean store is in place, so the run ends as a fallback (exit 5, `fellBackToClean`)
    /// whose error says the store was replaced, where the original is and what failed. It ended
    /// `failed` (exit 70), a status that says the store is the original. Whether the incident
    /// could still be marked complete (an injected failure) or not (the quarantine folder made
    /// unwritable, so the last rewrite itself fails: `chattr +i` for root), the hint says what
    /// to do, and the next run leaves nothing unfinished.
    @Test(arguments: [false, true])
    func aFallbackFailingAfterItsSwapEndsAsAFallbackSayingSo(folderUnwritable: Bool) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
        var lock: UnwritableFolder?
        defer { lock?.restore() }
        let report = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { stage in
                guard stage == .fallbackSwapped else { return }
                guard folderUnwritable else { throw FailedThere() }
                lock = try UnwritableFolder(try Self.onlyQuarantine(of: fixture))
            })
        lock?.restore()
        let quarantine = try Self.onlyQuarantine(of: fixture)
        #expect(report.status == .fellBackToClean && report.exitStatus == .fellBackToClean, "\(report.status) \(report.error?.message ?? "")")
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).version == "V2", "the clean store is in place")
        let error = try #require(report.error)
        #expect(error.exitStatus == 5)
        #expect(error.message.hasPrefix("\(store) was replaced by a clean V2 store and the original quarantined in \(quarantine), but the fallback's records could not be finished: "), "\(error.message)")
        #expect(!error.message.contains("not replaced") && !error.message.contains("the store is the original"), "\(error.message)")
        let state = folderUnwritable ? "pending" : "complete"
        #expect(error.message.hasSuffix("; the incident there is marked \(state)"), "\(error.message)")
        #expect(IncidentFiles.state(in: quarantine) == state)
        #expect(report.fallback?.state == state)
        if folderUnwritable {
            #expect(error.message.contains("cannot write \(quarantine)/incident.json: "), "\(error.message)")
            #expect(error.hint == "the clean store is in place and can be used; check free space in \(quarantine), then run the same command again with the same --backup-dir: it marks the incident complete without redoing the fallback; \(quarantine)/incident.txt says how to put the original back")
        } else {
            #expect(error.hint?.hasPrefix("the clean store is in place and can be used; \(quarantine)/incident.txt says how to put the original back") == true, "\(error.hint ?? "")")
        }
        #expect(report.phases.last?.name == "fallback" && report.phases.last?.detail.contains("then its records could not be finished") == true)
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.count == (folderUnwritable ? 1 : 0), "\(next.recovered)")
        #expect(next.status == .alreadyCurrent, "\(next.status)")
        #expect(IncidentFiles.state(in: quarantine) == "complete")
    }

    /// A run stopped once its quarantine folder is made, before it salvaged or moved anything:
    /// the folder says so (`preparing`), and the next run marks it abandoned. Until stop 25 such
    /// a folder held nothing that said what it was.
    @Test func aFallbackStoppedWhileItPreparesIsMarkedAbandonedByTheNextRun() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let store = try fixture.catsStore(cats: 2_000, owners: 5, catalog: catalog)
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
        let before = try fixture.appFiles()
        let stopped = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: fixture.options(.clean), progress: nil, cancellation: nil,
            faultInjection: { if $0 == .fallbackPreparing { throw InjectedFailure() } })
        #expect(stopped.status == .failed)
        #expect(try fixture.appFiles() == before)
        let quarantine = try Self.onlyQuarantine(of: fixture)
        #expect(try Self.intentState(in: quarantine) == "preparing")
        let next = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(next.recovered.count == 1 && next.recovered.first?.contains("stopped while it prepared") == true, "\(next.recovered)")
        #expect(try Self.intentState(in: quarantine) == "abandoned")
        #expect(try fixture.appFiles() == before, "the store was never touched")
        let again = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.keep))
        #expect(again.recovered.isEmpty, "once")
    }

    /// A quarantine folder a live run holds is not the next run's to finish or undo: a second
    /// run of the same store must not undo the first's swap as if it had been killed.
    @Test func aQuarantineALiveRunHoldsIsLeftAlone() throws {
        let fixture = try UpgradeFixture()
        let store = fixture.appFolder + "/S.sqlite"
        try StoreFixtureBuilder.database(at: store, sql: "CREATE TABLE t (a)")
        let quarantine = fixture.backups + "/quarantine/S.sqlite.20261126T000000Z"
        try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: true)
        let intent = FallbackIntent(
            store: store, quarantine: quarantine, cleanDevice: 0, cleanInode: 0, sidecarMoves: [],
            mainMove: FallbackIntent.Move(from: store, to: quarantine + "/S.sqlite"), state: "replacing", createdAt: "20261126T000000Z")
        try intent.write(into: quarantine)
        let held = try #require(QuarantineLock(folder: quarantine))
        #expect(QuarantineLock(folder: quarantine) == nil, "one holder at a time")
        #expect(try FallbackIntent.finishInterrupted(store: store, backupFolder: fixture.backups).isEmpty)
        #expect(try Self.intentState(in: quarantine) == "replacing")
        held.release()
        #expect(try FallbackIntent.finishInterrupted(store: store, backupFolder: fixture.backups).count == 1)
        #expect(try Self.intentState(in: quarantine) == "abandoned")
    }

    /// A quarantine folder a run left when it was killed between making it and publishing its
    /// journal (empty, or holding only the journal's partial temporary): nothing moved into it,
    /// nothing says what it was; the next run removes it (a CI run's kill landed there, and the
    /// folder stayed with no record). A folder holding anything else, or held by a live run, stays.
    @Test func anEmptyQuarantineFolderAKilledRunLeftIsRemoved() throws {
        let fixture = try UpgradeFixture()
        let store = fixture.appFolder + "/S.sqlite"
        try StoreFixtureBuilder.database(at: store, sql: "CREATE TABLE t (a)")
        let root = fixture.backups + "/quarantine"
        let empty = root + "/S.sqlite.20261127T000000Z", partial = root + "/S.sqlite.20261127T000001Z"
        let other = root + "/S.sqlite.20261127T000002Z", held = root + "/S.sqlite.20261127T000003Z"
        for folder in [empty, partial, other, held] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        #expect(FileManager.default.createFile(atPath: partial + "/" + TemporaryItems.name(label: "intent.json", random: "abc123"), contents: Data("{".utf8)))
        #expect(FileManager.default.createFile(atPath: other + "/notes.txt", contents: Data("kept".utf8)))
        let lock = try #require(QuarantineLock(folder: held))
        let lines = try FallbackIntent.finishInterrupted(store: store, backupFolder: fixture.backups)
        #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("removed an empty quarantine folder") }, "\(lines)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).sorted() == [(other as NSString).lastPathComponent, (held as NSString).lastPathComponent])
        lock.release()
        #expect(try FallbackIntent.finishInterrupted(store: store, backupFolder: fixture.backups).count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == [(other as NSString).lastPathComponent])
    }

    private static func intentState(in folder: String) throws -> String {
        try JSONDecoder().decode(FallbackIntent.self, from: Data(contentsOf: URL(fileURLWithPath: folder + "/intent.json"))).state
    }

    private static func onlyQuarantine(of fixture: UpgradeFixture) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.backups + "/quarantine")
        #expect(names.count == 1, "\(names)")
        return fixture.backups + "/quarantine/" + (try #require(names.first))
    }
}

/// The shared samples: WAL stores, a store without its `-shm`, and every lineage store upgraded
/// to its latest version.
@Suite(.enabled(if: Samples.available, "../shared/samples is absent"))
struct StoreUpgraderSampleTests {
    @Test(arguments: [true, false])
    func theSyncMetadataV3StoreWithItsLiveWALIsUpgraded(keepsShm: Bool) throws {
        let fixture = try UpgradeFixture()
        let catalog = try Catalog.load(path: try fixture.directory.copySampleItem("lineages/SyncMetadata/SyncMetadata.xcdatamodeld"))
        let store = try fixture.directory.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let moved = fixture.appFolder + "/SyncMetadata.sqlite"
        for suffix in ["", "-wal", "-shm"] {
            if suffix == "-shm" && !keepsShm { try FileManager.default.removeItem(atPath: store + suffix); continue }
            try FileManager.default.moveItem(atPath: store + suffix, toPath: moved + suffix)
        }
        let report = StoreUpgrader.upgrade(store: moved, catalog: catalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.published?.rowsByEntity == ["SyncableSettingsMetadata": 2, "SyncFeatureEntity": 2], "the rows only the -wal held")
        #expect(report.published?.settledSidecars.contains(moved + "-wal") == true)
        #expect(!FileManager.default.fileExists(atPath: moved + "-wal"), "the published store is checkpointed: no -wal beside it")
        #expect(try UpgradeFixture.count("ZSYNCFEATUREENTITY", in: moved) == 2)
        let match = StoreMatcher.match(storePath: moved, catalog: catalog)
        #expect(match.outcome == .exact && match.version == "SyncMetadata 4")
        #expect(try fixture.strayNames(besides: moved) == [])
    }

    @Test func everyPostsRevisedStoreIsUpgradedToVersion4() throws {
        let fixture = try UpgradeFixture()
        let model = try fixture.directory.copySampleItem("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld")
        let path = fixture.directory.path("posts.json")
        let json = LineageCatalogs.postsRevised(model: model)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        let catalog = try Catalog.load(path: path)
        for n in 1...3 {
            let copied = try fixture.directory.copySample("lineages/PostsRevised/CoreDataMigration_Example_\(n).sqlite")
            let store = fixture.appFolder + "/Posts\(n).sqlite"
            try FileManager.default.moveItem(atPath: copied, toPath: store)
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: copied + suffix) {
                try FileManager.default.moveItem(atPath: copied + suffix, toPath: store + suffix)
            }
            let posts = try UpgradeFixture.count("ZPOST", in: store)
            let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
            #expect(report.status == .upgraded, "store \(n): \(report.error?.message ?? "") \(report.refusals.map(\.message))")
            let match = StoreMatcher.match(storePath: store, catalog: catalog)
            #expect(match.outcome == .exact && match.version == "CoreDataMigration_Example 4", "store \(n)")
            #expect(try UpgradeFixture.count("ZPOST", in: store) == posts)
        }
    }

    @Test func theEmployeesStoresAreRefusedWithoutTheirCustomStageAndUpgradedWithIt() throws {
        let fixture = try UpgradeFixture()
        let model = try fixture.directory.copySampleItem("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        func catalog(map: Bool) throws -> Catalog {
            let path = fixture.directory.path("employees-\(map).json")
            let json = LineageCatalogs.employees(model: model, map: map)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
            return try Catalog.load(path: path)
        }
        for name in ["MWKCoreDataTests.sqlite", "MWKCoreDataTests2.sqlite"] {
            let copied = try fixture.directory.copySample("lineages/Employees/\(name)")
            let store = fixture.appFolder + "/" + name
            try FileManager.default.moveItem(atPath: copied, toPath: store)
            let before = try fixture.appFiles()
            let refused = StoreUpgrader.upgrade(store: store, catalog: try catalog(map: false), options: fixture.options())
            #expect(refused.status == .refused && Set(refused.refusals.compactMap(\.coreDataErrorCode)) == [134110])
            #expect(try fixture.appFiles() == before)
            let report = StoreUpgrader.upgrade(store: store, catalog: try catalog(map: true), options: fixture.options())
            #expect(report.status == .upgraded, "\(name): \(report.error?.message ?? "") \(report.refusals.map(\.message))")
            #expect(StoreMatcher.match(storePath: store, catalog: try catalog(map: true)).version == "MWKCoreDataTests3")
            try FileManager.default.removeItem(atPath: store)
        }
    }
}
