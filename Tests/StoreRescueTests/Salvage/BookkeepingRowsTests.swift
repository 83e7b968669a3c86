import Foundation
import Testing
@testable import StoreRescue

/// The bounds on `sqlite_sequence` rows a salvage keeps.
@Suite struct BookkeepingRowsTests {
    /// `sqlite_sequence` rows from an intact tree, one per table, named `name(index)`.
    private func add(_ count: Int, to rows: inout BookkeepingRows, name: (Int) -> String) {
        var columns: [RecordColumn] = []
        for index in 0..<count {
            let record = IndexTreeBuilderTests.record([.text(name(index)), .integer(1000)])
            record.withUnsafeBytes { payload in
                _ = RecordDecoder.decode(payload, declaredSize: payload.count, into: &columns)
                rows.add(.sequence, rowid: Int64(index + 1), record: columns, payload: payload, encoding: .utf8)
            }
        }
    }

    /// A store with more `AUTOINCREMENT` tables than the 10,000-row bound, or whose names take more
    /// than its 1 MiB, keeps every entry of its intact `sqlite_sequence`: the bounds grow to one
    /// entry per table of the schema. A review found 50 of 10,050 counters fell to 1 (the entries
    /// past 10,000 "not kept", called damage). Rows past one per table are still not kept.
    @Test func theBoundsHoldOneEntryPerAutoincrementTable() {
        let name = { (index: Int) in "t\(index)" }
        var rows = BookkeepingRows()
        rows.autoincrementTables = Set((0..<10_050).map(name))
        add(10_050, to: &rows, name: name)
        #expect(rows.sequenceByTable.count == 10_050)
        #expect(rows.sequenceRowsNotKept == 0)

        let long = { (index: Int) in String(repeating: "n", count: 400) + "\(index)" }
        var longNames = BookkeepingRows()
        longNames.autoincrementTables = Set((0..<3_000).map(long))
        add(3_000, to: &longNames, name: long)
        #expect(longNames.sequenceByTable.count == 3_000, "1.2 MB of names")
        #expect(longNames.sequenceRowsNotKept == 0)

        var unknown = BookkeepingRows()
        add(10_050, to: &unknown, name: name)
        #expect(unknown.sequenceByTable.count == BookkeepingRows.maximumSequenceRows, "no schema: the fixed bound")
        #expect(unknown.sequenceRowsNotKept == 50)
    }
}
