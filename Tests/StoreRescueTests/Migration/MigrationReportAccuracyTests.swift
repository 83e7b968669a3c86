import Foundation
import Testing
@testable import StoreRescue

/// What a migration's report says about tables and versions is what happened: a renamed
/// entity's old table is not "left out" (its rows moved), a removed entity's is; a target after
/// the catalog's current version (`--to`, the Employees lineage's folder names its first
/// version current) is verified by its hashes, not refused as a bug.
@Suite struct MigrationReportAccuracyTests {
    typealias M = TestModel

    private func output(_ report: MigrationReport) throws -> String {
        try #require(report.result?.path, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
    }

    /// V1: Person (with a many-to-many `friends` to itself) and Note; V2: Person renamed
    /// Employee (and `friends` renamed `colleagues`), Note removed.
    static let versions = [
        M.version("V1", [
            EntityDescription(name: "Person", properties: [M.attribute("name"), M.toMany("friends", "Person", inverse: "friendOf"),
                                                          M.toMany("friendOf", "Person", inverse: "friends")]),
            EntityDescription(name: "Note", properties: [M.attribute("text")]),
        ]),
        M.version("V2", [
            EntityDescription(name: "Employee", renamingIdentifier: "Person", properties: [
                M.attribute("name"), M.toMany("colleagues", "Employee", inverse: "colleagueOf", renamedFrom: "friends"),
                M.toMany("colleagueOf", "Employee", inverse: "colleagues", renamedFrom: "friendOf"),
            ]),
        ]),
    ]

    @Test func aRenamedEntitysTableIsNotLeftOutAndARemovedOnesIs() throws {
        let fixture = try MigrationFixture(versions: Self.versions)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let ann = try context.insert("Person", values: ["name": .text("Ann")])
            let bob = try context.insert("Person", values: ["name": .text("Bob")])
            try context.link("Person", key: ann, "friends", to: bob)
            try context.insert("Note", values: ["text": .text("gone")])
        }
        let old = try StoreLayoutBuilder.layout(for: Self.versions[0].model)
        let personTable = try #require(old.table(ofEntity: "Person", in: Self.versions[0].model)?.name)
        let noteTable = try #require(old.table(ofEntity: "Note", in: Self.versions[0].model)?.name)
        let joinTables = old.tables.filter { $0.rootEntity == nil }.map(\.name)
        #expect(joinTables.count == 1)

        let report = fixture.migrate(path)
        let out = try output(report)
        let result = try #require(report.result)
        #expect(result.leftOutTables == [noteTable], "\(result.leftOutTables); Person is \(personTable), the join table \(joinTables)")
        #expect(result.rowsByEntity["Employee"] == 2)
        #expect(try fixture.links(out, at: "V2", "Employee", "colleagues") == [[1, 2]])
        #expect(report.renderText().contains("Left out: \(noteTable)") && !report.renderText().contains(personTable + ","))
    }

    /// Views and triggers are not carried into the migrated store; they are reported as left out
    /// (a review's were dropped without a word).
    @Test func viewsAndTriggersAreReportedLeftOut() throws {
        let fixture = try MigrationFixture(versions: Self.versions)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in try context.insert("Person", values: ["name": .text("Ann")]) }
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite)).execute("""
            CREATE VIEW names AS SELECT ZNAME FROM ZPERSON;
            CREATE TRIGGER touch AFTER UPDATE ON ZPERSON BEGIN SELECT 1; END;
            """)
        #expect(try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT count(*) FROM sqlite_schema WHERE type IN ('view', 'trigger')")?.int64 == 2)
        let report = fixture.migrate(path)
        let result = try #require(report.result, "\(report.error?.message ?? "")")
        #expect(result.leftOutTables.contains("view names") && result.leftOutTables.contains("trigger touch"), "\(result.leftOutTables)")
        let connection = try SQLiteConnection(path: result.path, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT count(*) FROM sqlite_schema WHERE type IN ('view', 'trigger')")?.int64 == 0)
    }

    @Test func aTargetAfterTheCatalogsCurrentVersionIsVerifiedByItsHashes() throws {
        let v1 = M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("title")])])
        let v2 = M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("note")])])
        let fixture = try MigrationFixture(versions: [v1, v2], current: "V1")
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in try context.insert("Item", values: ["title": .text("a")]) }
        let report = fixture.migrate(path, to: "V2")
        _ = try output(report)
        #expect(report.status == .migrated && report.exitStatus == .success)
        let verification = try #require(report.result?.verification)
        #expect(verification.problems == [])
        #expect(verification.matchOutcome == "newer" && verification.matchVersion == "V2")
        #expect(report.renderText().contains("match: newer V2 (its hashes exactly; the catalog's current version is V1)"))
    }

    /// A store exactly at a version after the catalog's current one (match: newer) goes on to a
    /// later version still: it is that version, not "after the target" (a review's `--to` the
    /// Employees lineage's third version refused its second as coming after the third, 134100).
    /// One after the target is still refused.
    @Test func aStoreAfterTheCurrentVersionGoesOnToALaterOne() throws {
        let v1 = M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("title")])])
        let v2 = M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("note")])])
        let v3 = M.version("V3", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("note"), M.attribute("tag")])])
        let fixture = try MigrationFixture(versions: [v1, v2, v3], current: "V1")
        let path = try fixture.store(at: "V2")
        try fixture.edit(path, at: "V2") { context in try context.insert("Item", values: ["title": .text("a"), "note": .text("n")]) }
        #expect(StoreMatcher.match(storePath: path, catalog: fixture.catalog).outcome == .newer)

        let report = fixture.migrate(path, to: "V3")
        _ = try output(report)
        #expect(report.status == .migrated && report.exitStatus == .success, "\(report.refusals.map(\.message))")
        #expect(report.source?.version == "V2" && report.hops.map(\.to) == ["V3"])
        #expect(report.notes.contains("the store is exactly V2, which comes after the catalog's current version V1 (match says newer) and before V3"), "\(report.notes)")
        #expect(try fixture.objects(try output(report), at: "V3", "Item").map { $0["note"] } == [.text("n")])

        let backwards = fixture.migrate(try fixture.store(at: "V3", name: "v3.sqlite"), to: "V2", output: "back.sqlite")
        #expect(backwards.exitStatus == .refused && backwards.refusals.map(\.code) == [.storeNewer], "\(backwards.status)")
        #expect(backwards.refusals.first?.message == "the store is V3, which comes after V2, the version it would be migrated to")
    }

    /// V1: Post(title); V2 adds Note(text, required with no default; length, optional), which
    /// a custom stage's `create` fills, one per Post — setting `text` or, with `setsText` false,
    /// leaving it unset.
    private func creating(setsText: Bool) throws -> (MigrationFixture, String) {
        let v1 = M.version("V1", [EntityDescription(name: "Post", properties: [M.attribute("title")])])
        let v2 = M.version("V2", [
            EntityDescription(name: "Note", properties: [M.attribute("text", optional: false), M.attribute("length", .integer32)]),
            EntityDescription(name: "Post", properties: [M.attribute("title")]),
        ])
        let set: [CustomStageDefinition.Assignment] = setsText ? [.init(property: "text", expression: "upper(title)", jsonPath: "stages[0].create[0].set.text")] : []
        let custom = CustomStageDefinition(create: [.init(entity: "Note", forEach: "Post", assignments: set, jsonPath: "stages[0].create[0]")])
        let fixture = try MigrationFixture(
            versions: [v1, v2], stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for title in ["a", "b"] { try context.insert("Post", values: ["title": .text(title)]) }
        }
        return (fixture, path)
    }

    /// The plan of an entity a `create` step fills says where its values come from: the step
    /// (a review's plan said "no value (required, no default)", as if the run would fail).
    @Test func thePlanSaysACreatedEntitysValuesComeFromTheCreateStep() throws {
        let (fixture, path) = try creating(setsText: true)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message))")
        let note = try #require(dryRun.hops.first?.entities.first { $0.name == "Note" })
        #expect(note.attributes.first { $0.name == "text" }?.value == "set by the create step (stages[0].create[0].set.text)")
        #expect(note.attributes.first { $0.name == "length" }?.value == "NULL (the create step stages[0].create[0] does not set it)")
        let plan = dryRun.renderText()
        #expect(plan.contains("set by the create step (stages[0].create[0].set.text)") && !plan.contains("no value (required, no default)"), "\(plan)")

        // What the plan says is what the run does.
        let run = fixture.migrate(path)
        let output = try output(run)
        #expect(try fixture.objects(output, at: "V2", "Note").map { $0["text"] } == [.text("A"), .text("B")])
    }

    /// …and when the step leaves a required attribute unset, the plan says the run stops, as it does.
    @Test func thePlanSaysWhenACreateStepLeavesARequiredValueUnset() throws {
        let (fixture, path) = try creating(setsText: false)
        let dryRun = fixture.migrate(path, dryRun: true)
        let note = try #require(dryRun.hops.first?.entities.first { $0.name == "Note" })
        #expect(note.attributes.first { $0.name == "text" }?.value
            == "no value (required, no default): the create step stages[0].create[0] does not set it, so the migration is refused when the step makes objects (mandatoryValueMissing)")
        // The dry run refuses as the run does (it used to say the migration could run; the run stopped).
        let refusal = try #require(dryRun.refusals.first, "\(dryRun.status)")
        #expect(dryRun.exitStatus == .refused && refusal.code == .mandatoryValueMissing && refusal.rowCount == 2)
        #expect(refusal.message == "Note.text (attribute) is required with no default, and the create step stages[0].create[0] does not set it: the 2 Note objects it makes would have no value")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil, "\(run.status) \(run.error?.message ?? "")")
        #expect(run.refusals == dryRun.refusals && run.error == nil)
    }

    /// Objects created into an entity the hop keeps get its defaults where the step does not set
    /// them, and the plan names them (a review's plan said NULL where the run wrote 5 and 'dflt').
    @Test func thePlanNamesTheDefaultsOfObjectsCreatedIntoAKeptEntity() throws {
        let tag = { (extra: [PropertyDescription]) in
            EntityDescription(name: "Tag", properties: [
                M.attribute("name", optional: false), M.attribute("weight", .integer64, optional: false, default: "5"),
                M.attribute("note", default: "dflt"), M.attribute("level", .integer64),
            ] + extra)
        }
        let custom = CustomStageDefinition(create: [.init(
            entity: "Tag", forEach: "Post", condition: "tagName IS NOT NULL", assignments: [.init(property: "name", expression: "tagName")],
            linksToSource: ["post"], jsonPath: "stages[0].create[0]")])
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Post", properties: [M.attribute("title"), M.attribute("tagName")]), tag([])]),
                M.version("V2", [
                    EntityDescription(name: "Post", properties: [M.attribute("title"), M.toOne("tag", "Tag", inverse: "post")]),
                    tag([M.toOne("post", "Post", inverse: "tag")]),
                ]),
            ],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            try context.insert("Post", values: ["title": .text("a"), "tagName": .text("x")])
            try context.insert("Tag", values: ["name": .text("old"), "weight": .integer(7)])
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        let plan = try #require(dryRun.hops.first?.entities.first { $0.name == "Tag" })
        func created(_ name: String) -> String? {
            plan.attributes.first { $0.name == name }?.value.components(separatedBy: "objects the custom stage creates: ").last
        }
        #expect(created("weight") == "default 5 (the create step stages[0].create[0] does not set it)", "\(plan.attributes)")
        #expect(created("note") == "default 'dflt' (the create step stages[0].create[0] does not set it)")
        #expect(created("level") == "NULL (the create step stages[0].create[0] does not set it)")

        // What the plan says is what the run writes.
        let output = try output(fixture.migrate(path))
        let made = try #require(try fixture.objects(output, at: "V2", "Tag").last)
        #expect(made["name"] == .text("x") && made["weight"] == .integer(5) && made["note"] == .text("dflt") && made["level"] == .null, "\(made)")
    }

    /// The Employees lineage as shipped: its folder names the first version current.
    @Test(.enabled(if: Samples.available)) func theEmployeesStoreGoesToItsSecondVersionWithTo() throws {
        let directory = try TemporaryDirectory()
        let lineage = Samples.url("lineages/Employees")
        let store = directory.path("MWKCoreDataTests.sqlite")
        try FileManager.default.copyItem(atPath: lineage.appendingPathComponent("MWKCoreDataTests.sqlite").path, toPath: store)
        let catalog = try Catalog.load(path: lineage.appendingPathComponent("MWKCoreDataTests.xcdatamodeld").path)
        #expect(catalog.latest?.name == "MWKCoreDataTests")
        let report = StoreMigrator.migrate(
            store: store, catalog: catalog, to: directory.path("out.sqlite"), options: MigrationOptions(targetVersion: "MWKCoreDataTests2"))
        #expect(report.exitStatus == .success, "\(report.error?.message ?? "") \(report.result?.verification.problems ?? [])")
        #expect(report.result?.rowsByEntity["Employee"] == 3)
    }
}
