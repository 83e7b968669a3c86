import Foundation
import Testing
@testable import StoreRescue

/// `migrate` and `upgrade` of a store whose own data already broke its model (orders with no
/// customer, a required code NULL: Core Data validates only at save): exit 0 with the gaps
/// reported, in text and JSON; a gap the catalog's step makes is refused (exit 3).
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

    /// V2 makes the customer and the code optional: the store's gaps are no gaps there, so the
    /// forecast lists none (the real run reports none either).
    @Test func aDryRunListsOnlyWhatTheTargetStillRequires() throws {
        // The same catalog with V2's code and customer optional (V1 is unchanged).
        var catalogJSON = Self.catalog()
        let v2 = try #require(catalogJSON.range(of: #"{"name": "V2""#))
        catalogJSON.replaceSubrange(v2.lowerBound..., with: catalogJSON[v2.lowerBound...]
            .replacingOccurrences(of: #"{"name": "code", "type": "String"}"#, with: #"{"name": "code", "type": "String", "optional": true}"#)
            .replacingOccurrences(of: #""inverse": "orders"}"#, with: #""inverse": "orders", "optional": true}"#))
        // Five: V2's code and customer, beside V1's and V2's to-many orders and V2's note.
        #expect(catalogJSON.components(separatedBy: #""optional": true}"#).count - 1 == 5)
        let fixture = try MigrationFixture(catalogJSON: catalogJSON)
        let store = try store(fixture)
        let args = ["migrate", store, "--catalog", fixture.directory.path("catalog.json"), "--out", fixture.directory.path("v2.sqlite")]
        let dry = try CommandRunner.run(args + ["--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect((try dry.json()["requiredValuesAlreadyMissing"] as? [Any])?.isEmpty == true, "\(dry.stdout)")
        let real = try CommandRunner.run(args + ["--json"])
        #expect(real.status == 0, "\(real.stderr)")
        let verification = (try real.json()["result"] as? [String: Any])?["verification"] as? [String: Any]
        #expect((verification?["preexistingMissingValues"] as? [Any])?.isEmpty == true)
    }

    /// The forecast is only a forecast: when it cannot be taken (here: over 100,000 distinct
    /// stray Z_ENT values, more than the census reads), the dry run says so in a note and still
    /// reports the plan, exit 0.
    @Test func aForecastThatCannotBeTakenIsANoteNotAnError() throws {
        let fixture = try MigrationFixture(catalogJSON: Self.catalog())
        let store = try store(fixture)
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("""
                WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100100)
                INSERT INTO ZORDER (Z_PK, Z_ENT, Z_OPT, ZCODE) SELECT x + 1000, x + 1000, 1, 'c' FROM n;
                """)
        }
        let dry = try CommandRunner.run(["migrate", store, "--catalog", fixture.directory.path("catalog.json"),
                                         "--out", fixture.directory.path("v2.sqlite"), "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stdout) \(dry.stderr)")
        let json = try dry.json()
        #expect(json["status"] as? String == "wouldMigrate")
        #expect((json["notes"] as? [String])?.contains { $0.hasPrefix("the required values the store already lacks could not be counted: ") } == true,
                "\(json["notes"] ?? "")")
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

    /// The catalog's didMigrate deletes Bob: his order loses its customer (the gap now has three
    /// orders, one of which had a customer). That gap is the catalog step's doing (on the device the stage's save fails validation): refused, exit 3,
    /// naming the stage and what to change; nothing written.
    @Test func aGapTheCatalogsStepMakesIsRefused() throws {
        let stage = #"{"kind": "custom", "from": "V1", "to": "V2", "didMigrate": [{"delete": "Customer", "where": "name = 'Bob'"}]}"#
        let fixture = try MigrationFixture(catalogJSON: Self.catalog(stage: stage))
        let store = try store(fixture)
        let output = fixture.directory.path("v2.sqlite")
        let run = try CommandRunner.run(["migrate", store, "--catalog", fixture.directory.path("catalog.json"), "--out", output])
        #expect(run.status == 3, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("after the custom stage "), "\(run.stderr)")
        #expect(run.stderr.contains(
            "1 Order objects have no value for the required customer that had one before the migration (3 lack it now, against 2 before)"),
            "\(run.stderr)")
        #expect(run.stderr.contains("correct the stage's steps"), "\(run.stderr)")
        #expect(!run.stderr.contains("report a bug"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// The catalog's didMigrate deletes the loose order X1 and Bob: still two orders without a
    /// customer, but B1 had one. Objects are compared, not counts: refused, exit 3, in text and
    /// JSON; nothing written.
    @Test func aGapTheCatalogsStepMovesToAnotherObjectIsRefused() throws {
        let stage = #"{"kind": "custom", "from": "V1", "to": "V2", "didMigrate": [{"delete": "Order", "where": "code = 'X1'"}, "#
            + #"{"delete": "Customer", "where": "name = 'Bob'"}]}"#
        let fixture = try MigrationFixture(catalogJSON: Self.catalog(stage: stage))
        let store = try store(fixture)
        let output = fixture.directory.path("v2.sqlite")
        let arguments = ["migrate", store, "--catalog", fixture.directory.path("catalog.json"), "--out", output]
        let expected = "1 Order objects have no value for the required customer that had one before the migration (2 lack it now, against 2 before)"
        let run = try CommandRunner.run(arguments)
        #expect(run.status == 3, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("after the custom stage ") && run.stderr.contains(expected), "\(run.stderr)")
        let json = try CommandRunner.run(arguments + ["--json"])
        #expect(json.status == 3, "\(json.stdout) \(json.stderr)")
        #expect(json.stdout.contains(expected), "\(json.stdout)")
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
        #expect(run.status == 3, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains(store), "\(run.stderr)")
        #expect(!run.stderr.contains(".upgrade"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
        // The catalog is at fault, not the store: no fallback to a clean store either.
        let clean = try CommandRunner.run(["upgrade", store, "--catalog", fixture.directory.path("catalog.json"),
                                           "--backup-dir", fixture.directory.path("backups"), "--on-failure", "clean", "--json"])
        #expect(clean.status == 3, "\(clean.stdout) \(clean.stderr)")
        #expect(try clean.json()["fallback"] is NSNull, "\(clean.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }
}
