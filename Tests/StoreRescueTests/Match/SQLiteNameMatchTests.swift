import Foundation
import Testing
@testable import StoreRescue

/// `match` compares a store's tables, columns and indexes with a version's layout by name as
/// SQLite compares names: bytes, ASCII letters without case. Swift's `uppercased()` folds more
/// (`ſ` to `S`, `ı` to `I`), so a store whose join table `Z_1TAGS` had become `Z_1TAGſ` — to
/// SQLite another table — matched V1 exactly, and `upgrade` then stopped in V4 with "no such table:
/// base.Z_1TAGS" and a hint to correct the catalog.
@Suite struct SQLiteNameMatchTests {
    private func journal(in dir: TemporaryDirectory, _ sql: String) throws -> (store: String, catalog: Catalog) {
        let folder = dir.path("Journal")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Journal"), toPath: folder)
        let store = folder + "/Journal.sqlite"
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute(sql)
        return (store, try Catalog.load(path: folder + "/catalog.json"))
    }

    private func differences(_ result: MatchResult, _ version: String) -> [Difference] {
        result.candidates.first { $0.version == version }?.differences ?? []
    }

    @Test func aTableNamedLikeALayoutTableOnlyToSwiftIsMissing() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try journal(in: dir, "ALTER TABLE Z_1TAGS RENAME TO \"Z_1TAG\u{17F}\"")
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        let v1 = differences(result, "V1")
        #expect(result.diagnosis.reasons.contains { $0.contains("table Z_1TAGS is missing") }, "\(result.diagnosis.reasons)")
        #expect(v1.contains { $0.kind == .tableMissing && $0.table == "Z_1TAGS" && $0.impact == .blocking }, "\(v1.map(\.detail))")
        #expect(v1.contains { $0.kind == .tableExtra && $0.table == "Z_1TAG\u{17F}" }, "\(v1.map(\.detail))")
    }

    @Test func aColumnNamedLikeALayoutColumnOnlyToSwiftIsMissing() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try journal(in: dir, "ALTER TABLE ZENTRY RENAME COLUMN ZTITLE TO \"ZT\u{131}TLE\"")
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        let v1 = differences(result, "V1")
        #expect(v1.contains { $0.kind == .columnMissing && $0.impact == .blocking && $0.column == "ZTITLE" }, "\(v1.map(\.detail))")
        #expect(v1.contains { $0.kind == .columnExtra && $0.column == "ZT\u{131}TLE" }, "\(v1.map(\.detail))")
    }

    @Test func namesDifferingInASCIICaseAreStillTheSame() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try journal(in: dir, "ALTER TABLE ZENTRY RENAME COLUMN ZTITLE TO ztitle")
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(result.outcome == .exact && result.version == "V1", "\(result.outcome) \(String(describing: result.version))")
        #expect(!differences(result, "V1").contains { $0.kind == .columnMissing || $0.kind == .columnExtra })
    }
}
