import Foundation
import Testing
@testable import StoreRescue

/// Varints, serial types and records, including every way a damaged record can lie.
@Suite struct RecordDecoderTests {
    static func decode(_ bytes: [UInt8], declaredSize: Int? = nil) -> (RecordDecoder.Outcome, [RecordColumn]) {
        var columns: [RecordColumn] = []
        let outcome = bytes.withUnsafeBytes { RecordDecoder.decode($0, declaredSize: declaredSize ?? bytes.count, into: &columns) }
        return (outcome, columns)
    }

    @Test(arguments: [
        ([0x00], UInt64(0), 1), ([0x7F], 127, 1), ([0x81, 0x00], 128, 2), ([0xFF, 0x7F], 16383, 2),
        ([0x81, 0x80, 0x00], 16384, 3), ([0x89, 0xC1, 0x01], 155_777, 3), ([0xFF, 0xFF, 0x7F], 2_097_151, 3),
        ([0x81, 0x80, 0x80, 0x00], 2_097_152, 4),
        ([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], UInt64.max, 9),
        ([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], 1, 9),
    ] as [([UInt8], UInt64, Int)])
    func varints(bytes: [UInt8], value: UInt64, length: Int) {
        let decoded = bytes.withUnsafeBytes { SQLiteVarint.read($0, at: 0, end: $0.count) }
        #expect(decoded?.value == value)
        #expect(decoded?.length == length)
        // Written back, the shortest form is these bytes (the 9-byte 1 is not the shortest).
        if length == SQLiteVarint.length(of: value) {
            var written = [UInt8](repeating: 0xEE, count: 11)
            let count = written.withUnsafeMutableBytes { SQLiteVarint.write(value, into: $0, at: 1) }
            #expect(Array(written[1..<1 + count]) == bytes)
            #expect(written[0] == 0xEE && written[1 + count] == 0xEE, "nothing written around it")
        }
    }

    @Test func varintThatRunsPastItsEndIsRefused() {
        let bytes: [UInt8] = [0x81, 0x82, 0x83]
        #expect(bytes.withUnsafeBytes { SQLiteVarint.read($0, at: 0, end: 3) } == nil)
        #expect(bytes.withUnsafeBytes { SQLiteVarint.read($0, at: 0, end: 2) } == nil)
        #expect(bytes.withUnsafeBytes { SQLiteVarint.read($0, at: 5, end: 10) } == nil)
        #expect(bytes.withUnsafeBytes { SQLiteVarint.read($0, at: -1, end: 3) } == nil)
    }

    /// A record SQLite itself wrote: every serial type, values read back as SQLite reads them.
    @Test func decodesWhatSQLiteWrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("r.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: """
            CREATE TABLE t (a, b, c, d, e, f, g, h, i, j, k);
            INSERT INTO t VALUES (NULL, 0, 1, -1, 300, -70000, 2147483648, -140737488355328, 9223372036854775807, 2.5, 'héllo');
            INSERT INTO t VALUES (x'00ff10', '', x'', 127, -128, 32767, 8388607, -8388608, 1e300, -0.0, 'z');
            """)
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let page = Array(data[4096..<8192])
        var values: [[String]] = []
        try page.withUnsafeBytes { bytes in
            let header = try #require(BTreePageHeader(page: bytes, pageNumber: 2, usableSize: 4096))
            #expect(header.kind == .tableLeaf)
            for index in 0..<header.cellCount {
                let offset = try #require(header.cellOffset(index, in: bytes))
                let cell = try #require(TableCell.leaf(in: bytes, at: offset, usableSize: 4096))
                let payload = UnsafeRawBufferPointer(rebasing: bytes[cell.localStart..<cell.localStart + cell.localSize])
                var columns: [RecordColumn] = []
                #expect(RecordDecoder.decode(payload, declaredSize: cell.payloadSize, into: &columns) == .complete)
                values.append(columns.map { column in
                    switch column.storageClass {
                    case .null: return "NULL"
                    case .integer: return "\(column.integer(in: payload))"
                    case .real: return "\(column.real(in: payload))"
                    case .text: return "'" + String(decoding: column.bytes(in: payload), as: UTF8.self) + "'"
                    case .blob: return "x" + column.bytes(in: payload).map { String(format: "%02x", $0) }.joined()
                    }
                })
            }
        }
        #expect(values == [
            ["NULL", "0", "1", "-1", "300", "-70000", "2147483648", "-140737488355328", "9223372036854775807", "2.5", "'héllo'"],
            ["x00ff10", "''", "x", "127", "-128", "32767", "8388607", "-8388608", "1e+300", "-0.0", "'z'"],
        ])
    }

    @Test func reservedSerialTypesAreMalformed() {
        #expect(Self.decode([2, 10]).0 == .malformed)
        #expect(Self.decode([2, 11]).0 == .malformed)
    }

    @Test func headerLongerThanThePayloadIsMalformed() {
        #expect(Self.decode([9, 1, 1]).0 == .malformed)
        #expect(Self.decode([0]).0 == .malformed, "a header size smaller than its own varint")
        #expect(Self.decode([]).0 == .malformed)
    }

    @Test func valuesThatDoNotAddUpToTheDeclaredSizeAreMalformed() {
        // Header: 2 bytes, one int8 column: the body must be exactly 1 byte.
        #expect(Self.decode([2, 1, 42]).0 == .complete)
        #expect(Self.decode([2, 1, 42, 0]).0 == .malformed, "a byte too many")
        #expect(Self.decode([2, 2, 42]).0 == .malformed, "a byte too few")
        // A text length beyond the payload (a flipped length byte).
        #expect(Self.decode([2, 0x7F, 0x41]).0 == .malformed)
    }

    @Test func hugeSerialTypeDoesNotOverflow() {
        let bytes: [UInt8] = [10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(Self.decode(bytes).0 == .malformed)
    }

    /// Part of a record lost to a broken overflow chain: the header and the columns before the
    /// break are readable, the rest is not.
    /// One array reused for records of every shape (as salvage does, row after row) holds what a
    /// new array would: the decoder fills it in place, in room it grows or shrinks to the header.
    @Test func anArrayReusedForEveryRecordHoldsWhatANewOneWould() {
        let longText = IndexTreeBuilderTests.record([.text(String(repeating: "x", count: 300)), .integer(7)])
        let records: [[UInt8]] = [
            IndexTreeBuilderTests.record([.integer(1), .null, .text("a"), .real(2.5), .blob(Data([1, 2]))]),
            longText, [2, 1, 42], [2, 10], longText, Array(longText.prefix(40)),
            IndexTreeBuilderTests.record(Array(repeating: .null, count: 120)), [3, 1, 1, 5, 6], [],
        ]
        var reused: [RecordColumn] = []
        for (number, bytes) in records.enumerated() {
            let declared = number == 5 ? longText.count : bytes.count
            let outcome = bytes.withUnsafeBytes { RecordDecoder.decode($0, declaredSize: declared, into: &reused) }
            let (fresh, columns) = Self.decode(bytes, declaredSize: declared)
            #expect(outcome == fresh, "record \(number)")
            #expect(reused == columns, "record \(number)")
        }
        #expect(Self.decode(longText).1.count == 2 && Self.decode(longText).1[0].serialType == 613, "a two-byte serial type")
    }

    @Test func truncatedRecordKeepsTheColumnsRead() {
        // int8 42, then a 10-byte blob (serial 32), then int8 7: declared 15 bytes, 6 read.
        let full: [UInt8] = [4, 1, 32, 1, 42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 7]
        let (outcome, columns) = Self.decode(Array(full.prefix(6)), declaredSize: full.count)
        #expect(outcome == .truncated(availableColumns: 1))
        #expect(columns.map(\.isAvailable) == [true, false, false])
        #expect(Self.decode(full).0 == .complete)
    }

    @Test func integerWidthsSignExtend() {
        let record: [UInt8] = [7, 1, 2, 3, 4, 5, 6, 0x80, 0xFF, 0xFE, 0xFF, 0xFF, 0xFD, 0xFF, 0xFF, 0xFF, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFB,
                               0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFA]
        let (outcome, columns) = Self.decode(record)
        #expect(outcome == .complete)
        let values = record.withUnsafeBytes { bytes in columns.map { $0.integer(in: bytes) } }
        #expect(values == [-128, -2, -3, -4, -5, -6])
    }
}
