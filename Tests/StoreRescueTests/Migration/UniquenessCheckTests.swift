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

    /// A kept constraint over a `map` whose value does not convert or is NULL for a required
    /// attribute (with or without a `willMigrate` step, which defers the check to the run): the
    /// run stops on the object as the writer names it (exit 3), as before the uniqueness check
    /// read these values; the dry run does not fail.
    static let computedValuesTheWriterRefuses: [(type: AttributeType, optional: Bool, expression: String, willMigrate: Bool, error: String)] = [
        (.integer64, true, "label", false, "Item.code of the object with Z_PK 1 is the text \"abc\", which is not an Integer 64"),
        (.integer64, true, "label", true, "Item.code of the object with Z_PK 1 is the text \"abc\", which is not an Integer 64"),
        (.string, false, "NULLIF(label, 'abc')", false, "Item.code of the object with Z_PK 1 is NULL, and code is required"),
        (.string, false, "NULLIF(label, 'abc')", true, "Item.code of the object with Z_PK 1 is NULL, and code is required"),
    ]

    @Test(arguments: 0..<computedValuesTheWriterRefuses.count)
    func aComputedValueTheWriterRefusesStopsTheRunNotTheUniquenessCheck(_ index: Int) throws {
        let (type, optional, expression, willMigrate, error) = Self.computedValuesTheWriterRefuses[index]
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
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate && dryRun.error == nil, "\(dryRun.error?.message ?? "") \(dryRun.refusals.map(\.message))")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil)
        let message = try #require(run.error?.message)
        #expect(message.contains(error) && !message.contains("internal error"), "\(message)")
    }
}
