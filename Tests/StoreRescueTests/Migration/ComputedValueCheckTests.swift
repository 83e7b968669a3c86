import Foundation
import Testing
@testable import StoreRescue

/// A value a custom stage computes (`map`, a `create` step's `set`) that does not convert to the
/// destination attribute's type, or is NULL for a required one: the dry run counts those objects
/// and refuses, naming the expression (review cases t20, t23: the dry run said the migration
/// could run, and the run stopped on the first such object, exit 3); when steps run before the
/// copy, which may change what the expression reads (t22), the run checks after them and refuses
/// with the same words, a refusal in the report as the dry run's are.
@Suite struct ComputedValueCheckTests {
    typealias M = TestModel

    /// `code`'s type and optionality at both versions, its `map` expression over `label`, and the
    /// refusal: code, message.
    static let computed: [(type: AttributeType, optional: Bool, expression: String, code: MigrationRefusal.Code, message: String)] = [
        (.integer64, true, "label", .invalidCustomStage,
         "stages[0].map.Item.code gives 1 Item objects a value that is not an Integer 64 (for example the text \"abc\" in the object with Z_PK 1)"),
        (.string, false, "NULLIF(label, 'abc')", .invalidCustomStage,
         "stages[0].map.Item.code gives 1 Item objects no value (NULL), and Item.code is required at V2 (for example the object with Z_PK 1)"),
    ]

    /// V1: Item(code unique, label), with (1, "abc") and (2, "5"); V2 adds `q`; a custom stage
    /// maps `code` from `expression`, after a willMigrate step that trims labels when `willMigrate`
    /// (review cases t20, t22, t23).
    private func items(_ index: Int, willMigrate: Bool) throws -> (MigrationFixture, String) {
        let (type, optional, expression, _, _) = Self.computed[index]
        let item = { (extra: [PropertyDescription]) in
            EntityDescription(name: "Item", properties: [M.attribute("code", type, optional: optional), M.attribute("label")] + extra, uniquenessConstraints: [["code"]])
        }
        let custom = CustomStageDefinition(
            willMigrate: willMigrate
                ? [.init(entity: "Item", action: .update([.init(property: "label", expression: "trim(label)")]), jsonPath: "stages[0].willMigrate[0]")] : [],
            map: [.init(entity: "Item", assignments: [.init(property: "code", expression: expression, jsonPath: "stages[0].map.Item.code")])])
        let fixture = try MigrationFixture(
            versions: [M.version("V1", [item([])]), M.version("V2", [item([M.attribute("q", .integer64)])], identifiers: ["2"])],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for (code, label) in [("1", "abc"), ("2", "5")] {
                try context.insert("Item", values: ["code": type == .string ? .text(code) : .integer(Int64(code)!), "label": .text(label)])
            }
        }
        return (fixture, path)
    }

    @Test(arguments: 0..<computed.count)
    func aComputedValueThatDoesNotFitIsRefusedByTheDryRun(_ index: Int) throws {
        let (fixture, path) = try items(index, willMigrate: false)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .refused && dryRun.error == nil, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        let refusal = try #require(dryRun.refusals.first)
        #expect(dryRun.refusals.count == 1, "\(dryRun.refusals.map(\.message))")
        #expect(refusal.code == Self.computed[index].code && refusal.rowCount == 1 && refusal.hop == "V1 → V2")
        #expect(refusal.entity == "Item" && refusal.property == "code" && refusal.destinationVersion == "V2" && refusal.propertyKind == "attribute")
        #expect(refusal.message == Self.computed[index].message, "\(refusal.message)")
        #expect(refusal.remedy.contains("stages[0].map.Item.code"), "\(refusal.remedy)")
        #expect(dryRun.renderText().contains(refusal.message))

        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.error == nil && run.refusals == dryRun.refusals, "\(run.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// An expression SQLite stops on for some objects (`abs()` of the smallest integer: "integer
    /// overflow"): the dry run refuses it as the run would stop on it, naming it and SQLite's
    /// reason — the analysis's scan used to fail with it, exit 70 with the statement (a review's
    /// case u19). With a willMigrate step before the copy, the run checks after it.
    @Test(arguments: [false, true])
    func anExpressionSQLiteStopsOnIsRefusedNotAnInternalError(_ willMigrate: Bool) throws {
        let item = { (extra: [PropertyDescription]) in
            EntityDescription(name: "Item", properties: [M.attribute("code"), M.attribute("label")] + extra)
        }
        let custom = CustomStageDefinition(
            willMigrate: willMigrate
                ? [.init(entity: "Item", action: .update([.init(property: "label", expression: "trim(label)")]), jsonPath: "stages[0].willMigrate[0]")] : [],
            map: [.init(entity: "Item", assignments: [.init(
                property: "code", expression: "CASE WHEN label = 'abc' THEN abs(-9223372036854775807 - 1) ELSE label END", jsonPath: "stages[0].map.Item.code")])])
        let fixture = try MigrationFixture(
            versions: [M.version("V1", [item([])]), M.version("V2", [item([M.attribute("q", .integer64)])], identifiers: ["2"])],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for label in ["abc", "5"] { try context.insert("Item", values: ["label": .text(label)]) }
        }
        let expected = "stages[0].map.Item.code: SQLite stops computing it for some Item objects (integer overflow)"
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.error == nil, "\(dryRun.error?.message ?? "")")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil, "\(run.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
        if willMigrate {
            #expect(dryRun.exitStatus == .success && dryRun.notes.contains { $0.contains(expected) }, "\(dryRun.notes)")
            #expect(run.refusals.map(\.message) == [expected + " (checked after the willMigrate steps of stages[0] ran)"], "\(run.refusals.map(\.message))")
        } else {
            #expect(dryRun.exitStatus == .refused && dryRun.refusals.map(\.message) == [expected], "\(dryRun.refusals.map(\.message))")
            #expect(dryRun.refusals.first?.code == .invalidCustomStage)
            #expect(run.refusals == dryRun.refusals)
        }
    }

    @Test(arguments: 0..<computed.count)
    func aComputedValueStepsMayChangeIsCheckedAfterThemAndRefused(_ index: Int) throws {
        let (fixture, path) = try items(index, willMigrate: true)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message)) \(dryRun.error?.message ?? "")")
        let note = try #require(dryRun.notes.first { $0.contains("stages[0].map.Item.code") }, "\(dryRun.notes)")
        #expect(note.hasPrefix("V1 → V2: stages[0].map.Item.code gives 1 Item objects") && note.contains("before the willMigrate steps of stages[0]"), "\(note)")
        #expect(note.contains("the run checks the values after them, before it writes V2, and refuses (exit 3)"), "\(note)")

        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.status == .failed && run.result == nil)
        let message = Self.computed[index].message + " (checked after the willMigrate steps of stages[0] ran)"
        #expect(run.error?.message.hasSuffix("stopped: " + message) == true, "\(run.error?.message ?? "")")
        // A refusal, in the same shape as the dry run's (JSON `refusals[]`), as well as the error.
        #expect(run.refusals.map(\.message) == [message] && run.refusals.first?.code == Self.computed[index].code, "\(run.refusals.map(\.message))")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// A create step's value for a required attribute that comes out NULL (review t5's
    /// m_create_number_null): counted per object it makes, named by the step.
    @Test func aCreateStepsNullForARequiredAttributeIsRefusedByTheDryRun() throws {
        let custom = CustomStageDefinition(create: [
            .init(entity: "Tag", forEach: "Post", assignments: [.init(property: "name", expression: "NULLIF(title, 'x')", jsonPath: "stages[0].create[0].set.name")],
                  jsonPath: "stages[0].create[0]"),
        ])
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Post", properties: [M.attribute("title")])]),
                M.version("V2", [
                    EntityDescription(name: "Post", properties: [M.attribute("title")]),
                    EntityDescription(name: "Tag", properties: [M.attribute("name", optional: false)]),
                ]),
            ],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for title in ["a", "x", "x"] { try context.insert("Post", values: ["title": .text(title)]) }
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        let refusal = try #require(dryRun.refusals.first, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        #expect(refusal.code == .invalidCustomStage && refusal.rowCount == 2 && refusal.entity == "Tag" && refusal.property == "name")
        #expect(refusal.message == "stages[0].create[0].set.name gives 2 Tag objects no value (NULL), and Tag.name is required at V2 "
            + "(for example the one made from the Post with Z_PK 2)", "\(refusal.message)")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.error == nil && run.refusals == dryRun.refusals, "\(run.error?.message ?? "")")
    }
}
