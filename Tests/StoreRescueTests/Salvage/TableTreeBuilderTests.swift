import Foundation
import Testing
@testable import StoreRescue

/// Table b-trees written page by page (`TableTreeBuilder`, `PageAppender`) must be trees SQLite
/// reads as its own: `integrity_check` ok, every row read back with its rowid and values, and the
/// file still SQLite's to change (rows added after, an incremental vacuum that moves pages by
/// their pointer-map entries).
@Suite struct TableTreeBuilderTests {
    /// A record of (NULL, `number`, a blob of `size` bytes whose bytes follow from `number`).
    static func record(number: Int64, size: Int) -> [UInt8] {
        let blobType = UInt64(12 + 2 * size)
        var typeBytes = [UInt8](repeating: 0, count: 9)
        let typeLength = typeBytes.withUnsafeMutableBytes { SQLiteVarint.write(blobType, into: $0, at: 0) }
        let headerSize = 1 + 1 + 1 + typeLength
        precondition(headerSize < 128)
        var bytes: [UInt8] = [UInt8(headerSize), 0, 6] + typeBytes.prefix(typeLength)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: number >> Int64(shift))) }
        for index in 0..<size { bytes.append(UInt8(truncatingIfNeeded: Int(number) &* 31 &+ index)) }
        return bytes
    }

    static func blob(number: Int64, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: Int(number) &* 31 &+ $0) }
    }

    struct Shape: CustomTestStringConvertible, Sendable {
        var pageSize: Int
        var autoVacuum: Bool
        var rowids: [Int64]
        /// Blob size of each row, by its position.
        var size: @Sendable (Int) -> Int
        var label: String
        var testDescription: String { "\(label), \(pageSize)-byte pages\(autoVacuum ? ", auto-vacuum" : "")" }
    }

    static let shapes: [Shape] = [
        Shape(pageSize: 4096, autoVacuum: false, rowids: [], size: { _ in 10 }, label: "no row"),
        Shape(pageSize: 4096, autoVacuum: true, rowids: [7], size: { _ in 10 }, label: "one row"),
        Shape(pageSize: 512, autoVacuum: false, rowids: Array(1...40), size: { _ in 20 }, label: "two leaves"),
        Shape(pageSize: 512, autoVacuum: true, rowids: Array(1...20_000), size: { $0 % 7 }, label: "four levels of small rows"),
        Shape(pageSize: 512, autoVacuum: true, rowids: Array(1...3_000), size: { $0 % 5 == 0 ? 3_000 : 30 }, label: "overflow chains"),
        Shape(pageSize: 1024, autoVacuum: false, rowids: (0..<5_000).map { Int64($0) * 1_000_003 - 2_500_000_000 }, size: { $0 % 3 * 40 },
              label: "negative and wide rowids"),
        Shape(pageSize: 4096, autoVacuum: true, rowids: [Int64.min + 1, -1, 0, 1, 1 << 56, Int64.max], size: { _ in 5_000 },
              label: "nine-byte varints, all overflowing"),
        Shape(pageSize: 65_536, autoVacuum: true, rowids: Array(1...3_000), size: { $0 % 11 == 0 ? 100_000 : 300 },
              label: "64 KiB pages"),
        Shape(pageSize: 4096, autoVacuum: true, rowids: Array(1...60_000), size: { $0 % 50 }, label: "many pointer-map pages"),
    ]

    @Test(arguments: shapes)
    func treesReadAsSQLitesOwn(shape: Shape) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("bulk.sqlite")
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("PRAGMA page_size = \(shape.pageSize); PRAGMA auto_vacuum = \(shape.autoVacuum ? 2 : 0)")
            try connection.execute("CREATE TABLE before (x); CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, b BLOB); CREATE TABLE u (id INTEGER PRIMARY KEY, n, b)")
            try connection.execute("INSERT INTO before VALUES (1), (2)")
        }
        let tRoot = try #require(try SalvageFixtures.rootPage(of: "t", in: path))
        let uRoot = try #require(try SalvageFixtures.rootPage(of: "u", in: path))
        let appender = try PageAppender(path: path)
        #expect(appender.hasPointerMap == shape.autoVacuum)
        // Table t gets the shape's rows; u, built after, three rows that overflow.
        let builder = TableTreeBuilder(file: appender, root: UInt32(tRoot))
        for (index, rowid) in shape.rowids.enumerated() {
            try Self.record(number: rowid, size: shape.size(index)).withUnsafeBytes { try builder.append(rowid: rowid, payload: $0) }
        }
        if let last = shape.rowids.last {
            #expect(!builder.accepts(last))
            #expect(builder.accepts(last &+ 1) == (last != .max))
        }
        try builder.finish()
        let second = TableTreeBuilder(file: appender, root: UInt32(uRoot))
        for rowid in Int64(1)...3 {
            try Self.record(number: rowid, size: shape.pageSize * 3).withUnsafeBytes { try second.append(rowid: rowid, payload: $0) }
        }
        try second.finish()
        try appender.finish()
        try Self.expectNoStaleBytesInLeaves(path: path, pageSize: shape.pageSize)

        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        #expect(try connection.rows("PRAGMA integrity_check").compactMap { $0.first?.string } == ["ok"])
        let rows = try connection.rows("SELECT id, n, b FROM t ORDER BY id")
        #expect(rows.count == shape.rowids.count)
        for (index, (row, rowid)) in zip(rows, shape.rowids).enumerated() {
            #expect(row[0] == .integer(rowid))
            #expect(row[1] == .integer(rowid))
            #expect(row[2] == .blob(Data(Self.blob(number: rowid, size: shape.size(index)))))
        }
        #expect(try connection.scalar("SELECT count(*) FROM u WHERE length(b) = \(shape.pageSize * 3)") == .integer(3))
        #expect(try connection.scalar("SELECT count(*) FROM before") == .integer(2))
        // Still SQLite's file: rows added and deleted by SQLite, then (auto-vacuum) pages moved
        // to fill the holes, which follows the pointer-map entries written above.
        try connection.execute("""
            DELETE FROM t WHERE id % 3 = 0; DELETE FROM u WHERE id = 2; CREATE TABLE v (a); INSERT INTO v VALUES (1);
            INSERT INTO t (id, n, b) VALUES (\((shape.rowids.last ?? 0) == .max ? -2 : (shape.rowids.last ?? 0) + 1), 1, zeroblob(9000))
            """)
        if shape.autoVacuum { try connection.execute("PRAGMA incremental_vacuum") }
        #expect(try connection.rows("PRAGMA integrity_check").compactMap { $0.first?.string } == ["ok"])
        #expect(try connection.scalar("SELECT count(*) FROM t") == .integer(Int64(shape.rowids.filter { $0 % 3 != 0 }.count + 1)))
    }

    /// As in a salvage: SQLite keeps the file open (journal off, a transaction that dropped
    /// indexes committed, pages on the freelist), the tree is appended behind it, and SQLite goes
    /// on: it must see the new pages (not its cached page count), then vacuum and switch to WAL.
    @Test func sqliteKeepingTheFileOpenSeesTheAppendedTree() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("open.sqlite")
        do {
            let creator = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
            try creator.execute("PRAGMA auto_vacuum = 2; PRAGMA journal_mode = WAL")
            try creator.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, b BLOB); CREATE INDEX tn ON t (n); CREATE TABLE w (x); CREATE INDEX wx ON w (x)")
            try creator.execute("INSERT INTO w VALUES (zeroblob(20000))")
        }
        let connection = try SQLiteConnection.openForBulkLoad(path: path)
        try connection.execute("BEGIN; DROP INDEX tn; DROP INDEX wx; DELETE FROM w")
        let root = try #require(try connection.scalar("SELECT rootpage FROM sqlite_schema WHERE name = 't'")?.int64)
        try connection.execute("COMMIT")
        let appender = try PageAppender(path: path)
        let builder = TableTreeBuilder(file: appender, root: UInt32(root))
        for rowid in Int64(1)...5_000 {
            try Self.record(number: rowid, size: rowid % 13 == 0 ? 6_000 : 100).withUnsafeBytes { try builder.append(rowid: rowid, payload: $0) }
        }
        try builder.finish()
        try appender.finish()
        try connection.execute("BEGIN; INSERT INTO t (id, n, b) VALUES (5001, 5001, x'01'); CREATE INDEX tn ON t (n); COMMIT; PRAGMA incremental_vacuum")
        #expect(try connection.scalar("PRAGMA journal_mode = WAL") == .text("wal"))
        #expect(try connection.rows("PRAGMA integrity_check").compactMap { $0.first?.string } == ["ok"])
        let count = try connection.scalar("SELECT count(*) FROM t")
        #expect(count == .integer(5_001))
        let large = try connection.scalar("SELECT sum(n) FROM t WHERE length(b) = 6000")
        #expect(large == .integer((1...384).reduce(0) { $0 + Int64($1) * 13 }))
    }

    /// Every table leaf's free space — between its cell pointers and its cells — is zeros: a
    /// leaf written after a fuller one holds none of its bytes.
    static func expectNoStaleBytesInLeaves(path: String, pageSize: Int) throws {
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var leaves = 0
        for start in stride(from: pageSize, to: file.count, by: pageSize) where file[start] == 0x0D {
            let cells = Int(file[start + 3]) << 8 | Int(file[start + 4])
            let content = Int(file[start + 5]) << 8 | Int(file[start + 6])
            let gap = (start + 8 + 2 * cells)..<(start + (content == 0 ? 65_536 : content))
            #expect(file[gap].allSatisfy { $0 == 0 }, "page \(start / pageSize + 1): bytes between its \(cells) cell pointers and its cells")
            leaves += 1
        }
        #expect(leaves > 0)
    }

    @Test func varintsRoundTrip() {
        let values: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 21, (1 << 56) - 1, 1 << 56, .max, UInt64(bitPattern: -1)]
        for value in values {
            var bytes = [UInt8](repeating: 0, count: 9)
            let length = bytes.withUnsafeMutableBytes { SQLiteVarint.write(value, into: $0, at: 0) }
            #expect(length == SQLiteVarint.length(of: value))
            let read = bytes.withUnsafeBytes { SQLiteVarint.read($0, at: 0, end: 9) }
            #expect(read?.value == value)
            #expect(read?.length == length)
        }
    }

    @Test func anAppenderRefusesAFileThatIsNotADatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("not.sqlite")
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: path))
        #expect(throws: SalvageError.self) { try PageAppender(path: path) }
    }
}
