import Foundation
import Testing
@testable import StoreRescue

/// The target's uniqueness constraints, checked against the data the way the run will write it:
/// values a type change makes equal are forecast by the dry run (the same refusal the run
/// makes).
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
}
