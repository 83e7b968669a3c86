import Foundation
import Testing
@testable import StoreRescue

/// `salvage --catalog` writes the version's columns only: an app's own column is not carried
/// there, and the report says so (it went without a word).
@Suite struct OwnColumnSalvageTests {
    @Test func salvageInCoreDataModeReportsTheOwnColumnItLeavesOut() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try FileManager.default.copyItem(atPath: UpgradeFixture.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("ALTER TABLE ZENTRY ADD COLUMN ZAPPNOTE TEXT; UPDATE ZENTRY SET ZAPPNOTE = 'x'")
        let catalog = try Catalog.load(path: UpgradeFixture.journal.appendingPathComponent("catalog.json").path)
        let report = try Salvager.salvage(store: store, into: directory.path("o.sqlite"), options: SalvageOptions(catalog: catalog))
        #expect(report.notes.contains { $0.hasPrefix("ZENTRY has columns the V1 layout does not have (the app's own, or a later version's): ZAPPNOTE;") }, "\(report.notes)")
    }
}
