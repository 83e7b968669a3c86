import Foundation
import Testing
@testable import StoreRescue

/// Review rv6 R3: an undamaged store whose hashes two versions of the catalog share (V2 and
/// V2b: `match` says ambiguous), not at the target (V3). It was refused as `storeNotIdentified`,
/// the refusal advising `--on-failure clean`, and `upgrade --on-failure clean` replaced the
/// healthy store by a clean one. Now: when the plan can start from only one of the tied versions
/// (the stages name one; or they are one model but for their identifiers), the store is taken as
/// it and migrated, as Core Data would; otherwise the catalog must change (`versionsShareHashes`),
/// and `--on-failure clean` leaves the store as it is.
@Suite struct AmbiguousStoreBeforeTheTargetTests {
    /// How the catalog names V2 and V2b.
    enum Tie {
        /// The stages name V1, V2 and V3; V2b is named by none.
        case stagesNameOne
        /// No stages; V2b is V2 but for its identifiers.
        case identifiersOnly
        /// No stages; V2b differs from V2 in what hashes leave out (a default value), so the
        /// hop to V3 may differ with the version the store is.
        case modelsDiffer
    }

    private func catalog(_ fixture: UpgradeFixture, _ tie: Tie) throws -> Catalog {
        let path = fixture.directory.path("cats-tie-\(tie).json")
        func v2(default value: Int?) -> String {
            #"""
            "entities": [
              {"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true\#(value.map { #", "default": \#($0)"# } ?? "")}]},
              {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]
            """#
        }
        let stages = tie == .stagesNameOne ? #", "stages": [{"kind": "lightweight", "versions": ["V1", "V2", "V3"]}]"# : ""
        let json = """
            {"formatVersion": 1, "app": "Cats", "current": "V3", "versions": [
              {"name": "V1", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]},
              {"name": "V2", \(v2(default: nil)), "identifiers": ["2"]},
              {"name": "V2b", \(v2(default: tie == .modelsDiffer ? 7 : nil)), "identifiers": ["2b"]},
              {"name": "V3", "identifiers": ["3"], "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true},
                                               {"name": "nick", "type": "String", "optional": true}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]}]\(stages)}
            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        return try Catalog.load(path: path)
    }

    /// A V2 store (V2's identifiers) with `cats` cats of age 3 and one owner.
    private func v2Store(_ fixture: UpgradeFixture, _ catalog: Catalog, cats: Int = 30) throws -> String {
        let store = try fixture.catsStore(cats: cats, owners: 1, catalog: catalog, at: "V2", catAge: 3)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .ambiguous && match.versionsWithItsHashes == ["V2", "V2b"], "\(match.outcome) \(match.versionsWithItsHashes)")
        return store
    }

    // MARK: - The tie resolved: migrated as the one version the plan can start from

    /// `match` predicts what `migrate` does: the migration from the tied version the plan starts
    /// from (it said "a staged migration cannot tell them apart" while `migrate` went on), and
    /// the match itself still says ambiguous. Where the tie is not resolved, it says so.
    @Test(arguments: [Tie.stagesNameOne, .identifiersOnly, .modelsDiffer])
    func matchPredictsWhatMigrateDoes(_ tie: Tie) throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, tie)
        let store = try v2Store(fixture, catalog)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .ambiguous)
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: fixture.directory.path("out-\(tie).sqlite"), options: MigrationOptions(isDryRun: true))
        if tie == .modelsDiffer {
            #expect(match.diagnosis.prediction == .ambiguousVersion)
            #expect(report.status != .wouldMigrate, "\(report.status)")
        } else {
            #expect(match.diagnosis.prediction == .migrates, "\(match.diagnosis.prediction): \(match.diagnosis.summary)")
            #expect(match.diagnosis.stages == ["V2 → V3 (lightweight)"] || match.diagnosis.stages.count == 1, "\(match.diagnosis.stages)")
            #expect(match.diagnosis.reasons.contains { $0.contains("the app's migration starts from V2") }, "\(match.diagnosis.reasons)")
            #expect(report.status == .wouldMigrate, "\(report.status) \(report.error?.message ?? "")")
            #expect(report.source?.version == "V2")
        }
    }

    @Test(arguments: [Tie.stagesNameOne, .identifiersOnly])
    func upgradeMigratesTheStoreFromTheOneTiedVersionThePlanStartsFrom(_ tie: Tie) throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, tie)
        let store = try v2Store(fixture, catalog)

        let predicted = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(dryRun: true))
        #expect(predicted.status == .upgraded && predicted.exitStatus == .success, "\(predicted.status) \(predicted.refusals.map(\.message))")
        #expect(predicted.source?.version == "V2" && predicted.target?.version == "V3")
        #expect(predicted.migration?.hops.map { "\($0.from) → \($0.to)" } == ["V2 → V3"])

        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .upgraded && report.exitStatus == .success, "\(report.status) \(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        #expect(report.fallback == nil)
        #expect(report.notes.contains { $0.contains("V2, V2b") && $0.contains("taken as V2") }, "\(report.notes)")
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .exact && match.version == "V3", "\(match.outcome) \(match.version ?? "")")
        #expect(try UpgradeFixture.count("ZCAT", in: store, where: "ZAGE = 3") == 30)
        #expect(try UpgradeFixture.count("ZOWNER", in: store) == 1)
    }

    @Test(arguments: [Tie.stagesNameOne, .identifiersOnly])
    func migrateMigratesTheStoreFromTheOneTiedVersionThePlanStartsFrom(_ tie: Tie) throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, tie)
        let store = try v2Store(fixture, catalog)
        let output = fixture.directory.path("out.sqlite")
        let dry = StoreMigrator.migrate(store: store, catalog: catalog, to: output, options: MigrationOptions(isDryRun: true))
        #expect(dry.exitStatus == .success, "\(dry.status) \(dry.refusals.map(\.message))")
        let run = StoreMigrator.migrate(store: store, catalog: catalog, to: output, options: MigrationOptions())
        #expect(run.status == .migrated, "\(run.status) \(run.refusals.map(\.message)) \(run.error?.message ?? "")")
        #expect(run.source?.version == "V2" && run.result?.verification.matchOutcome == "exact")
        #expect(try UpgradeFixture.count("ZCAT", in: output, where: "ZAGE = 3") == 30)
    }

    // MARK: - The tie not resolved: the catalog's fault, never the clean fallback

    @Test func anUnresolvedTieIsTheCatalogsFaultAndTheCleanFallbackLeavesTheStore() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, .modelsDiffer)
        let store = try v2Store(fixture, catalog)
        let before = try fixture.appFiles()
        for dryRun in [true, false] {
            let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean, dryRun: dryRun))
            #expect(report.status == .refused && report.exitStatus == .refused, "dry run \(dryRun): \(report.status) \(report.refusals.map(\.message))")
            #expect(report.fallback == nil && report.backup == nil)
            #expect(report.refusals.map(\.code.rawValue) == ["versionsShareHashes"], "\(report.refusals.map(\.code))")
            #expect(report.refusals.allSatisfy { $0.isCatalogsFault })
            let remedy = report.refusals.first?.remedy ?? ""
            #expect(remedy.contains("--from V2") && remedy.contains("--from V2b") && !remedy.contains("--on-failure"), "\(remedy)")
            #expect(report.notes.contains { $0.hasPrefix("not falling back to a clean store: the catalog must change") }, "\(report.notes)")
            let text = report.renderText()
            #expect(!text.contains("Run with --on-failure clean") && text.contains("the catalog must change"), "\(text)")
            #expect(try fixture.appFiles() == before, "dry run \(dryRun): the store changed")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.backups + "/quarantine"))

        // migrate refuses it too (exit 3), naming --from with the tied versions.
        let migrate = StoreMigrator.migrate(store: store, catalog: catalog, to: fixture.directory.path("out.sqlite"), options: MigrationOptions())
        #expect(migrate.exitStatus == .refused, "\(migrate.status)")
        #expect(migrate.refusals.contains { $0.remedy.contains("--from V2 or --from V2b") }, "\(migrate.refusals.map(\.remedy))")
    }

    /// A custom stage V1 → V2 between versions of the same hashes (96b4510: never taken as the
    /// target V2): refused as the catalog's, and `--on-failure clean` leaves it.
    @Test func aTieAcrossACustomStageIsNeverFallenBackToClean() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsSameHashesCatalog()
        let store = try fixture.catsStore(cats: 2, owners: 1, catalog: catalog)
        let before = try fixture.appFiles()
        for dryRun in [true, false] {
            let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean, dryRun: dryRun))
            #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status) \(report.refusals.map(\.message))")
            #expect(report.refusals.map(\.code.rawValue) == ["versionsShareHashes"], "\(report.refusals.map(\.code))")
            #expect(try fixture.appFiles() == before)
        }
    }

    /// A damaged store that is ambiguous is still a store to save: the fallback applies.
    @Test func aDamagedAmbiguousStoreKeepsTheFallback() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, .modelsDiffer)
        let store = try v2Store(fixture, catalog, cats: 200)
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0])
        let kept = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options())
        #expect(kept.status == .refused && kept.refusals.allSatisfy { !$0.isCatalogsFault }, "\(kept.refusals.map(\.code))")
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(.clean))
        #expect(report.status == .fellBackToClean, "\(report.status) \(report.refusals.map(\.code)) \(report.error?.message ?? "")")
    }

    // MARK: - adopt

    /// `adopt` stamps the version a store is: a tie is refused, naming `--as` with each version.
    @Test func adoptNamesAsWithTheTiedVersions() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, .identifiersOnly)
        let store = try v2Store(fixture, catalog)
        let before = try fixture.appFiles()
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(mode: .adopt(as: nil)))
        #expect(report.status == .refused && report.exitStatus == .refused, "\(report.status)")
        let remedies = report.refusals.map(\.remedy)
        #expect(remedies.contains { $0.contains("--as V2 or --as V2b") } && !remedies.contains { $0.contains("--from") }, "\(remedies)")
        #expect(try fixture.appFiles() == before)
    }

    // MARK: - What migrate says of the match (review rv6 L2)

    /// "matched exactly" only when match said exact: an ambiguous store, and one exactly at a
    /// version after the catalog's current one (match: newer), are said as they were matched.
    @Test func migrateSaysWhatTheMatchReallyWas() throws {
        let fixture = try UpgradeFixture()
        let tied = try catalog(fixture, .stagesNameOne)
        let store = try v2Store(fixture, tied)
        let ambiguous = StoreMigrator.migrate(store: store, catalog: tied, to: fixture.directory.path("out.sqlite"), options: MigrationOptions(isDryRun: true))
        #expect(ambiguous.source?.matchOutcome == "ambiguous")
        let text = ambiguous.renderText()
        #expect(!text.contains("matched exactly") && text.contains("V2 (matched by its hashes, which other versions share too (match: ambiguous))"), "\(text)")

        let past = try fixture.catsCatalog(
            named: "cats-past.json", stage: #"{"kind": "custom", "from": "V1", "to": "V2", "map": {"Cat": {"age": "0"}}}"#, current: "V1")
        let other = try UpgradeFixture()
        let v1 = try other.catsStore(cats: 2, owners: 1, catalog: past)
        let upgraded = StoreUpgrader.upgrade(store: v1, catalog: past, options: other.options())
        #expect(upgraded.published?.matchOutcome == "newer", "\(upgraded.status) \(upgraded.error?.message ?? "")")
        let newer = StoreMigrator.migrate(store: v1, catalog: past, to: other.directory.path("out.sqlite"), options: MigrationOptions(isDryRun: true))
        #expect(newer.source?.matchOutcome == "newer")
        let newerText = newer.renderText()
        #expect(!newerText.contains("matched exactly)") && newerText.contains("V2 (matched exactly; match says newer: a version after the catalog's current one)"), "\(newerText)")
    }

    // MARK: - What a "newer" store is told (review rv6 L3)

    /// A V1 store with a column of its own (no version has it) is `newer` to match, but nothing
    /// says a newer app wrote it: `--from V1` is refused saying only what is known.
    @Test func aStoreNewerOnlyByAColumnOfItsOwnIsNotSaidToBeANewerAppsStore() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let plusPath = fixture.directory.path("cats-v1-color.json")
        let plus = """
            {"formatVersion": 1, "app": "Cats", "versions": [
              {"name": "V1color", "entities": [
                {"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "color", "type": "String", "optional": true}]},
                {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]}]}
            """
        #expect(FileManager.default.createFile(atPath: plusPath, contents: Data(plus.utf8)))
        let store = fixture.appFolder + "/Cats.sqlite"
        try StoreCreator.create(model: try #require(try Catalog.load(path: plusPath).version(named: "V1color")).model, versionIdentifiers: nil, at: store)
        let match = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(match.outcome == .newer && match.version == "V1", "\(match.outcome) \(match.version ?? "")")
        var options = fixture.options(dryRun: true)
        options.sourceVersion = "V1"
        let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .storeNewer, "\(refusal.code)")
        #expect(!refusal.message.contains("newer app wrote"), "\(refusal.message)")
        #expect(refusal.message.contains("the store has what no version of the catalog has (a newer app's version, or one the catalog lacks)"), "\(refusal.message)")
    }

    // MARK: - Identifiers (review rv6 L1)

    /// A store whose metadata is exactly one tied version's (V2: its identifiers "2") is at a
    /// target that shares its hashes (V2b) as it is: not restamped, so `--to V2b` then `--to V2`
    /// no longer restamp it from one to the other and back.
    @Test func aStoreStampedAsATiedVersionIsNotRestampedBackAndForth() throws {
        let fixture = try UpgradeFixture()
        let catalog = try catalog(fixture, .identifiersOnly)
        let store = try v2Store(fixture, catalog)
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
        guard case .read(let metadata, _) = try StoreMetadata.read(from: connection) else {
            Issue.record("the store's metadata could not be read")
            return
        }
        #expect(metadata.versionIdentifiers == ["2"])
        let before = try fixture.appFiles()
        for target in ["V2b", "V2", "V2b"] {
            for dryRun in [true, false] {
                var options = fixture.options(dryRun: dryRun)
                options.targetVersion = target
                let report = StoreUpgrader.upgrade(store: store, catalog: catalog, options: options)
                #expect(report.status == .alreadyCurrent && report.exitStatus == .nothingToDo, "--to \(target): \(report.status) \(report.error?.message ?? "")")
                if target == "V2b" {
                    #expect(report.notes.contains { $0.contains("names V2 exactly") && $0.contains("not restamped") }, "\(report.notes)")
                    #expect(!report.renderText().contains("Phase 1"), "nothing is stamped: \(report.renderText())")
                    // The JSON says so too: the store's identifiers differ, yet nothing is stamped.
                    let json = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
                    let adoption = try #require(json["adoption"] as? [String: Any], "\(json)")
                    #expect(adoption["needed"] as? Bool == false && (adoption["changes"] as? [Any])?.isEmpty == true, "\(adoption)")
                }
                #expect(try fixture.appFiles() == before, "--to \(target) (dry run \(dryRun)) changed the store")
            }
        }
        // adopt --as V2b is asked for: it stamps.
        let adopted = StoreUpgrader.upgrade(store: store, catalog: catalog, options: fixture.options(mode: .adopt(as: "V2b")))
        #expect(adopted.status == .adoptedOnly, "\(adopted.status) \(adopted.error?.message ?? "")")
    }
}

