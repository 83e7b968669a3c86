import Foundation
import Testing
@testable import StoreRescue

/// Every public report, encoded with its optional values nil, writes each of them as `null`:
/// `Docs/JSON-OUTPUT.md` promises jobs that a documented key is never missing, and synthesized
/// `Codable` leaves a nil optional out unless it is `@NullEncoded` (review rv8 #3:
/// `planIssues[].stage` was missing from `catalog show`, `migrate` and `upgrade.migration`).
@Suite struct ReportNullContractTests {
    /// Documented as present only in some runs: `inspect`'s row counts "with `--counts`".
    private static let documentedAbsent: Set<String> = [".rowCount"]

    /// The Journal sample copied into `dir`, with a catalog whose stages leave V1 out (plan
    /// issues without a stage: `versionNotInStages`, `storeVersionNotInStages`).
    private func journal(in dir: TemporaryDirectory) throws -> (store: String, catalog: Catalog, catalogPath: String) {
        let folder = dir.path("Journal")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Journal"), toPath: folder)
        let original = try Data(contentsOf: URL(fileURLWithPath: folder + "/catalog.json"))
        var object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        let stages = try #require(object["stages"] as? [Any])
        object["stages"] = Array(stages.dropFirst())
        let path = folder + "/without-v1.json"
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        return (folder + "/Journal.sqlite", try Catalog.load(path: path), path)
    }

    private func expectNulls(_ value: some Encodable, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let missing = try NullContract.missingNulls(in: value, documentedAbsent: Self.documentedAbsent)
        #expect(missing.isEmpty, "\(label): nil values left out of the JSON instead of null: \(missing)", sourceLocation: sourceLocation)
    }

    @Test func aPlanIssueWithoutAStageHasStageNull() throws {
        let issue = PlanIssue(.warning, .versionNotInStages, "V1 is named by no stage", onDevice: "134504")
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(issue)) as? [String: Any])
        #expect(json["stage"] is NSNull, "stage: \(String(describing: json["stage"]))")
    }

    @Test func catalogMigrateAndUpgradeReportsWriteEveryNil() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog, catalogPath) = try journal(in: dir)
        let show = CatalogReport(catalog: catalog, path: catalogPath)
        #expect(show.planIssues.contains { $0.stage == nil })
        try expectNulls(show, "catalog show")
        try expectNulls(CatalogReport(failedPath: catalogPath, error: CatalogLoadError.missing(path: catalogPath)), "catalog show, failed")

        let migration = StoreMigrator.migrate(store: store, catalog: catalog, to: "", options: MigrationOptions(isDryRun: true))
        #expect(migration.planIssues.contains { $0.stage == nil })
        try expectNulls(migration, "migrate --dry-run")
        let upgrade = StoreUpgrader.upgrade(
            store: store, catalog: catalog, options: UpgradeOptions(backupDirectory: dir.path("backups"), isDryRun: true))
        #expect(upgrade.migration?.planIssues.contains { $0.stage == nil } == true)
        try expectNulls(upgrade, "upgrade --dry-run")
        try expectNulls(UpgradeReport(command: "upgrade", store: store, catalog: catalogPath, dryRun: false), "upgrade, nothing known")
        try expectNulls(
            MigrationReport(store: store, output: nil, catalog: catalogPath, dryRun: true, error: CatalogLoadError.missing(path: catalogPath)),
            "migrate, failed")
    }

    @Test func inspectMatchAndSalvageReportsWriteEveryNil() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog, _) = try journal(in: dir)
        try expectNulls(StoreInspector.inspect(path: store), "inspect")
        try expectNulls(StoreInspector.inspect(path: dir.path("absent.sqlite")), "inspect, missing")
        try expectNulls(StoreMatcher.match(storePath: store, catalog: catalog), "match")
        try expectNulls(StoreMatcher.match(storePath: dir.path("absent.sqlite"), catalog: catalog), "match, missing")
        let damaged = dir.path("Notes.sqlite")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Damaged/Notes.sqlite"), toPath: damaged)
        try expectNulls(try Salvager.salvage(store: damaged, into: dir.path("plain.sqlite")), "salvage, plain")
    }
}
