import Foundation
import Testing
@testable import StoreRescue

/// Review rv7's migration findings, each failing before its fix.
@Suite struct ReviewRV7MigrationTests {
    /// /tmp/rv7w/ovf (c.json, s.sqlite).
    @Test func anExpressionSQLiteStopsOnBeforeAHopThatRemovesItIsRefusedNotAnInternalError() throws {
        typealias M = TestModel
        let custom = CustomStageDefinition(map: [.init(entity: "Item", assignments: [.init(
            property: "code", expression: "CASE WHEN label = 'abc' THEN abs(-9223372036854775807 - 1) ELSE label END", jsonPath: "stages[0].map.Item.code")])])
        let fixture = try MigrationFixture(
            versions: [
                M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("label")])]),
                M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("label"), M.attribute("code")])], identifiers: ["2"]),
                M.version("V3", [EntityDescription(name: "Item", properties: [M.attribute("label"), M.attribute("other")])], identifiers: ["3"]),
            ],
            stages: [
                CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]"),
                CatalogStage(kind: .lightweight, span: .versions(["V3"]), jsonPath: "stages[1]"),
            ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for label in ["abc", "5"] { try context.insert("Item", values: ["label": .text(label)]) }
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.error == nil && dryRun.exitStatus == .refused, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        let run = fixture.migrate(path)
        #expect(run.error == nil && run.exitStatus == .refused, "\(run.status) \(run.error?.message ?? "")")
    }

    /// `--from V2`, which then meets the downgrade refusal. CLI: /tmp/rv7w/t3 (tie-nostages.json).
    @Test func anAmbiguousStoreAfterTheTargetIsRefusedAsNewerNotAsUnidentified() throws {
        let fixture = try MigrationFixture(catalogJSON: #"""
            {"formatVersion": 1, "app": "Cats", "current": "V3", "versions": [{"name": "V1", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]}, {"name": "V2", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}], "identifiers": ["2"]}, {"name": "V2b", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}], "identifiers": ["2b"]}, {"name": "V3", "identifiers": ["3"], "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "String"}, {"name": "age", "type": "Int16", "optional": true}, {"name": "nick", "type": "String", "optional": true}]}, {"name": "Owner", "attributes": [{"name": "name", "type": "String"}]}]}]}
            """#)
        let path = try fixture.store(at: "V2")
        let report = fixture.migrate(path, to: "V1", dryRun: true)
        #expect(report.refusals.map(\.code) == [.storeNewer], "\(report.refusals.map(\.message))")
    }

}
