import Foundation
import Testing
@testable import StoreRescue

/// `migrate` and `upgrade` of a store whose own data already broke its model (orders with no
/// customer, a required code NULL: Core Data validates only at save): exit 0 with the gaps
/// reported, in text and JSON; a gap the catalog's step makes still exits 70.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct MigratePreexistingGapsCommandTests {
    /// V1 Customer(name) ←→ Order(code) with a required to-one Order.customer; V2 adds an
    /// optional Order.note. `stage` replaces the lightweight stage.
    static func catalog(stage: String = #"{"kind": "lightweight", "from": "V1", "to": "V2"}"#) -> String {
        func version(_ name: String, _ orderExtra: String) -> String {
            """
            {"name": "\(name)", "entities": [
              {"name": "Customer", "attributes": [{"name": "name", "type": "String"}],
               "relationships": [{"name": "orders", "destination": "Order", "inverse": "customer", "toMany": true, "optional": true}]},
              {"name": "Order", "attributes": [{"name": "code", "type": "String"}\(orderExtra)],
               "relationships": [{"name": "customer", "destination": "Customer", "inverse": "orders"}]}]}
            """
        }
        return """
            {"formatVersion": 1, "app": "Shop", "versions": [
              \(version("V1", "")),
              \(version("V2", #", {"name": "note", "type": "String", "optional": true}"#))],
             "stages": [\(stage)]}
            """
    }

    /// A V1 store made by `storerescue create`: Ann (order A1), Bob (order B1), two orders with
    /// no customer, and B1's required code NULL.
    private func store(_ fixture: MigrationFixture, in folder: String? = nil) throws -> String {
        let path = fixture.directory.path((folder.map { $0 + "/" } ?? "") + "Shop.sqlite")
        let created = try CommandRunner.run(["create", "--catalog", fixture.directory.path("catalog.json"), "--version", "V1", path])
        #expect(created.status == 0, "\(created.stderr)")
        try fixture.edit(path, at: "V1") { context in
            let ann = try context.insert("Customer", values: ["name": .text("Ann")])
            let bob = try context.insert("Customer", values: ["name": .text("Bob")])
            try context.link("Order", key: try context.insert("Order", values: ["code": .text("A1")]), "customer", to: ann)
            try context.link("Order", key: try context.insert("Order", values: ["code": .null]), "customer", to: bob)
            for code in ["X1", "X2"] { try context.insert("Order", values: ["code": .text(code)]) }
        }
        return path
    }

    @Test func aStoreThatAlreadyBrokeItsModelMigratesWithExit0AndSaysSo() throws {
        let fixture = try MigrationFixture(catalogJSON: Self.catalog())
        let catalog = fixture.directory.path("catalog.json")
        let store = try store(fixture)

        let text = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", fixture.directory.path("v2.sqlite")])
        #expect(text.status == 0, "\(text.stdout) \(text.stderr)")
        #expect(text.stdout.contains("2 Order objects already had no customer before the migration (a required relationship); carried as they were"))
        #expect(text.stdout.contains("1 Order objects already had no code before the migration (a required attribute); carried as they were"))
        #expect(text.stdout.contains("0 missing required values"))
        #expect(StoreMatcher.match(storePath: fixture.directory.path("v2.sqlite"), catalog: fixture.catalog).version == "V2")

        let json = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", fixture.directory.path("v2-json.sqlite"), "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let verification = try #require((try json.json()["result"] as? [String: Any])?["verification"] as? [String: Any])
        #expect(verification["missingRequiredValues"] as? Int == 0)
        #expect(verification["problems"] as? [String] == [])
        let gaps = try #require(verification["preexistingMissingValues"] as? [[String: Any]])
        #expect(gaps.map { "\($0["entity"] ?? "").\($0["property"] ?? "") \($0["kind"] ?? "") \($0["objects"] ?? "")/\($0["objectsBefore"] ?? "")" }.sorted()
                == ["Order.code attribute 1/1", "Order.customer relationship 2/2"])
    }

    /// A dry run says before anything is written what the real run will report: the gaps, named
    /// as the target names them, with exit 0; nothing is written and the store is unchanged.
    @Test func aDryRunSaysWhatTheStoreAlreadyLacks() throws {
        let fixture = try MigrationFixture(catalogJSON: Self.catalog())
        let catalog = fixture.directory.path("catalog.json")
        let store = try store(fixture)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let output = fixture.directory.path("v2.sqlite")

        let text = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", output, "--dry-run"])
        #expect(text.status == 0, "\(text.stdout) \(text.stderr)")
        #expect(text.stdout.contains("Dry run: the migration can run; nothing was written."))
        #expect(text.stdout.contains("    - 2 Order objects already have no customer (a required relationship)"), "\(text.stdout)")
        #expect(text.stdout.contains("    - 1 Order objects already have no code (a required attribute)"), "\(text.stdout)")

        let json = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", output, "--dry-run", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let gaps = try #require(try json.json()["requiredValuesAlreadyMissing"] as? [[String: Any]])
        #expect(gaps.map { "\($0["entity"] ?? "").\($0["property"] ?? "") \($0["kind"] ?? "") \($0["objects"] ?? "")" }.sorted()
                == ["Order.code attribute 1", "Order.customer relationship 2"])
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)

        let upgrade = try CommandRunner.run([
            "upgrade", store, "--catalog", catalog, "--backup-dir", fixture.directory.path("backups"), "--dry-run", "--json",
        ])
        #expect(upgrade.status == 0, "\(upgrade.stdout) \(upgrade.stderr)")
        let notes = try #require(try upgrade.json()["notes"] as? [String])
        #expect(notes.contains("2 Order objects already have no customer (a required relationship); carried as they are"), "\(notes)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    /// A store whose data fits its model: the forecast is empty.
    @Test func aDryRunOfAStoreWithoutGapsListsNone() throws {
        let fixture = try MigrationFixture(catalogJSON: Self.catalog())
        let path = fixture.directory.path("Shop.sqlite")
        #expect(try CommandRunner.run(["create", "--catalog", fixture.directory.path("catalog.json"), "--version", "V1", path]).status == 0)
        try fixture.edit(path, at: "V1") { context in
            let ann = try context.insert("Customer", values: ["name": .text("Ann")])
            try context.link("Order", key: try context.insert("Order", values: ["code": .text("A1")]), "customer", to: ann)
        }
        let json = try CommandRunner.run(["migrate", path, "--catalog", fixture.directory.path("catalog.json"), "--out",
                                          fixture.directory.path("v2.sqlite"), "--dry-run", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect((try json.json()["requiredValuesAlreadyMissing"] as? [Any])?.isEmpty == true)
    }

    @Test func upgradeReplacesTheStoreAndNotesWhatItAlreadyLacked() throws {
        let fixture = try MigrationFixture(catalogJSON: Self.catalog())
        try FileManager.default.createDirectory(atPath: fixture.directory.path("app"), withIntermediateDirectories: false)
        let store = try store(fixture, in: "app")
        let run = try CommandRunner.run([
            "upgrade", store, "--catalog", fixture.directory.path("catalog.json"), "--backup-dir", fixture.directory.path("backups"), "--json",
        ])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let json = try run.json()
        #expect(json["status"] as? String == "upgraded")
        #expect((json["notes"] as? [String])?.contains(
            "2 Order objects already had no customer before the migration (a required relationship); carried as they were") == true)
        #expect(StoreMatcher.match(storePath: store, catalog: fixture.catalog).version == "V2")
    }

    /// The catalog's didMigrate deletes Bob: his order loses its customer. That gap is the
    /// migration's: exit 70 as before, nothing written.
    @Test func aGapTheCatalogsStepMakesStillExits70() throws {
        let stage = #"{"kind": "custom", "from": "V1", "to": "V2", "didMigrate": [{"delete": "Customer", "where": "name = 'Bob'"}]}"#
        let fixture = try MigrationFixture(catalogJSON: Self.catalog(stage: stage))
        let store = try store(fixture)
        let output = fixture.directory.path("v2.sqlite")
        let run = try CommandRunner.run(["migrate", store, "--catalog", fixture.directory.path("catalog.json"), "--out", output])
        #expect(run.status == 70, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("3 Order objects have no value for the required customer, against 2 before the migration"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// The same through `upgrade`: the store is left as it was, and the message names the store,
    /// not the workspace file that was removed (before: `…/.upgrade.storerescue-tmp-…/upgraded.sqlite`).
    @Test func upgradeNamesTheStoreWhenItsCheckFails() throws {
        let stage = #"{"kind": "custom", "from": "V1", "to": "V2", "didMigrate": [{"delete": "Customer", "where": "name = 'Bob'"}]}"#
        let fixture = try MigrationFixture(catalogJSON: Self.catalog(stage: stage))
        let store = try store(fixture)
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let run = try CommandRunner.run(["upgrade", store, "--catalog", fixture.directory.path("catalog.json"),
                                         "--backup-dir", fixture.directory.path("backups")])
        #expect(run.status == 70, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains(store), "\(run.stderr)")
        #expect(!run.stderr.contains(".upgrade"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }
}
