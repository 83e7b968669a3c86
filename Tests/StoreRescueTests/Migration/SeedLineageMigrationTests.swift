import Foundation
import Testing
@testable import StoreRescue

/// The seed's observations reproduced on data: which default a new attribute gets depends on the
/// hops, and the seed's full plan takes a V1 store to V10 in one rebuild.
@Suite struct SeedLineageMigrationTests {
    typealias S = SeedLineage

    /// A store at `version` with three items, built through the seed's own earlier versions' fields.
    private func fixture(_ stages: [CatalogStage], storeAt version: String) throws -> (MigrationFixture, String) {
        let fixture = try MigrationFixture(versions: S.versions(), stages: stages)
        let path = try fixture.store(at: version)
        try fixture.edit(path, at: version) { context in
            for index in 1...3 {
                var values: [String: SQLiteValue] = ["title": .text("item \(index)")]
                if version != "V1" { values["name"] = .text("name \(index)") }
                if !["V1", "V2"].contains(version) { values["id"] = .blob(StorageValue.uuidBytes(UUID())) }
                try context.insert("Item", values: values)
            }
        }
        return (fixture, path)
    }

    private func attr5(_ fixture: MigrationFixture, _ report: MigrationReport, at version: String) throws -> [SQLiteValue] {
        let output = try #require(report.result?.path, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        return try fixture.objects(output, at: version, "Item").map { $0["attr5"] ?? .null }
    }

    @Test func v3ToV6InOneHopTakesV6sDefault() throws {
        // #1/#2: V3 → V6 gives attr5 = 2 (V6's default).
        let (fixture, path) = try fixture([S.lightweight([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0)], storeAt: "V3")
        let report = fixture.migrate(path, to: "V6")
        #expect(report.status == .migrated)
        #expect(try attr5(fixture, report, at: "V6") == [.integer(2), .integer(2), .integer(2)])
        #expect(report.hops.map { "\($0.from)>\($0.to)" } == ["V3>V6"])
        #expect(report.result?.intermediateVersions == 0)
    }

    @Test func v3ToV7InOneHopTakesV7sDefault() throws {
        let (fixture, path) = try fixture([S.lightweight(Array(1...10), 0)], storeAt: "V3")
        let report = fixture.migrate(path, to: "V7")
        #expect(try attr5(fixture, report, at: "V7") == [.integer(4), .integer(4), .integer(4)])
    }

    @Test func steppingThroughPairStagesKeepsTheDefaultWrittenAtV5() throws {
        // The seed's "manually incrementing versions": attr5 is 0 after V4 → V5 and stays 0.
        let (fixture, path) = try fixture((1...9).map { S.pair($0, $0 + 1, $0 - 1) }, storeAt: "V3")
        let report = fixture.migrate(path, to: "V7")
        #expect(report.hops.map { "\($0.from)>\($0.to)" } == ["V3>V4", "V4>V5", "V5>V6", "V6>V7"])
        #expect(try attr5(fixture, report, at: "V7") == [.integer(0), .integer(0), .integer(0)])
        // Four hops, still one rebuild.
        #expect(report.result?.intermediateVersions == 0)
    }

    @Test func theFullPlanTakesAV1StoreToV10() throws {
        let (fixture, path) = try fixture(S.fullPlan(), storeAt: "V1")
        let report = fixture.migrate(path)
        #expect(report.status == .migrated, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        let output = try #require(report.result?.path)
        try fixture.expectExactLayout(output, version: "V10")
        let items = try fixture.objects(output, at: "V10", "Item")
        #expect(items.map { $0["name"] } == [.text("item 1"), .text("item 2"), .text("item 3")])
        let ids = items.compactMap { $0["id"]?.data }
        #expect(ids.count == 3 && Set(ids).count == 3 && ids.allSatisfy { $0.count == 16 })
        #expect(items.allSatisfy { $0["attr5"] == .integer(2) && $0["count"] == .integer(0) && $0["attr6"] == nil })
        // The plan: one rebuild for six hops (uuid() is evaluated once per item).
        #expect(report.result?.intermediateVersions == 0)
        #expect(report.result?.verification.matchOutcome == "exact" && report.result?.verification.matchVersion == "V10")
    }

    @Test func aCustomStageWithoutItsMapIsRefusedAs134110() throws {
        // V1 → V2 adds the required `name` with no default: without a map, 134110 naming it.
        let stages = [S.custom(1, 2, 0), S.custom(2, 3, 1, S.givesIDs), S.lightweight([4, 5, 6], 2), S.custom(7, 8, 3), S.lightweight([9, 10], 4)]
        let (fixture, path) = try fixture(stages, storeAt: "V1")
        let report = fixture.migrate(path)
        #expect(report.status == .refused && report.exitStatus == .refused)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .mandatoryValueMissing && refusal.coreDataErrorCode == 134110)
        #expect(refusal.entity == "Item" && refusal.property == "name" && refusal.rowCount == 3)
        #expect(refusal.remedy.contains("\"map\": {\"Item\": {\"name\""))
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }
}
