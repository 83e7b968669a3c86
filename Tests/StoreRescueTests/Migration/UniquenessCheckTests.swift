import Foundation
import Testing
@testable import StoreRescue

/// The target's uniqueness constraints, checked against the data the way the run will write it:
/// values a type change makes equal are forecast by the dry run (the same refusal the run
/// makes), and a check that `willMigrate` steps decide is made after they ran, in the run, and
/// said so in both reports.
@Suite struct UniquenessCheckTests {
    typealias M = TestModel

    /// V1 stores `code` as `from` under a uniqueness constraint; V2 keeps the constraint and
    /// converts the values to `to`, which makes the first two equal.
    static let conversions: [(from: AttributeType, to: AttributeType, values: [String])] = [
        (.string, .integer64, ["1", "01", "2"]),
        (.string, .double, ["1.0", "1.00", "2"]),
    ]

    @Test(arguments: 0..<conversions.count)
    func valuesATypeChangeMakesEqualAreForecastByTheDryRun(_ index: Int) throws {
        let (from, to, values) = Self.conversions[index]
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code", from)], uniquenessConstraints: [["code"]])]),
            M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code", to)], uniquenessConstraints: [["code"]])]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for value in values { try context.insert("Item", values: ["code": .text(value)]) }
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .refused && dryRun.exitStatus == .refused, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        let refusal = try #require(dryRun.refusals.first)
        #expect(refusal.code == .uniquenessViolated && refusal.coreDataErrorCode == 133021 && refusal.rowCount == 1)
        #expect(refusal.message.contains("Item.code becomes \(to.modelFileName)") && refusal.message.contains("1 values are shared by several Item objects"),
                "\(refusal.message)")
        #expect(dryRun.renderText().contains(refusal.message))

        // The run refuses the same way, before writing anything.
        let run = fixture.migrate(path)
        #expect(run.status == .refused && run.exitStatus == .refused && run.error == nil, "\(run.error?.message ?? "")")
        #expect(run.refusals == dryRun.refusals)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// Optional → required with a default: the NULLs, which a unique index lets repeat, all
    /// take the default.
    @Test func nullsThatTakeTheSameDefaultAreForecastByTheDryRun() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code")], uniquenessConstraints: [["code"]])]),
            M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code", optional: false, default: "none")], uniquenessConstraints: [["code"]])]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for value in [SQLiteValue.null, .text("a"), .null] { try context.insert("Item", values: ["code": value]) }
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        let refusal = try #require(dryRun.refusals.first, "\(dryRun.status)")
        #expect(refusal.code == .uniquenessViolated && refusal.rowCount == 1)
        #expect(refusal.message == "V2 keeps Item.code unique and Item.code's NULLs take the default 'none': then 1 values are shared by several Item objects")
    }

    /// V1: Item(code, n) with no constraint; V2 makes `code` unique, and a custom stage's
    /// `willMigrate` step renames the duplicates (seed 003) — or, with `dedupes` false, a step
    /// that matches no object and leaves them.
    private func deduplicating(_ dedupes: Bool) throws -> (MigrationFixture, String) {
        let custom = CustomStageDefinition(willMigrate: [
            .init(entity: "Item", action: .update([.init(property: "code", expression: "code || '-' || n", jsonPath: "stages[0].willMigrate[0].set.code")]),
                  condition: dedupes ? "n > 1" : "n > 100", jsonPath: "stages[0].willMigrate[0]"),
        ])
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code"), M.attribute("n", .integer64)])]),
                M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code"), M.attribute("n", .integer64)], uniquenessConstraints: [["code"]])]),
            ],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for (code, n) in [("a", 1), ("a", 2), ("b", 1), ("a", 3)] {
                try context.insert("Item", values: ["code": .text(code), "n": .integer(Int64(n))])
            }
        }
        return (fixture, path)
    }

    @Test func aCheckAWillMigrateStepDecidesIsDeferredAndSaidSo() throws {
        let (fixture, path) = try deduplicating(true)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message))")
        let deferred = try #require(dryRun.notes.first { $0.contains("Item.code") }, "\(dryRun.notes)")
        #expect(deferred.contains("not checked before the willMigrate steps") && deferred.contains("the run checks it after they ran"), "\(deferred)")
        #expect(dryRun.renderText().contains(deferred))

        let run = fixture.migrate(path)
        let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
        #expect(try fixture.objects(output, at: "V2", "Item").compactMap { $0["code"]?.string } == ["a", "a-2", "b", "a-3"])
        let checked = try #require(run.notes.first { $0.contains("Item.code") }, "\(run.notes)")
        #expect(checked.contains("checked after the willMigrate steps of stages[0] ran, not before them") && checked.contains("no value is shared"), "\(checked)")
        #expect(run.renderText().contains(checked))
    }

    @Test func duplicatesAWillMigrateStepLeavesAreRefusedAfterIt() throws {
        let (fixture, path) = try deduplicating(false)
        // The dry run cannot know what the step does: it says when the check is made.
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate && dryRun.notes.contains { $0.contains("Item.code") }, "\(dryRun.notes)")

        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil)
        let message = try #require(run.error?.message)
        #expect(message.contains("V2 makes Item.code unique, and 1 values are shared by several Item objects"), "\(message)")
        #expect(message.contains("checked after the willMigrate steps of stages[0] ran"), "\(message)")
        // A refusal in the report too, as the dry run's are (JSON `refusals[]`).
        #expect(run.status == .failed && run.refusals.map(\.code) == [.uniquenessViolated] && run.refusals.first.map { message.hasSuffix($0.message) } == true,
                "\(run.refusals.map(\.message))")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    // MARK: Values that do not convert (the check counts them as NULL, never stops on them)

    /// A kept constraint over a type change whose values do not all convert: the conversion
    /// check's refusal (134140), not the duplicates query's error (a review's run: exit 70).
    @Test func aValueThatDoesNotConvertIsRefusedByTheConversionCheckNotTheUniquenessCheck() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code")], uniquenessConstraints: [["code"]])]),
            M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code", .integer64)], uniquenessConstraints: [["code"]])]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for value in ["bad", "2"] { try context.insert("Item", values: ["code": .text(value)]) }
        }
        for dryRun in [true, false] {
            let report = fixture.migrate(path, dryRun: dryRun)
            #expect(report.exitStatus == .refused && report.error == nil, "\(report.error?.message ?? "")")
            #expect(report.refusals.map(\.code) == [.typeChangeNotInferable], "\(report.refusals.map(\.message))")
            #expect(report.refusals.first?.message.contains("the text \"bad\" in the object with Z_PK 1") == true)
        }
    }

    // A kept constraint over a `map` whose value does not convert or is NULL for a required
    // attribute: that value is the computed-value check's refusal (ComputedValueCheckTests),
    // never the uniqueness check's error.

    // MARK: Objects a create step makes (their keys come from row_number(), which SQLite allows only in a SELECT list)

    /// V1: Post(title, tagName), Tag(name as `from`, unique when `isKept`); V2: Post.tag ↔
    /// Tag.post, Tag(name as `to`, unique), and a create step that makes a Tag for each Post with
    /// a tagName, after a willMigrate step that trims titles when `willMigrate`.
    private func tagging(
        existing: [String], tagNames: [String], from: AttributeType, to: AttributeType, isKept: Bool, willMigrate: Bool, createSteps: Int = 1
    ) throws -> (MigrationFixture, String) {
        let custom = CustomStageDefinition(
            willMigrate: willMigrate
                ? [.init(entity: "Post", action: .update([.init(property: "title", expression: "trim(title)")]), jsonPath: "stages[0].willMigrate[0]")] : [],
            create: (0..<createSteps).map { step in
                .init(entity: "Tag", forEach: "Post", condition: "tagName IS NOT NULL", assignments: [.init(property: "name", expression: "tagName")],
                      linksToSource: step == 0 ? ["post"] : [], jsonPath: "stages[0].create[\(step)]")
            })
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [
                    EntityDescription(name: "Post", properties: [M.attribute("title"), M.attribute("tagName")]),
                    EntityDescription(name: "Tag", properties: [M.attribute("name", from)], uniquenessConstraints: isKept ? [["name"]] : []),
                ]),
                M.version("V2", [
                    EntityDescription(name: "Post", properties: [M.attribute("title"), M.toOne("tag", "Tag", inverse: "post")]),
                    EntityDescription(name: "Tag", properties: [M.attribute("name", to), M.toOne("post", "Post", inverse: "tag")], uniquenessConstraints: [["name"]]),
                ]),
            ],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for (index, name) in tagNames.enumerated() { try context.insert("Post", values: ["title": .text("post \(index)"), "tagName": .text(name)]) }
            for name in existing { try context.insert("Tag", values: ["name": .text(name)]) }
        }
        return (fixture, path)
    }

    /// A kept constraint over a type change, and one new at V2, on an entity a create step fills
    /// (a review's runs: exit 70, 'misuse of window function row_number()'): checked over the
    /// existing objects and the created ones together, as the written unique index sees them.
    static let createdObjects: [(from: AttributeType, to: AttributeType, isKept: Bool, willMigrate: Bool, names: [SQLiteValue])] = [
        (.string, .integer64, true, false, [.integer(1), .integer(2), .integer(7), .integer(8)]),
        (.string, .string, false, false, [.text("1"), .text("2"), .text("7"), .text("8")]),
        (.string, .string, false, true, [.text("1"), .text("2"), .text("7"), .text("8")]),
    ]

    @Test(arguments: 0..<createdObjects.count)
    func objectsACreateStepMakesAreCheckedWithTheOthers(_ index: Int) throws {
        let (from, to, isKept, willMigrate, names) = Self.createdObjects[index]
        let (fixture, path) = try tagging(existing: ["1", "2"], tagNames: ["7", "8"], from: from, to: to, isKept: isKept, willMigrate: willMigrate)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate && dryRun.error == nil, "\(dryRun.error?.message ?? "") \(dryRun.refusals.map(\.message))")
        let run = fixture.migrate(path)
        let output = try #require(run.result?.path, "\(run.error?.message ?? "") \(run.refusals.map(\.message))")
        #expect(try fixture.objects(output, at: "V2", "Tag").compactMap { $0["name"] } == names)
        if willMigrate { #expect(run.notes.contains { $0.contains("Tag.name (unique at V2) was checked after") && $0.contains("no value is shared") }, "\(run.notes)") }
    }

    /// A created object whose value equals an existing object's (`"01"` and `"1"` as an Integer
    /// 64; `"z"` twice): refused with the count by the dry run and the run alike, or — when a
    /// willMigrate step defers the check — by the run after the step.
    @Test(arguments: [false, true])
    func aCreatedObjectThatSharesAnExistingObjectsValueIsRefused(_ willMigrate: Bool) throws {
        let (fixture, path) = willMigrate
            ? try tagging(existing: ["z"], tagNames: ["z", "y"], from: .string, to: .string, isKept: false, willMigrate: true)
            : try tagging(existing: ["1"], tagNames: ["01", "8"], from: .string, to: .integer64, isKept: true, willMigrate: false)
        let dryRun = fixture.migrate(path, dryRun: true)
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
        if willMigrate {
            #expect(dryRun.status == .wouldMigrate)
            let message = try #require(run.error?.message)
            #expect(message.contains("V2 makes Tag.name unique, and 1 values are shared by several Tag objects (checked after the willMigrate steps of stages[0] ran)"), "\(message)")
        } else {
            let refusal = try #require(dryRun.refusals.first, "\(dryRun.status) \(dryRun.error?.message ?? "")")
            #expect(refusal.code == .uniquenessViolated && refusal.rowCount == 1, "\(refusal.message)")
            #expect(run.refusals == dryRun.refusals && run.error == nil, "\(run.error?.message ?? "")")
        }
    }

    /// Past `maximumComparedRowSources` row sources (here 300 `create` steps, each making a Tag
    /// named "z"), the dry run does not compare the values — one query over them all cost a
    /// hostile catalog of 10,000 steps 30 s and 1 GB, where the migration took 7 s — and the
    /// written unique index decides: the run stops, exit 3, nothing written.
    @Test func aConstraintOverMoreRowSourcesThanTheCheckComparesIsLeftToTheIndex() throws {
        let steps = MigrationAnalyzer.maximumComparedRowSources + 44
        let (fixture, path) = try tagging(existing: [], tagNames: ["z"], from: .string, to: .string, isKept: false, willMigrate: false, createSteps: steps)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message)) \(dryRun.error?.message ?? "")")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil)
        #expect(run.error?.message.contains("UNIQUE constraint failed") == true, "\(run.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
        // Within the bound the same duplicates are the dry run's refusal.
        let (within, withinPath) = try tagging(existing: [], tagNames: ["z"], from: .string, to: .string, isKept: false, willMigrate: false, createSteps: MigrationAnalyzer.maximumComparedRowSources - 2)
        #expect(within.migrate(withinPath, dryRun: true).refusals.map(\.code) == [.uniquenessViolated])
    }

    /// A hierarchy of more subentities than the check compares row sources, kept in one table:
    /// their sources read the same table with the same values, and are one SELECT (a review's
    /// abstract Animal with 32 to 450 subentities: past 31 the dry run said it could run, and the
    /// run stopped on the index with "UNIQUE constraint failed").
    @Test(arguments: [MigrationAnalyzer.maximumComparedRowSources + 8, MigrationAnalyzer.maximumMergedConditions * 3 + 7])
    func aHierarchyOfManySubentitiesIsCheckedInOneScan(_ subentities: Int) throws {
        func version(_ name: String, unique: Bool) -> CatalogVersion {
            M.version(name, [EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name")], uniquenessConstraints: unique ? [["name"]] : [])]
                + (0..<subentities).map { EntityDescription(name: "Kind\($0)", superentityName: "Animal") })
        }
        let fixture = try MigrationFixture(versions: [version("V1", unique: false), version("V2", unique: true)])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Kind0", "tom"), ("Kind\(subentities - 1)", "tom"), ("Kind5", "rex")], into: path, of: fixture)
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.code) == [.uniquenessViolated] && refusals.first?.rowCount == 1, "\(refusals.map(\.message))")
        #expect(refusals.first?.message.hasPrefix("V2 makes Animal.name unique, and 1 values are shared by several Animal objects") == true,
                "\(refusals.map(\.message))")
        // Distinct values migrate.
        let distinct = try MigrationFixture(versions: [version("V1", unique: false), version("V2", unique: true)])
        let distinctPath = try distinct.store(at: "V1")
        try Self.insert([("Kind0", "tom"), ("Kind\(subentities - 1)", "felix")], into: distinctPath, of: distinct)
        #expect(distinct.migrate(distinctPath).exitStatus == .success)
    }

    /// Row sources past SQLite's 500 terms of a compound select are nested, every row kept.
    @Test func aCompoundOfManySelectsIsNested() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        let selects = (1...1_234).map { "SELECT \($0) AS v" }
        let sql = VirtualVersion.unionAll(selects)
        #expect(try connection.scalar("SELECT count(*) FROM (\(sql))")?.int64 == 1_234)
        #expect(try connection.scalar("SELECT sum(v) FROM (\(sql))")?.int64 == 1_234 * 1_235 / 2)
        #expect(VirtualVersion.unionAll(Array(selects.prefix(3))) == "SELECT 1 AS v UNION ALL SELECT 2 AS v UNION ALL SELECT 3 AS v")
    }

    // MARK: Hierarchies (one table, and a constraint's unique index on its columns)

    /// Animal (`name`, abstract) with Dog and Cat under it, each declaring the constraints
    /// `constraints` gives it; `dogName` declared on Dog instead of Animal.
    private static func animals(
        _ version: String, name type: AttributeType = .string, constraints: [String: [[String]]] = [:], catAge: Bool = false
    ) -> CatalogVersion {
        M.version(version, [
            EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name", type)], uniquenessConstraints: constraints["Animal"] ?? []),
            EntityDescription(name: "Dog", superentityName: "Animal", uniquenessConstraints: constraints["Dog"] ?? []),
            EntityDescription(name: "Cat", superentityName: "Animal", properties: catAge ? [M.attribute("age", .integer64)] : [],
                              uniquenessConstraints: constraints["Cat"] ?? []),
        ], identifiers: catAge ? ["2"] : [])
    }

    /// Fills the store at `path` (at V1) with objects of the entities `names` pairs.
    private static func insert(_ names: [(entity: String, name: String)], into path: String, of fixture: MigrationFixture) throws {
        try fixture.edit(path, at: "V1") { context in
            for (entity, name) in names { try context.insert(entity, values: ["name": .text(name)]) }
        }
    }

    /// The dry run's refusal, which the run repeats before writing anything.
    private func refusalOfBoth(_ fixture: MigrationFixture, _ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [MigrationRefusal] {
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .refused && dryRun.error == nil, "\(dryRun.error?.message ?? "")", sourceLocation: sourceLocation)
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.error == nil, "\(run.error?.message ?? "")", sourceLocation: sourceLocation)
        #expect(run.refusals == dryRun.refusals, sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")), sourceLocation: sourceLocation)
        return dryRun.refusals
    }

    /// A new abstract parent's constraint (a review's dry run never checked it: no source entity).
    @Test func aNewAbstractParentsConstraintIsCheckedOverItsSubentitiesObjects() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Dog", properties: [M.attribute("name")])]),
            Self.animals("V2", constraints: ["Animal": [["name"]]]),
        ])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "rex"), ("Dog", "fido"), ("Dog", "rex")], into: path, of: fixture)
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.code) == [.uniquenessViolated] && refusals.first?.rowCount == 1)
        #expect(refusals.first?.message == "V2 makes Animal.name unique, and 1 values are shared by several Animal objects", "\(refusals.map(\.message))")
    }

    /// A subentity's new constraint over an inherited attribute: its unique index is on the
    /// hierarchy's table, so it holds the siblings' values too — a Cat named like a Dog is a
    /// duplicate there (a review's dry run compared the dogs only; the run then stopped).
    @Test(arguments: ["rex", "tom"])
    func aSubentitysConstraintIsCheckedOverEveryObjectItsIndexHolds(_ catName: String) throws {
        let fixture = try MigrationFixture(versions: [Self.animals("V1"), Self.animals("V2", constraints: ["Dog": [["name"]]])])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "rex"), ("Dog", "fido"), ("Cat", catName)], into: path, of: fixture)
        let index = try #require(try StoreLayoutBuilder.layout(for: fixture.version("V2").model).indexes.first { $0.name == "Z_Dog_UNIQUE_name" })
        #expect(index.table == "ZANIMAL" && index.columns == ["ZNAME"] && index.isUnique)
        guard catName == "rex" else {
            let run = fixture.migrate(path)
            let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
            #expect(try fixture.objects(output, at: "V2", "Animal").compactMap { $0["name"]?.string }.sorted() == ["fido", "rex", "tom"])
            return
        }
        let refusals = try refusalOfBoth(fixture, path)
        let message = try #require(refusals.first?.message)
        #expect(refusals.count == 1 && refusals.first?.rowCount == 1)
        #expect(message.hasPrefix("V2 makes Dog.name unique, and 1 values are shared by several objects of Cat, Dog (Core Data keeps the hierarchy in one table, ZANIMAL"), "\(message)")
    }

    /// A parent's kept constraint over values a `map` on one subentity changes.
    @Test func aMapOnASubentityThatMakesAParentsValuesEqualIsRefused() throws {
        let custom = CustomStageDefinition(map: [.init(entity: "Dog", assignments: [.init(property: "name", expression: "lower(name)", jsonPath: "stages[0].map.Dog.name")])])
        let fixture = try MigrationFixture(
            versions: [Self.animals("V1", constraints: ["Animal": [["name"]]]), Self.animals("V2", constraints: ["Animal": [["name"]]], catAge: true)],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "Rex"), ("Dog", "rex"), ("Cat", "tom")], into: path, of: fixture)
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.message) == [
            "V2 keeps Animal.name unique and Dog.name is computed by the custom stage (stages[0].map.Dog.name): then 1 values are shared by several Animal objects",
        ])
    }

    /// The same columns constrained by the parent and again by a subentity: two unique indexes,
    /// one question, one refusal, which names the inherited attribute's change once.
    @Test func aConstraintRedeclaredOnASubentityIsRefusedOnce() throws {
        let constraints = ["Animal": [["name"]], "Dog": [["name"]]]
        let fixture = try MigrationFixture(versions: [
            Self.animals("V1", constraints: constraints), Self.animals("V2", name: .integer64, constraints: constraints),
        ])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "1"), ("Dog", "01"), ("Cat", "2")], into: path, of: fixture)
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.message) == [
            "V2 keeps Animal.name unique and Animal.name becomes Integer 64: then 1 values are shared by several Animal objects",
        ])
    }

    /// Only Dogs share values of Dog's constraint: the refusal names Dog's objects, not every
    /// entity the table holds (a review's named "objects of Cat, Dog" with no Cat at all).
    @Test func aRefusalNamesOnlyTheEntitiesWhoseObjectsShareValues() throws {
        let fixture = try MigrationFixture(versions: [Self.animals("V1"), Self.animals("V2", constraints: ["Dog": [["name"]]])])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "rex"), ("Dog", "rex"), ("Cat", "tom")], into: path, of: fixture)
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.message) == ["V2 makes Dog.name unique, and 1 values are shared by several Dog objects"])
    }

    /// A property moved up into the parent, its subentities' constraints kept: the values are
    /// unchanged, so the remedy cannot be to keep them; it is to keep the subentities' own
    /// columns and constraints, or to make the values distinct.
    @Test func valuesMovedIntoOneIndexAreRefusedWithARemedyThatSaysSo() throws {
        let named = { (name: String, parent: String?, properties: [PropertyDescription], constraints: [[String]]) -> EntityDescription in
            EntityDescription(name: name, superentityName: parent, isAbstract: parent == nil, properties: properties, uniquenessConstraints: constraints)
        }
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [
                named("Animal", String?.none, [M.attribute("age", .integer64)], []),
                named("Dog", "Animal", [M.attribute("name")], [["name"]]), named("Cat", "Animal", [M.attribute("name")], [["name"]]),
            ]),
            M.version("V2", [
                named("Animal", String?.none, [M.attribute("age", .integer64), M.attribute("name")], []),
                named("Dog", "Animal", [], [["name"]]), named("Cat", "Animal", [], [["name"]]),
            ]),
        ])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "rex"), ("Cat", "rex"), ("Dog", "fido")], into: path, of: fixture)
        let refusal = try #require(try refusalOfBoth(fixture, path).first)
        #expect(refusal.message.contains("its unique index now holds objects whose values no one unique index held before"), "\(refusal.message)")
        #expect(!refusal.remedy.contains("keep the values as they are"), "\(refusal.remedy)")
        #expect(refusal.remedy.contains("keep name and the constraint on each subentity") && refusal.remedy.contains("makes the values distinct"), "\(refusal.remedy)")
    }

    // MARK: Values drawn at random

    /// A `map` on Dog that draws its value: the Dogs' values are distinct, but the Cats' are
    /// still compared (a review's dry run skipped the whole index, and the run then stopped on
    /// "UNIQUE constraint failed"); a Cat whose name is its own migrates.
    @Test(arguments: ["hex(randomblob(8))", "coalesce(name, hex(uuid()))"], [true, false])
    func objectsWhoseValuesAreNotDrawnAreStillCompared(_ expression: String, catsShare: Bool) throws {
        let custom = CustomStageDefinition(map: [.init(entity: "Dog", assignments: [.init(property: "name", expression: expression, jsonPath: "stages[0].map.Dog.name")])])
        let fixture = try MigrationFixture(
            versions: [Self.animals("V1"), Self.animals("V2", constraints: ["Animal": [["name"]]])],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            try context.insert("Dog", values: ["name": .null])
            try context.insert("Dog", values: ["name": .null])
            try context.insert("Cat", values: ["name": .text("tom")])
            try context.insert("Cat", values: ["name": .text(catsShare ? "tom" : "tim")])
        }
        guard catsShare else {
            let run = fixture.migrate(path)
            let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
            #expect(Set(try fixture.objects(output, at: "V2", "Dog").compactMap { $0["name"]?.string }).count == 2)
            return
        }
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.code) == [.uniquenessViolated] && refusals.first?.rowCount == 1, "\(refusals.map(\.message))")
    }

    /// V1: Item(code); V2 makes `code` unique, a custom stage mapping it from `expression`. The
    /// store holds Items with `codes`.
    private func mappedCodes(_ expression: String, codes: [String?]) throws -> (MigrationFixture, String) {
        let custom = CustomStageDefinition(map: [.init(entity: "Item", assignments: [.init(property: "code", expression: expression, jsonPath: "stages[0].map.Item.code")])])
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code")])]),
                M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code")], uniquenessConstraints: [["code"]])]),
            ],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for code in codes { try context.insert("Item", values: ["code": code.map { .text($0) } ?? .null]) }
        }
        return (fixture, path)
    }

    /// An expression holding `uuid()` or `random()` whose value, for some objects, is not drawn:
    /// a copied code (`coalesce`), or a draw the result does not depend on.
    @Test(arguments: [("coalesce(code, hex(uuid()))", ["a", "a", nil]), ("'x' || (abs(random()) % 1)", ["a", "b"]), ("hex(uuid())", ["a", "a"])])
    func valuesAnExpressionDoesNotDrawAreCompared(_ expression: String, codes: [String?]) throws {
        let (fixture, path) = try mappedCodes(expression, codes: codes)
        guard expression != "hex(uuid())" else {
            let run = fixture.migrate(path)
            #expect(run.result != nil, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
            return
        }
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.code) == [.uniquenessViolated] && refusals.first?.rowCount == 1, "\(refusals.map(\.message))")
    }

    /// Values drawn at random that the lowest and highest draw could not tell from values that
    /// are not (a review: `abs(random()) % 7` — 7 divides 2^63 − 1 —, `min(random(), 0)`, a
    /// `CASE` on the draw's sign), or whose call was written with a space before its "("
    /// (`random ()` went unprobed: the dry run's answer changed from run to run). Left out, the
    /// dry run and the run both migrate. The remainder is by a divisor of 2^63 − 1 large enough
    /// that two drawn values never meet in practice (92,737 × 649,657).
    @Test(arguments: [
        "'T-' || (abs(random()) % 60247241209)", "'T-' || (abs(random ()) % 60247241209)", "'T-' || (abs(Random\t( )) % 60247241209)",
        "CASE WHEN random() < 0 THEN hex(randomblob(8)) ELSE 'n' || hex(randomblob(8)) END",
        "'T-' || (abs(last_insert_rowid()) % 60247241209)",
    ])
    func valuesDrawnAtRandomAreLeftOutWhateverTheirForm(_ expression: String) throws {
        let (fixture, path) = try mappedCodes(expression, codes: ["a", "a", "a"])
        for _ in 0..<3 {
            let dryRun = fixture.migrate(path, dryRun: true)
            #expect(dryRun.exitStatus == .success && dryRun.refusals.isEmpty, "\(dryRun.refusals.map(\.message)) \(dryRun.error?.message ?? "")")
        }
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .success && run.result != nil, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
    }

    /// `changes()` and `total_changes()` are the same for every object of the writer's one
    /// statement: compared as they are, the dry run refuses what the run would (a review's dry
    /// run took them for drawn and said the migration could run; the run stopped on the index).
    @Test(arguments: ["'c' || total_changes()", "'c' || changes()"])
    func valuesOfAStatementsCountsAreCompared(_ expression: String) throws {
        let (fixture, path) = try mappedCodes(expression, codes: ["a", "b"])
        let refusals = try refusalOfBoth(fixture, path)
        #expect(refusals.map(\.code) == [.uniquenessViolated], "\(refusals.map(\.message))")
    }

    // MARK: Steps that run where a constraint applies

    /// A kept constraint a willMigrate step breaks (the step runs on V1, whose unique index
    /// stops it): the dry run says it does not run the steps that set constrained values; the
    /// run stops in the step, naming it and the constraint, and does not advise adding such a
    /// step (a review's run said "UNIQUE constraint failed" and advised a willMigrate step).
    @Test func aWillMigrateStepThatBreaksAKeptConstraintIsNotedAndNamed() throws {
        let custom = CustomStageDefinition(willMigrate: [
            .init(entity: "Item", action: .update([.init(property: "code", expression: "'same'", jsonPath: "stages[0].willMigrate[0].set.code")]),
                  jsonPath: "stages[0].willMigrate[0]"),
        ])
        let item = { (extra: [PropertyDescription]) in
            EntityDescription(name: "Item", properties: [M.attribute("code")] + extra, uniquenessConstraints: [["code"]])
        }
        let fixture = try MigrationFixture(
            versions: [M.version("V1", [item([])]), M.version("V2", [item([M.attribute("q", .integer64)])], identifiers: ["2"])],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for code in ["a", "b"] { try context.insert("Item", values: ["code": .text(code)]) }
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message))")
        let note = try #require(dryRun.notes.first { $0.contains("Item.code") }, "\(dryRun.notes)")
        #expect(note.hasPrefix("V1 → V2: the willMigrate steps of stages[0] set Item.code, which V1 keeps unique; the dry run does not run them"), "\(note)")
        #expect(dryRun.renderText().contains(note))

        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil)
        let error = try #require(run.error)
        #expect(error.message.contains(
            "stopped in stages[0]: stages[0].willMigrate[0]: it makes objects share values of Item.code, which V1 keeps unique (UNIQUE constraint failed: ZITEM.ZCODE)"),
            "\(error.message)")
        #expect(error.hint?.contains("add a willMigrate step") != true, "\(error.hint ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// Two entities with a `code` column each under a constraint; a step breaks Item's: the
    /// run names Item's constraint, matched by table and column (a review's named Alpha's).
    @Test func aStepThatBreaksAConstraintNamesTheEntityOfItsTable() throws {
        let custom = CustomStageDefinition(willMigrate: [
            .init(entity: "Item", action: .update([.init(property: "code", expression: "'same'", jsonPath: "stages[0].willMigrate[0].set.code")]),
                  jsonPath: "stages[0].willMigrate[0]"),
        ])
        let entities = { (extra: [PropertyDescription]) in [
            EntityDescription(name: "Alpha", properties: [M.attribute("code")], uniquenessConstraints: [["code"]]),
            EntityDescription(name: "Item", properties: [M.attribute("code")] + extra, uniquenessConstraints: [["code"]]),
        ] }
        let fixture = try MigrationFixture(
            versions: [M.version("V1", entities([])), M.version("V2", entities([M.attribute("q", .integer64)]), identifiers: ["2"])],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for code in ["a", "b"] { try context.insert("Item", values: ["code": .text(code)]) }
        }
        let run = fixture.migrate(path)
        let error = try #require(run.error)
        #expect(error.message.contains("it makes objects share values of Item.code, which V1 keeps unique (UNIQUE constraint failed: ZITEM.ZCODE)"), "\(error.message)")
    }

    /// A constraint redeclared down a hierarchy is one unique index: the note names it once, by
    /// the entity declaring it highest (a review's listed Animal.name, Dog.name, Mammal.name).
    @Test func aNoteNamesARedeclaredConstraintOnce() throws {
        let custom = CustomStageDefinition(willMigrate: [
            .init(entity: "Cat", action: .update([.init(property: "name", expression: "'same'", jsonPath: "stages[0].willMigrate[0].set.name")]),
                  jsonPath: "stages[0].willMigrate[0]"),
        ])
        let constraints = ["Animal": [["name"]], "Dog": [["name"]], "Cat": [["name"]]]
        let fixture = try MigrationFixture(
            versions: [Self.animals("V1", constraints: constraints), Self.animals("V2", constraints: constraints, catAge: true)],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try Self.insert([("Dog", "rex"), ("Cat", "tom")], into: path, of: fixture)
        let dryRun = fixture.migrate(path, dryRun: true)
        let note = try #require(dryRun.notes.first { $0.contains("Animal.name") }, "\(dryRun.notes)")
        #expect(note.hasPrefix("V1 → V2: the willMigrate steps of stages[0] set Animal.name, which V1 keeps unique;"), "\(note)")
    }
}
