import Foundation
import Testing
@testable import StoreRescue

/// A column an app added itself to a many-to-many join table (`Z_1TAGS`): the migration writes
/// a relationship's links as pairs of keys, so the column is left out — reported as one of the
/// app's own columns left out, its values counted as discarded data, by the dry run and the run
/// alike. It used to be dropped without a word ("discarded: nothing").
@Suite struct JoinTableOwnColumnTests {
    private func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    private func objects(_ value: Any?) -> [[String: Any]] { value as? [[String: Any]] ?? [] }

    @Test func theJournalsJoinTableColumnIsLeftOutAndCounted() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try FileManager.default.copyItem(atPath: UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("ALTER TABLE Z_1TAGS ADD COLUMN ZAPPWEIGHT INTEGER; UPDATE Z_1TAGS SET ZAPPWEIGHT = Z_1ENTRIES * 10")
        let links = try #require(try connection.scalar("SELECT count(*) FROM Z_1TAGS")?.int64)
        #expect(links > 0)
        let catalog = try Catalog.load(path: UpgradeFixture.journal.appendingPathComponent("catalog.json").path)

        let plan = StoreMigrator.migrate(store: store, catalog: catalog, to: directory.path("plan.sqlite"), options: MigrationOptions(isDryRun: true))
        #expect(plan.status == .wouldMigrate, "\(plan.error?.message ?? "") \(plan.refusals.map(\.message))")
        let leftOut = objects(try json(plan)["leftOutColumns"])
        #expect(leftOut.count == 1 && leftOut.first?["column"] as? String == "Z_1TAGS.ZAPPWEIGHT" && leftOut.first?["values"] as? Int == Int(links)
                && leftOut.first?["discardsData"] as? Bool == true && leftOut.first?["hop"] as? String == "V1 → V2", "\(leftOut)")
        let reason: String = leftOut.first?["reason"] as? String ?? ""
        #expect(reason.contains("join table"), "\(leftOut)")
        #expect(plan.hops.first?.discardedValues.contains { $0.name == "own column Z_1TAGS.ZAPPWEIGHT" && $0.count == links } == true,
                "\(plan.hops.first?.discardedValues.map { "\($0.name) \($0.count)" } ?? [])")
        #expect(plan.renderText().contains("left out: Z_1TAGS.ZAPPWEIGHT at V1 → V2: \(links) values discarded"), "\(plan.renderText())")

        let output = directory.path("o.sqlite")
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: output)
        #expect(report.status == .migrated, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        let result = try #require(try json(report)["result"] as? [String: Any])
        let resultLeftOut = objects(result["leftOutColumns"])
        #expect(resultLeftOut.count == 1 && resultLeftOut.first?["column"] as? String == "Z_1TAGS.ZAPPWEIGHT"
                && resultLeftOut.first?["values"] as? Int == Int(links), "\(result)")
        #expect(report.renderText().contains("Left out: column Z_1TAGS.ZAPPWEIGHT at V1 → V2: \(links) values discarded"), "\(report.renderText())")
        #expect(report.result?.joinRows.values.reduce(0, +) == links, "the links themselves are kept")
        #expect(report.result?.verification.matchOutcome == "exact")
    }

    @Test func upgradeReportsTheJoinTableColumnLeftOut() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            .execute("ALTER TABLE Z_1TAGS ADD COLUMN ZAPPWEIGHT INTEGER; UPDATE Z_1TAGS SET ZAPPWEIGHT = 1")
        let plan = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options(dryRun: true))
        #expect(plan.renderText().contains("the app's own column, left out: Z_1TAGS.ZAPPWEIGHT at V1 → V2"), "\(plan.renderText())")
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: fixture.options())
        #expect(report.status == .upgraded, "\(report.error?.message ?? "") \(report.refusals.map(\.message))")
        #expect(report.renderText().contains("left out: column Z_1TAGS.ZAPPWEIGHT at V1 → V2"), "\(report.renderText())")
    }
}
