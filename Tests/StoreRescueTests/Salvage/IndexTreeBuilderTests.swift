import Foundation
import Testing
@testable import StoreRescue

/// Index b-trees written page by page (`IndexKeySorter`, `IndexTreeBuilder`) must be the trees
/// SQLite builds itself: `integrity_check` ok (every table row found in every index, nothing
/// else), the same entries in the same order with the same values and storage classes as
/// SQLite's `REINDEX` of the same table records, and the file still SQLite's to change.
@Suite struct IndexTreeBuilderTests {
    /// A record of `values`, integers always in 8 bytes (the index's own record must not
    /// depend on how the table's record spelled a number).
    static func record(_ values: [SQLiteValue]) -> [UInt8] {
        var types: [UInt64] = []
        var body: [UInt8] = []
        for value in values {
            switch value {
            case .null: types.append(0)
            case .integer(let number):
                types.append(6)
                for shift in stride(from: 56, through: 0, by: -8) { body.append(UInt8(truncatingIfNeeded: number >> Int64(shift))) }
            case .real(let number):
                types.append(7)
                for shift in stride(from: 56, through: 0, by: -8) { body.append(UInt8(truncatingIfNeeded: number.bitPattern >> UInt64(shift))) }
            case .text(let text):
                let bytes = Array(text.utf8)
                types.append(UInt64(13 + 2 * bytes.count))
                body += bytes
            case .blob(let data):
                types.append(UInt64(12 + 2 * data.count))
                body += data
            }
        }
        var header: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 9)
        for type in types {
            let length = scratch.withUnsafeMutableBytes { SQLiteVarint.write(type, into: $0, at: 0) }
            header += scratch[..<length]
        }
        precondition(header.count + 1 < 128)
        return [UInt8(header.count + 1)] + header + body
    }

    struct Built {
        var path: String
        var reference: String
        /// Indexes left to `REINDEX` (a value the sorter could not order).
        var abandoned: [String]
        var refused: Bool
        var balanced: Set<Int>
    }

    /// Builds table `t` (`tableSQL`) with `rows` and `indexSQL` page by page (the table by
    /// `TableTreeBuilder`, each index from its keys), spilling the keys every `spillEvery` rows
    /// when set; indexes whose sorter gave up are filled by `REINDEX`, as a salvage does. Unless
    /// a UNIQUE index refused, `reference` is a copy whose indexes SQLite rebuilt itself.
    static func build(
        in directory: TemporaryDirectory, pageSize: Int = 512, autoVacuum: Bool = true, tableSQL: String, indexSQL: [String],
        rows: [(rowid: Int64, values: [SQLiteValue])], spillEvery: Int? = nil
    ) throws -> Built {
        let reference = directory.path("reference-\(UUID().uuidString).sqlite")
        let path = directory.path("built-\(UUID().uuidString).sqlite")
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("PRAGMA page_size = \(pageSize); PRAGMA auto_vacuum = \(autoVacuum ? 2 : 0)")
            try connection.execute(tableSQL)
            for sql in indexSQL { try connection.execute(sql) }
        }
        let root: Int
        let indexes: [BulkIndex]
        let rowidColumn: Int?
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
            root = try #require(try connection.scalar("SELECT rootpage FROM sqlite_schema WHERE name = 't'")?.int64.map(Int.init))
            indexes = try #require(try BulkIndex.read(table: "t", connection: connection))
            rowidColumn = try connection.scalar("SELECT cid FROM pragma_table_info('t') WHERE pk = 1 AND upper(type) = 'INTEGER'")?.int64.map(Int.init)
        }
        let appender = try PageAppender(path: path)
        let table = TableTreeBuilder(file: appender, root: UInt32(root))
        let sorters = IndexKeySorter.sorters(for: indexes, rowidColumn: rowidColumn, usableSize: appender.usableSize) { directory.path("keys-\(UUID().uuidString)-\($0)") }
        var columns: [RecordColumn] = []
        for (number, row) in rows.enumerated() {
            let bytes = record(row.values)
            try bytes.withUnsafeBytes { payload in
                #expect(RecordDecoder.decode(payload, declaredSize: payload.count, into: &columns) == .complete)
                try table.append(rowid: row.rowid, payload: payload)
                for sorter in sorters { sorter.add(rowid: row.rowid, record: columns, payload: payload) }
            }
            if let spillEvery, (number + 1) % spillEvery == 0 {
                for sorter in sorters { try sorter.spill() }
            }
        }
        try table.finish()
        var refused = false
        var built: Set<String> = []
        var balanced: Set<Int> = []
        for sorter in sorters where !sorter.isAbandoned {
            let trees = sorter.indexes.map { IndexTreeBuilder(file: appender, root: $0.rootPage) }
            let written = try IndexTreeBuilder.writeTrees(of: sorter, to: appender, trees: trees)
            #expect(written.entries == rows.count * sorter.indexes.count)
            refused = refused || written.refused
            built.formUnion(sorter.indexes.map(\.name))
            for tree in trees { balanced.formUnion(tree.levelsBalanced) }
        }
        try appender.finish()
        let abandoned = indexes.map(\.name).filter { !built.contains($0) }
        if !refused {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
            for name in abandoned { try connection.execute("REINDEX \(name.quotedSQLIdentifier)") }
            // SQLite's own indexes over the very same table records: a copy, every index rebuilt.
            try FileManager.default.copyItem(atPath: path, toPath: reference)
            try SQLiteConnection(path: reference, options: SQLiteOpenOptions(mode: .readWrite)).execute("REINDEX t")
        }
        return Built(path: path, reference: reference, abandoned: abandoned, refused: refused, balanced: balanced)
    }

    /// Every entry of index `name` of `table`, in the index's order, as the index holds it (a
    /// covering scan: values and their storage classes from the index's records, then the rowid).
    static func entries(of name: String, table: String = "t", in path: String) throws -> [String] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        let columns = try connection.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)]).compactMap { $0[0].string }
        let quoted = (columns.map { "quote(\($0.quotedSQLIdentifier)) || ':' || typeof(\($0.quotedSQLIdentifier))" } + ["rowid"]).joined(separator: ", ")
        return try connection.rows("SELECT \(quoted) FROM \(table.quotedSQLIdentifier) INDEXED BY \(name.quotedSQLIdentifier)").map { row in
            row.map { $0.string ?? $0.int64.map(String.init) ?? "?" }.joined(separator: " ")
        }
    }

    static func integrity(_ path: String) throws -> [String] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))
        return try connection.rows("PRAGMA integrity_check").compactMap { $0.first?.string }
    }

    /// SQLite changes the file afterwards: rows added and removed through every index, then an
    /// incremental vacuum that moves pages by their pointer-map entries.
    static func changeWithSQLite(_ path: String, insert: String) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("""
            BEGIN; \(insert); DELETE FROM t WHERE rowid % 3 = 0; COMMIT; PRAGMA incremental_vacuum
            """)
    }

    static let integers: [SQLiteValue] = [
        .null, .integer(0), .integer(1), .integer(-1), .integer(127), .integer(-128), .integer(128), .integer(32_767),
        .integer(-32_769), .integer(8_388_607), .integer(1 << 31), .integer(-(1 << 40)), .integer(1 << 47), .integer(1 << 53),
        .integer(-(1 << 53)), .integer(5), .integer(1 << 62),
    ]
    static let numbers: [SQLiteValue] = [
        .null, .real(5.0), .integer(5), .real(-0.0), .real(0.0), .real(.infinity), .real(-.infinity), .real(1e-300),
        .real(-2.5), .real(1e300), .real(3.25), .integer(-7), .integer(0),
    ]

    /// Text as SQLite orders it in the BINARY collation: bytes, a prefix first (an embedded NUL
    /// included). (Numbers in a text column would be the damage's: `integrity_check` reports
    /// them, so the untyped column `e` holds every class instead.)
    static let texts: [SQLiteValue] = (0..<97).map { .text("name \($0)") } + [
        .text(""), .text("na\u{EF}ve \u{2603}"), .text("a\u{0}b"), .text("a"), .text("a\u{0}"), .text("\u{FFFF}z"), .null,
    ]
    static let blobs: [SQLiteValue] = [
        .blob(Data()), .blob(Data([0])), .blob(Data([0, 0])), .blob(Data([1, 0, 255])), .blob(Data([255])), .null,
        .text("t"), .text(""), .integer(-3), .real(2.5), .integer(0), .blob(Data((0..<40).map { UInt8($0) })),
    ]

    static func mixedRows(_ count: Int) -> [(rowid: Int64, values: [SQLiteValue])] {
        (0..<count).map { position in
            let rowid = Int64(position) * 7 - 1_000
            return (rowid, [
                .null, integers[position % integers.count], numbers[(position * 5) % numbers.count],
                numbers[(position / 3) % numbers.count], texts[position % texts.count], blobs[(position * 7) % blobs.count],
            ])
        }
    }

    static let mixedTable = "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b NUMERIC, c, d VARCHAR, e)"
    static let mixedIndexes = [
        "CREATE INDEX t_a ON t (a)",
        "CREATE INDEX t_b_desc_a ON t (b DESC, a)",
        "CREATE INDEX t_a_id ON t (a, id)",
        "CREATE INDEX t_b ON t (b COLLATE BINARY ASC)",
        "CREATE INDEX t_b_again ON t (b)",
        "CREATE INDEX t_c_b ON t (c, b DESC)",
        "CREATE INDEX t_d ON t (d)",
        "CREATE INDEX t_d_desc_a ON t (d DESC, a)",
        "CREATE INDEX t_e_d ON t (e, d DESC)",
        "CREATE UNIQUE INDEX t_d_id ON t (d, id)",
    ]

    struct Case: CustomTestStringConvertible, Sendable {
        var pageSize: Int
        var autoVacuum: Bool
        var rows: Int
        var spillEvery: Int?
        var testDescription: String {
            "\(rows) rows, \(pageSize)-byte pages\(autoVacuum ? ", auto-vacuum" : "")\(spillEvery.map { ", keys spilled every \($0) rows" } ?? "")"
        }
    }

    @Test(arguments: [
        Case(pageSize: 512, autoVacuum: true, rows: 6_000, spillEvery: nil),
        Case(pageSize: 512, autoVacuum: true, rows: 6_000, spillEvery: 700),
        Case(pageSize: 4096, autoVacuum: false, rows: 20_000, spillEvery: 3_001),
        Case(pageSize: 65_536, autoVacuum: true, rows: 3_000, spillEvery: nil),
        Case(pageSize: 1024, autoVacuum: true, rows: 1, spillEvery: nil),
    ])
    func indexesAreSQLitesOwn(_ shape: Case) throws {
        let directory = try TemporaryDirectory()
        let built = try Self.build(
            in: directory, pageSize: shape.pageSize, autoVacuum: shape.autoVacuum, tableSQL: Self.mixedTable,
            indexSQL: Self.mixedIndexes, rows: Self.mixedRows(shape.rows), spillEvery: shape.spillEvery)
        // Every index is built page by page: numbers by `IndexKeySorter`, text and blobs by
        // `TextIndexKeySorter`.
        #expect(built.abandoned.isEmpty, "\(built.abandoned)")
        #expect(!built.refused)
        let integrity = try Self.integrity(built.path)
        #expect(integrity == ["ok"], "\(integrity.prefix(3))")
        for name in ["t_a", "t_b_desc_a", "t_a_id", "t_b", "t_b_again", "t_c_b", "t_d", "t_d_desc_a", "t_e_d", "t_d_id"] {
            let ours = try Self.entries(of: name, in: built.path)
            #expect(ours.count == shape.rows, "\(name)")
            #expect(ours == (try Self.entries(of: name, in: built.reference)), "\(name)")
        }
        try Self.changeWithSQLite(built.path, insert: "INSERT INTO t (a, b, c, d, e) SELECT a + 1, b, c, d, e FROM t WHERE rowid % 5 = 0")
        #expect(try Self.integrity(built.path) == ["ok"])
    }

    /// Every way a tree can end — a leaf closing on the last entry, an interior page closing on
    /// the last divider — across one, two and three levels: the tree is whole, ordered and
    /// complete each time.
    @Test func treesOfEverySizeAroundPageBoundaries() throws {
        let directory = try TemporaryDirectory()
        var balanced: Set<Int> = []
        let sizes = Array(0...130) + Array(1_780...1_900) + [4_000, 70_000]
        for count in sizes {
            // Values in an order of their own: the sort decides the tree, not the rowids.
            let rows: [(rowid: Int64, values: [SQLiteValue])] = (0..<count).map { position in
                let value = Int64((position * 7_919) % 10_007 + 1_000)
                return (Int64(position + 1), [SQLiteValue.integer(value)])
            }
            let built = try Self.build(in: directory, tableSQL: "CREATE TABLE t (n INTEGER)", indexSQL: ["CREATE INDEX t_n ON t (n)"], rows: rows,
                                       spillEvery: count == 70_000 ? 9_999 : nil)
            balanced.formUnion(built.balanced)
            #expect(try Self.integrity(built.path) == ["ok"], "\(count) entries")
            let keys: [(value: Int64, rowid: Int64)] = rows.map { ($0.values[0].int64 ?? 0, $0.rowid) }
            let expected = keys.sorted { $0 < $1 }.map { "\($0.value):integer \($0.rowid)" }
            #expect(try Self.entries(of: "t_n", in: built.path) == expected, "\(count) entries")
            try? FileManager.default.removeItem(atPath: built.path)
            try? FileManager.default.removeItem(atPath: built.reference)
        }
        // The sizes reach the end-of-tree balancing on the leaves and on the level above.
        #expect(balanced.isSuperset(of: [0, 1]))
    }

    @Test func aUniqueIndexRefusesTheSameValuesTwiceButNotNulls() throws {
        let directory = try TemporaryDirectory()
        let table = "CREATE TABLE t (a INTEGER, b NUMERIC, UNIQUE (a, b))"
        func rows(_ pairs: [(SQLiteValue, SQLiteValue)]) -> [(rowid: Int64, values: [SQLiteValue])] {
            pairs.enumerated().map { (Int64($0.offset + 1), [$0.element.0, $0.element.1]) }
        }
        let distinct = try Self.build(in: directory, tableSQL: table, indexSQL: [], rows: rows([
            (.integer(1), .null), (.integer(1), .null), (.null, .integer(2)), (.integer(1), .integer(2)), (.integer(2), .real(2.5)),
        ]))
        #expect(!distinct.refused)
        #expect(try Self.integrity(distinct.path) == ["ok"])
        #expect(try Self.entries(of: "sqlite_autoindex_t_1", in: distinct.path) == (try Self.entries(of: "sqlite_autoindex_t_1", in: distinct.reference)))
        // 5 and 5.0 are the same value to SQLite.
        let same = try Self.build(in: directory, tableSQL: table, indexSQL: [], rows: rows([
            (.integer(9), .integer(5)), (.integer(1), .integer(1)), (.integer(9), .real(5.0)),
        ]))
        #expect(same.refused)
    }

    @Test(arguments: [
        ("", SQLiteValue.integer((1 << 53) + 1)), ("", .integer(.max)), ("", .real(.nan)),
        ("", .text(String(repeating: "x", count: 200))), ("INTEGER", .text("x")), ("INTEGER", .blob(Data([1]))),
    ])
    func aValueTheSorterCannotOrderLeavesTheIndexToReindex(declaredType: String, value: SQLiteValue) throws {
        let directory = try TemporaryDirectory()
        let rows: [(rowid: Int64, values: [SQLiteValue])] = [(1, [.integer(3)]), (2, [value]), (3, [.integer(1)])]
        let built = try Self.build(in: directory, tableSQL: "CREATE TABLE t (n \(declaredType))", indexSQL: ["CREATE INDEX t_n ON t (n)"], rows: rows)
        #expect(built.abandoned == ["t_n"])
        #expect(try Self.integrity(built.path) == ["ok"])
        #expect(try Self.entries(of: "t_n", in: built.path).count == 3)
    }

    /// Keys that cannot be spilled (the private folder gone, the disk full) are a write failure
    /// naming the file, not a crash: the salvage reports it as exit 74.
    @Test func aSpillThatCannotBeWrittenIsAWriteFailure() throws {
        let directory = try TemporaryDirectory()
        let index = BulkIndex(name: "t_n", rootPage: 3, isUnique: false,
                              columns: [.init(tableColumn: 0, descending: false, affinity: .integer)])
        let spillPath = directory.path("missing-folder/keys")
        let sorter = IndexKeySorter(indexes: [index], rowidColumn: nil, spillPath: spillPath)
        var columns: [RecordColumn] = []
        Self.record([.integer(42)]).withUnsafeBytes { payload in
            #expect(RecordDecoder.decode(payload, declaredSize: payload.count, into: &columns) == .complete)
            sorter.add(rowid: 1, record: columns, payload: payload)
        }
        #expect(sorter.count == 1 && sorter.bytesHeld == 3 * 8)
        let error = #expect(throws: SalvageError.self) { try sorter.spill() }
        guard case .writeFailed(let path, _) = error else {
            Issue.record("not a write failure: \(String(describing: error))")
            return
        }
        #expect(path == spillPath)
    }

    /// A cancellation (SIGINT, SIGTERM) stops the writing of a large table's index trees within
    /// a few thousand entries — it used to go on to the end, 0.5 s on the 2,000,000-row store,
    /// and the 1 s watchdog ended some runs instead.
    @Test func aCancellationStopsTheIndexTreesWithinAFewThousandEntries() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("s.sqlite")
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("PRAGMA page_size = 512; CREATE TABLE t (n INTEGER); CREATE INDEX t_n ON t (n)")
        }
        let indexes = try #require(try BulkIndex.read(table: "t", connection: SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))))
        let appender = try PageAppender(path: path)
        let sorters = IndexKeySorter.sorters(for: indexes, rowidColumn: nil, usableSize: appender.usableSize) { directory.path("keys-\($0)") }
        let sorter = try #require(sorters.first)
        var columns: [RecordColumn] = []
        for rowid in 1...20_000 as ClosedRange<Int64> {
            Self.record([.integer(rowid * 7 % 20_011)]).withUnsafeBytes { payload in
                _ = RecordDecoder.decode(payload, declaredSize: payload.count, into: &columns)
                sorter.add(rowid: rowid, record: columns, payload: payload)
            }
        }
        let cancellation = CancellationFlag()
        cancellation.cancel()
        let trees = sorter.indexes.map { IndexTreeBuilder(file: appender, root: $0.rootPage) }
        let error = #expect(throws: SalvageError.self) {
            _ = try IndexTreeBuilder.writeTrees(of: sorter, to: appender, trees: trees, cancellation: cancellation)
        }
        #expect(error == .interrupted)
        #expect(trees.allSatisfy { $0.entries <= 4096 }, "stopped within 4,096 entries: \(trees.map(\.entries))")
    }

    @Test func aRealAffinityIndexIsLeftToSQLite() throws {
        let directory = try TemporaryDirectory()
        let built = try Self.build(in: directory, tableSQL: "CREATE TABLE t (n FLOAT)", indexSQL: ["CREATE INDEX t_n ON t (n)"],
                                   rows: [(1, [.integer(3)]), (2, [.real(1.5)])])
        #expect(built.abandoned == ["t_n"])
        #expect(try Self.entries(of: "t_n", in: built.path) == ["1.5:real 2", "3.0:real 1"])
    }
}
