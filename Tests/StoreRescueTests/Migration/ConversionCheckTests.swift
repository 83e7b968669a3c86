import Foundation
import Testing
@testable import StoreRescue

/// A type change whose stored values do not all convert (134140), with `willMigrate` steps that
/// run before the copy: the check is made on the values those steps leave, by the run, when a
/// step may touch them (review case t18: a step correcting the one bad value, as the refusal's
/// remedy advises, was refused for the value it corrects); up front, as before, when none may.
@Suite struct ConversionCheckTests {
    typealias M = TestModel

    /// V1: Item(code: String) and Tag(code: String); V2 makes Item.code an Integer 64 and keeps
    /// Tag. A custom stage V1 → V2 runs `steps` as its willMigrate. The store holds Items with
    /// `codes` (Z_PK 1, 2, …) and one Tag, "bad".
    private func store(codes: [String], willMigrate steps: [CustomStageDefinition.DataStep]) throws -> (MigrationFixture, String) {
        let tag = EntityDescription(name: "Tag", properties: [M.attribute("code")])
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code")]), tag]),
                M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code", .integer64)]), tag]),
            ],
            stages: [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: CustomStageDefinition(willMigrate: steps), jsonPath: "stages[0]")])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for code in codes { try context.insert("Item", values: ["code": .text(code)]) }
            try context.insert("Tag", values: ["code": .text("bad")])
        }
        return (fixture, path)
    }

    /// `update ENTITY set code = '7' where code = 'bad'`, as review case t18's catalog has it.
    private static func correcting(_ entity: String, _ index: Int = 0) -> CustomStageDefinition.DataStep {
        .init(entity: entity, action: .update([.init(property: "code", expression: "'7'", jsonPath: "stages[0].willMigrate[\(index)].set.code")]),
              condition: "code = 'bad'", jsonPath: "stages[0].willMigrate[\(index)]")
    }

    /// The steps that leave every Item code convertible: t18's update, or a delete of the object.
    static let fixes: [(steps: [CustomStageDefinition.DataStep], codes: [Int64])] = [
        ([correcting("Item")], [7, 2]),
        ([.init(entity: "Item", action: .delete, condition: "code = 'bad'", jsonPath: "stages[0].willMigrate[0]")], [2]),
    ]

    @Test(arguments: 0..<fixes.count)
    func valuesAWillMigrateStepCorrectsAreCheckedAfterItAndConvert(_ index: Int) throws {
        let (fixture, path) = try store(codes: ["bad", "2"], willMigrate: Self.fixes[index].steps)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate && dryRun.exitStatus == .success, "\(dryRun.refusals.map(\.message))")
        let deferred = try #require(dryRun.notes.first { $0.contains("Item.code") }, "\(dryRun.notes)")
        #expect(deferred == "V1 → V2: Item.code becomes Integer 64, and 1 stored values do not convert before the willMigrate steps of stages[0] "
            + "(for example the text \"bad\" in the object with Z_PK 1), which may correct them: the run checks the values they leave, before it "
            + "writes V2, and refuses (exit 3) if some still do not convert")
        #expect(dryRun.renderText().contains(deferred))

        let run = fixture.migrate(path)
        #expect(run.exitStatus == .success)
        let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
        #expect(try fixture.objects(output, at: "V2", "Item").map { $0["code"] } == Self.fixes[index].codes.map { .integer($0) })
        let checked = try #require(run.notes.first { $0.contains("Item.code") }, "\(run.notes)")
        #expect(checked == "V1 → V2: whether the values of Item.code convert to Integer 64 was checked after the willMigrate steps of stages[0] ran, "
            + "not before them: every value converts")
        #expect(run.renderText().contains(checked))
    }

    @Test func valuesTheStepsLeaveUnconvertedAreRefusedAfterThemAndNothingIsWritten() throws {
        let (fixture, path) = try store(codes: ["bad", "2", "worse"], willMigrate: [Self.correcting("Item")])
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message))")
        #expect(dryRun.notes.contains { $0.contains("Item.code becomes Integer 64, and 2 stored values do not convert before the willMigrate steps of stages[0]") },
                "\(dryRun.notes)")

        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil)
        let error = try #require(run.error)
        #expect(error.message.hasSuffix(
            "stopped: Item.code becomes Integer 64, and 1 stored values do not convert (for example the text \"worse\" in the object with Z_PK 3) "
                + "(checked after the willMigrate steps of stages[0] ran)"), "\(error.message)")
        #expect(error.hint == "correct the willMigrate steps of stages[0] so that every value of code converts, or a custom stage that computes code (\"map\")")
        // A refusal in the report too, as the dry run's are (JSON `refusals[]`).
        #expect(run.status == .failed && run.refusals.count == 1 && run.refusals.first?.code == .typeChangeNotInferable, "\(run.refusals.map(\.message))")
        #expect(run.refusals.first.map { error.message.hasSuffix("stopped: " + $0.message) && $0.remedy == error.hint } == true)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
    }

    /// Steps on another entity (an update setting a same-named attribute, a delete with no
    /// cascade into Item) cannot correct Item's values: refused up front, no deferral noted.
    @Test func stepsThatCannotTouchTheValuesLeaveTheRefusalUpFront() throws {
        let tagOnly: [CustomStageDefinition.DataStep] = [
            Self.correcting("Tag"), .init(entity: "Tag", action: .delete, condition: "code = '7'", jsonPath: "stages[0].willMigrate[1]"),
        ]
        let (fixture, path) = try store(codes: ["bad", "2"], willMigrate: tagOnly)
        for dryRun in [true, false] {
            let report = fixture.migrate(path, dryRun: dryRun)
            #expect(report.status == .refused && report.exitStatus == .refused && report.result == nil)
            let refusal = try #require(report.refusals.first)
            #expect(refusal.code == .typeChangeNotInferable && refusal.rowCount == 1)
            #expect(refusal.message == "Item.code becomes Integer 64, and 1 stored values do not convert (for example the text \"bad\" in the object with Z_PK 1)")
            #expect(!report.notes.contains { $0.contains("Item.code") }, "\(report.notes)")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    // MARK: A later hop reading an earlier hop's conversion

    /// V1 → V2 makes Item.code an Integer 64 (custom, with `steps` as its willMigrate), V2 → V3
    /// an Integer 16 (lightweight). The store holds Items with `codes`.
    private func twoHops(codes: [String], willMigrate steps: [CustomStageDefinition.DataStep]) throws -> (MigrationFixture, String) {
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("code")])]),
                M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("code", .integer64)])]),
                M.version("V3", [EntityDescription(name: "Item", properties: [M.attribute("code", .integer16)])]),
            ],
            stages: [
                CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: CustomStageDefinition(willMigrate: steps), jsonPath: "stages[0]"),
                CatalogStage(kind: .lightweight, span: .pair(from: "V2", to: "V3"), jsonPath: "stages[1]"),
            ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for code in codes { try context.insert("Item", values: ["code": .text(code)]) }
        }
        return (fixture, path)
    }

    /// The second hop's counts read the first hop's conversion of the value a step corrects: they
    /// never stop on it (a review's dry run and run failed there, exit 70, with SQLite's error
    /// and the statement), and the migration runs to V3 with the corrected value.
    @Test func aLaterHopsCountsReadAnEarlierConversionWithoutStopping() throws {
        let (fixture, path) = try twoHops(codes: ["bad", "2"], willMigrate: [Self.correcting("Item")])
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .success && dryRun.error == nil, "\(dryRun.refusals.map(\.message)) \(dryRun.error?.message ?? "")")
        let run = fixture.migrate(path)
        let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
        #expect(try fixture.objects(output, at: "V3", "Item").map { $0["code"] } == [.integer(7), .integer(2)])
    }

    /// Without a step: the first hop's conversion check refuses the value, up front, once — the
    /// second hop neither stops on it nor counts it again; a value that converts to Integer 64
    /// but not to Integer 16 is the second hop's refusal.
    @Test func aValueThatDoesNotConvertIsTheFirstHopsRefusalNotALaterHopsError() throws {
        let (fixture, path) = try twoHops(codes: ["bad", "2", "70000"], willMigrate: [])
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .refused && dryRun.error == nil, "\(dryRun.error?.message ?? "")")
        #expect(dryRun.refusals.map(\.code) == [.typeChangeNotInferable, .typeChangeNotInferable], "\(dryRun.refusals.map(\.message))")
        #expect(dryRun.refusals.map(\.hop) == ["V1 → V2", "V2 → V3"], "\(dryRun.refusals.map(\.message))")
        #expect(dryRun.refusals.map(\.rowCount) == [1, 1], "\(dryRun.refusals.map(\.message))")
    }

}
