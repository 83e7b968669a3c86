import Foundation
import Testing
@testable import StoreRescue

/// Plain-mode salvage: what an undamaged or damaged database becomes, row for row.
@Suite struct SalvagerTests {
    /// An undamaged database comes back whole: every row of every table with its storage class
    /// and bytes, rowids kept, the column added later filled with its default in older rows.
    @Test func undamagedDatabaseComesBackWhole() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let before = try SalvageFixtures.snapshot(directory.url.path)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let original = try SalvageFixtures.rows(of: store)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(Set(recovered.keys) == Set(original.keys).union(report.lostAndFound.tables), "the tables, and deleted_and_found_<n>")
        #expect(report.lostAndFound.tables == ["deleted_and_found_4"])
        for (table, rows) in original { #expect(recovered[table] == rows, "table \(table)") }
        #expect(original["events"]?[1] == [.text("logout"), .integer(1000), .text("app")], "the ALTER TABLE default in an old row")
        #expect(report.mode == .plain)
        #expect(report.schemaSource == "sqlite_schema")
        #expect(report.version == nil)
        #expect(report.metadata == nil)
        #expect(report.totals.recovered == original.values.reduce(0) { $0 + $1.count })
        #expect(report.totals.unreadable == 0)
        #expect(report.pages.damaged == 0)
        #expect(report.pages.missing == 0)
        let people = try #require(report.tables.first { $0.name == "people" })
        #expect(people.identifiedBy.schemaTree > 0 && people.identifiedBy.pointerMap == 0 && people.identifiedBy.recordShape == 0)
        #expect(people.rows.deleted > 0, "the deleted rows on free pages are reported")
        #expect(people.rows.recovered == original["people"]?.count)
        var after = try SalvageFixtures.snapshot(directory.url.path)
        after["out.sqlite"] = nil
        #expect(after == before, "the store was not changed and nothing was created beside it")
        let check = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable)).scalar("PRAGMA integrity_check")
        #expect(check?.string == "ok")
    }

    /// Rows from free pages never join the live table: they go to `deleted_and_found_<n>`, named
    /// by the table they most likely came from.
    @Test func deletedRowsAreKeptApart() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store, rows: 300)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        let last = SalvageFixtures.lastLivePerson()
        #expect(recovered["people"]?.count == Int(last))
        #expect(recovered["people"]?.keys.allSatisfy { $0 <= last } == true, "no deleted row among the live ones")
        let loose = report.lostAndFound.tables.filter { $0.hasPrefix("deleted_and_found_") }
        #expect(!loose.isEmpty)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        var deletedIDs: [Int64] = []
        for table in loose {
            deletedIDs += try connection.rows("SELECT id FROM \(table.quotedSQLIdentifier) WHERE likely_table = 'people'").compactMap { $0[0].int64 }
        }
        #expect(!deletedIDs.isEmpty)
        #expect(deletedIDs.allSatisfy { $0 > last }, "only rows that were deleted")
        #expect(Set(deletedIDs).count == deletedIDs.count)
        #expect(report.tables.first { $0.name == "people" }?.rows.deleted == deletedIDs.count)
    }

    /// Page 1 gone (header and schema root): the schema is found again on the pages it spills
    /// onto when it has several, else rows are kept by column count in `lost_and_found_<n>`.
    @Test func pageOneZeroedKeepsEveryRowInLostAndFound() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let original = try SalvageFixtures.rows(of: store)
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.schemaSource == "none")
        #expect(report.file.pageSizeSource == "guessed")
        #expect(report.lostAndFound.rows == original.values.reduce(0) { $0 + $1.count })
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        // The people rows: 4 columns (the INTEGER PRIMARY KEY stored as NULL), by rowid.
        let people = try connection.rows("SELECT id, c1 FROM lost_and_found_4 ORDER BY id")
        #expect(people.count == original["people"]?.count)
        #expect(people.first == [.integer(1), original["people"]?[1]?[1] ?? .null])
    }

    /// Every real sample store salvages to the same rows SQLite reads from it.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"), arguments: Samples.allStores)
    func sampleStoresComeBackRowForRow(sample: String) throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample(sample, as: "store.sqlite")
        let before = try SalvageFixtures.snapshot(directory.url.path)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        // Read through a private copy when a -wal holds data (SQLite would create -shm beside it).
        let opened = try OpenedStore(path: store, options: StoreOpenOptions(alwaysCopies: true))
        let expected = try SalvageFixtures.rows(of: opened.connection)
        let recovered = try SalvageFixtures.rows(of: output)
        for (table, rows) in expected {
            #expect(recovered[table] == rows, "\(sample): table \(table)")
        }
        #expect(report.totals.unreadable == 0, "\(sample)")
        #expect(report.pages.damaged == 0, "\(sample)")
        var after = try SalvageFixtures.snapshot(directory.url.path)
        after["out.sqlite"] = nil
        #expect(after == before, "\(sample): nothing next to the store changed")
    }
}
