import Foundation
import Testing
@testable import StoreRescue

@Suite(.enabled(if: Samples.available, "../shared/samples is absent"))
struct StoreMatcherTests {
    private func kinds(_ result: MatchResult, _ version: String) -> [Difference.Kind] {
        result.candidates.first { $0.version == version }?.differences.map(\.kind) ?? []
    }

    /// Review rv10: the project's damaged Notes store matched exact with exit 0 and "the
    /// migration from V1 cannot be planned"; SQLite's "malformed" was the only sign. It is V1
    /// and it is damaged: both are said, as inspect says the second (65, salvage's advice).
    @Test func aStoreFoundDamagedIsDamagedAndKeepsItsVersion() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("Notes.sqlite")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Damaged/Notes.sqlite"), toPath: store)
        let catalog = try Catalog.load(path: CatalogTestSupport.projectSample("Damaged/catalog.json"))
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(result.outcome == .exact)
        #expect(result.version == "V1")
        #expect(result.storeKind == .damaged)
        #expect(result.diagnosis.prediction == .storeDamaged)
        #expect(result.diagnosis.summary.contains("damaged"))
        #expect(result.diagnosis.reasons.contains { $0.contains("V1") })
        #expect(result.diagnosis.reasons.contains { $0.contains("storerescue salvage") && $0.contains("--on-failure clean") })
        let error = try #require(result.error)
        #expect(error.exitStatus == 65)
        #expect(error.message.contains("malformed"))
        #expect(error.hint?.contains("storerescue salvage") == true)
        #expect(result.exitStatus.rawValue == 65)
        #expect(result.isDamagedOnceMatched)
        let inspected = StoreInspector.inspect(path: store, options: InspectOptions(countsRows: true))
        #expect(inspected.kind == result.storeKind && inspected.error?.hint == error.hint, "what inspect --counts says")
    }

    @Test func pristineStoreMatchesItsVersionAndPredicts134110() throws {
        let fixture = try MatchFixture()
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(result.outcome == .exact)
        #expect(result.version == "V2")
        #expect(result.candidates.first?.version == "V2")
        #expect(result.candidates.first?.score ?? 0 > result.candidates.last?.score ?? 1)
        let physical = result.candidates.first?.differences.filter { $0.impact != .identity } ?? []
        #expect(physical.isEmpty, "no physical drift: \(physical.map(\.detail))")
        #expect(result.diagnosis.prediction == .mandatoryAttributeWithoutValue)
        #expect(result.diagnosis.errorCode == 134110)
        #expect(result.diagnosis.mandatoryAttributes == [
            MandatoryAttributeProblem(version: "V3", entity: "SyncableSettingsMetadata", attribute: "priority", rowCount: 2)
        ])
        #expect(result.diagnosis.stages == ["V2 → V3 (lightweight, automatic: no stage declared)"])
    }

    @Test func aCustomStageThatFillsTheAttributeMigrates() throws {
        let fixture = try MatchFixture()
        let fills = CustomStageDefinition(map: [.init(entity: "SyncableSettingsMetadata", assignments: [.init(property: "priority", expression: "length(key)")])])
        let catalog = fixture.catalog(stages: [
            CatalogStage(kind: .lightweight, span: .versions(["V1"]), jsonPath: "stages[0]"),
            CatalogStage(kind: .custom, span: .pair(from: "V2", to: "V3"), notes: "fill priority", custom: fills, jsonPath: "stages[1]"),
        ])
        let result = StoreMatcher.match(storePath: fixture.path, catalog: catalog)
        #expect(result.outcome == .exact)
        #expect(result.diagnosis.prediction == .migrates)
        #expect(result.diagnosis.stages == ["V2 → V3 (custom, stages[1])"])
        #expect(result.diagnosis.errorCode == nil)

        // A custom stage that does not say how it fills the attribute still fails on it.
        let silent = fixture.catalog(stages: [
            CatalogStage(kind: .lightweight, span: .versions(["V1"]), jsonPath: "stages[0]"),
            CatalogStage(kind: .custom, span: .pair(from: "V2", to: "V3"), jsonPath: "stages[1]"),
        ])
        let failing = StoreMatcher.match(storePath: fixture.path, catalog: silent)
        #expect(failing.diagnosis.prediction == .mandatoryAttributeWithoutValue && failing.diagnosis.errorCode == 134110)
        #expect(failing.diagnosis.refusals.first?.remedy.contains("add to the custom stage V2 → V3 (stages[1]) \"map\"") == true)
    }

    @Test func atTheLatestVersionItOpensAsIs() throws {
        let fixture = try MatchFixture()
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog(current: "V2"))
        #expect(result.diagnosis.prediction == .opensAsIs)
        #expect(result.diagnosis.adoptAs == nil)
    }

    @Test func droppedIndexIsBenignDrift() throws {
        let fixture = try MatchFixture()
        try fixture.edit("DROP INDEX Z_SyncFeatureEntity_byName")
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(result.outcome == .exact)
        #expect(result.version == "V2")
        let drift = try #require(result.candidates.first?.differences.first { $0.kind == .indexMissing })
        #expect(drift.impact == .benign)
        #expect(drift.detail.contains("Z_SyncFeatureEntity_byName"))
    }

    @Test func addedColumnIsBenignAndDroppedColumnIsBlocking() throws {
        let added = try MatchFixture()
        try added.edit("ALTER TABLE ZSYNCFEATUREENTITY ADD COLUMN ZEXTRA VARCHAR")
        let addedResult = StoreMatcher.match(storePath: added.path, catalog: added.catalog())
        #expect(addedResult.outcome == .exact && addedResult.version == "V2")
        let extra = try #require(addedResult.candidates.first?.differences.first { $0.kind == .columnExtra })
        #expect(extra.impact == .benign && extra.column == "ZEXTRA")

        let dropped = try MatchFixture()
        try dropped.edit("ALTER TABLE ZSYNCFEATUREENTITY DROP COLUMN ZSTATE")
        let droppedResult = StoreMatcher.match(storePath: dropped.path, catalog: dropped.catalog())
        #expect(droppedResult.outcome == .exact && droppedResult.version == "V2")
        let missing = try #require(droppedResult.candidates.first?.differences.first { $0.kind == .columnMissing })
        #expect(missing.impact == .blocking && missing.column == "ZSTATE")
        #expect(droppedResult.diagnosis.reasons.contains { $0.contains("ZSTATE") })
    }

    @Test func removedChecksumPredicts134504AndAdoptionOnlyWithStages() throws {
        let fixture = try MatchFixture()
        try fixture.editMetadata { $0.removeValue(forKey: "NSStoreModelVersionChecksumKey") }
        let staged = fixture.catalog(stages: [CatalogStage(kind: .lightweight, span: .versions(["V1", "V2", "V3"]), jsonPath: "stages[0]")])
        let result = StoreMatcher.match(storePath: fixture.path, catalog: staged)
        #expect(result.outcome == .exact)
        #expect(result.version == "V2")
        #expect(kinds(result, "V2").contains(.checksumMissing))
        #expect(result.diagnosis.prediction == .unknownModelVersion)
        #expect(result.diagnosis.errorCode == 134504)
        #expect(result.diagnosis.adoptAs == "V2")
        #expect(result.diagnosis.reasons.contains { $0.contains("134110") && $0.contains("priority") })

        // No stages: the app migrates automatically, by hashes; the missing checksum does not matter.
        let automatic = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(automatic.diagnosis.prediction == .mandatoryAttributeWithoutValue)
        #expect(automatic.diagnosis.errorCode == 134110)
        #expect(automatic.diagnosis.adoptAs == nil)
    }

    @Test func changedIdentifiersAreListed() throws {
        let fixture = try MatchFixture()
        try fixture.editMetadata { $0["NSStoreModelVersionIdentifiers"] = .array([.string("2.0-beta")]) }
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(result.outcome == .exact && result.version == "V2")
        let difference = try #require(result.candidates.first?.differences.first { $0.kind == .identifiersDiffer })
        #expect(difference.detail.contains("2.0-beta"))
    }

    @Test func entityBeyondTheLatestVersionIsNewer() throws {
        let fixture = try MatchFixture()
        try fixture.edit("""
            CREATE TABLE ZBOOKMARK ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZURL VARCHAR );
            INSERT INTO Z_PRIMARYKEY VALUES (3, 'Bookmark', 0, 0);
            """)
        try fixture.editMetadata { plist in
            guard case .dictionary(var hashes)? = plist["NSStoreModelVersionHashes"] else { return }
            hashes["Bookmark"] = .data(Data(repeating: 0xAB, count: 32))
            plist["NSStoreModelVersionHashes"] = .dictionary(hashes)
        }
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(result.outcome == .newer)
        #expect(result.version == "V2", "nearest known version")
        #expect(result.diagnosis.prediction == .refusesNewerStore)
        #expect(result.diagnosis.reasons.contains { $0.contains("entity Bookmark is in no known version") })
        #expect(kinds(result, "V2").contains(.entityOnlyInStore))
    }

    @Test func changedHashIsDriftedTowardTheNearestVersion() throws {
        let fixture = try MatchFixture()
        try fixture.editMetadata { plist in
            guard case .dictionary(var hashes)? = plist["NSStoreModelVersionHashes"] else { return }
            hashes["SyncFeatureEntity"] = .data(Data(repeating: 0x11, count: 32))
            plist["NSStoreModelVersionHashes"] = .dictionary(hashes)
        }
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(result.outcome == .drifted)
        #expect(result.version == "V2")
        #expect(kinds(result, "V2").contains(.entityHashDiffers))
        #expect(result.diagnosis.errorCode == 134504)
        #expect(result.diagnosis.adoptAs == "V2", "only identity differences: adoptable")
    }

    @Test func duplicateVersionsAreAmbiguous() throws {
        let fixture = try MatchFixture()
        var twin = fixture.storeModel
        twin.entities[0].properties = twin.entities[0].properties.map { property in
            guard case .attribute(var attribute) = property else { return property }
            attribute.defaultValue = "changed"  // not part of the hash
            return .attribute(attribute)
        }
        let catalog = fixture.catalog(extra: [CatalogVersion(name: "V2-twin", model: twin, origin: "inline")])
        #expect(catalog.duplicateChecksums == [["V2", "V2-twin"]])
        let result = StoreMatcher.match(storePath: fixture.path, catalog: catalog)
        #expect(result.outcome == .ambiguous)
        #expect(result.diagnosis.prediction == .ambiguousVersion)
        #expect(result.diagnosis.summary.contains("V2, V2-twin") || result.diagnosis.summary.contains("V2-twin, V2"))
    }

    /// A store whose hashes equal the latest version's, matched as an earlier one (the latest
    /// adds only a fetch index, which hashes leave out): the app finds it compatible and opens
    /// it as is. A review had `match` predict a migration; with the index in the store and the
    /// earlier version current, a refusal as "newer than every version".
    @Test func aStoreWithTheLatestVersionsHashesOpensAsIs() throws {
        let fixture = try MatchFixture()
        var indexed = fixture.storeModel
        let attribute = try #require(indexed.entities[0].properties.compactMap { property -> String? in
            if case .attribute(let attribute) = property { return attribute.name }
            return nil
        }.first)
        indexed.entities[0].fetchIndexes.append(FetchIndexDescription(name: "byFirst", elements: [.init(propertyName: attribute)]))
        let catalog = fixture.catalog(current: "V2i", extra: [CatalogVersion(name: "V2i", model: indexed, origin: "inline")])
        let result = StoreMatcher.match(storePath: fixture.path, catalog: catalog)
        #expect(result.outcome == .exact && result.version == "V2", "\(result.outcome) \(result.version ?? "")")
        #expect(result.diagnosis.prediction == .opensAsIs, "\(result.diagnosis.summary)")
        #expect(result.diagnosis.summary == "The latest version (V2i) opens it as is: its hashes are V2i's.")
        #expect(result.diagnosis.reasons.contains { $0.contains("byFirst") || $0.contains("index") }, "\(result.diagnosis.reasons)")
        #expect(result.diagnosis.stages.isEmpty)
    }

    /// A store whose metadata lost its hashes (NULL plist, empty or non-dictionary hashes) is
    /// matched by its model cache, but the app decides by the metadata: no prediction, and
    /// adopting it as the version it is is the fix. A review had `match` say "migrates … the
    /// app recognises the store by its entity hashes" while `inspect` reported them lost.
    @Test(arguments: ["empty", "string", "null"])
    func aStoreWhoseMetadataLostItsHashesIsNotPredicted(damage: String) throws {
        let fixture = try MatchFixture()
        switch damage {
        case "null": try fixture.edit("UPDATE Z_METADATA SET Z_PLIST = NULL")
        default:
            try fixture.editMetadata { plist in
                plist["NSStoreModelVersionHashes"] = damage == "empty" ? .dictionary([:]) : .string("hashes")
            }
        }
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog())
        #expect(result.version == "V2", "matched by the model cache")
        #expect(result.diagnosis.prediction == .cannotPredict, "\(result.diagnosis.summary)")
        #expect(result.diagnosis.adoptAs == "V2")
        #expect(result.diagnosis.summary == "The store's metadata has no version hashes: what the app does with it cannot be predicted.")
    }

    /// A unique index missing by name is benign only when another enforces the same
    /// uniqueness: over every row and comparing bytes. A partial or NOCASE one is not (a review
    /// found both taken for "the same uniqueness").
    @Test(arguments: [
        ("CREATE UNIQUE INDEX other_u ON ZTAG (ZNAME)", Difference.Impact.benign),
        ("CREATE UNIQUE INDEX other_u ON ZTAG (ZNAME) WHERE ZNAME = 'never'", .blocking),
        ("CREATE UNIQUE INDEX other_u ON ZTAG (ZNAME COLLATE NOCASE)", .blocking),
        ("CREATE UNIQUE INDEX other_u ON ZTAG (ZNAME)WHERE ZNAME > 'm'", .blocking),
        ("CREATE UNIQUE INDEX other_u ON ZTAG (ZNAME COLLATE BINARY ASC)", .benign),
    ])
    func aUniqueIndexOfAnotherNameCountsOnlyWhenItEnforcesTheSame(sql: String, impact: Difference.Impact) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("uq.json")
        let json = #"{"formatVersion": 1, "app": "Uq", "versions": [{"name": "V1", "entities": [{"name": "Tag", "uniquenessConstraints": [["name"]], "attributes": [{"name": "name", "type": "String"}]}]}]}"#
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        let catalog = try Catalog.load(path: path)
        let store = dir.path("uq.sqlite")
        try StoreCreator.create(model: try #require(catalog.version(named: "V1")).model, versionIdentifiers: nil, at: store)
        let dropped = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql LIKE 'CREATE UNIQUE%'")?.string
        let name = try #require(dropped)
        try StoreFixtureBuilder.run(store, "DROP INDEX \(name.quotedSQLIdentifier)")
        try StoreFixtureBuilder.run(store, sql)
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        let missing = result.candidates.first?.differences.first { $0.kind == .indexMissing }
        #expect(missing?.impact == impact, "\(missing?.detail ?? "no difference")")
    }

    @Test func aStoreAheadOfTheCurrentVersionIsNewer() throws {
        let fixture = try MatchFixture()
        let result = StoreMatcher.match(storePath: fixture.path, catalog: fixture.catalog(current: "V1"))
        #expect(result.outcome == .newer)
        #expect(result.diagnosis.prediction == .refusesNewerStore)
    }

    @Test func unrelatedCatalogIsUnknownAndPlainDatabaseIsNotCoreData() throws {
        let fixture = try MatchFixture()
        let other = Catalog(
            name: "Other", versions: [CatalogVersion(name: "X1", model: ManagedObjectModel(entities: [
                EntityDescription(name: "Invoice", properties: [.attribute(AttributeDescription(name: "total", type: .decimal))])
            ]), origin: "inline")], sourcePath: "(test)")
        let unknown = StoreMatcher.match(storePath: fixture.path, catalog: other)
        #expect(unknown.outcome == .unknown)
        #expect(unknown.version == nil)
        #expect(unknown.diagnosis.prediction == .cannotPredict)

        try StoreFixtureBuilder.database(at: fixture.directory.path("plain.db"), sql: "CREATE TABLE t(x);")
        let plain = StoreMatcher.match(storePath: fixture.directory.path("plain.db"), catalog: other)
        #expect(plain.outcome == .notCoreData)
        #expect(plain.storeKind == .sqliteDatabase)
    }
}
