import Foundation

/// What a bulk load asks of the keys it collects for an index tree built page by page
/// (`IndexTreeBuilder.writeTrees`): rows in, sorted index records out, memory bounded.
protocol IndexKeyCollector: AnyObject {
    /// The indexes these keys are for (all with the same key columns).
    var indexes: [BulkIndex] { get }
    /// True once a value came that the collector cannot order or write: its indexes are left
    /// to `REINDEX`.
    var isAbandoned: Bool { get }
    /// Bytes held in memory (the bulk load spills every collector when they pass its budget).
    var bytesHeld: Int { get }
    /// Takes the key of one row copied to the table, rows in increasing rowid order.
    func add(rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer)
    /// Sorts the keys held and writes them to the spill file as one run.
    func spill() throws
    /// Hands every index record back in key order, each with whether its values equal the
    /// previous one's with none NULL (what a UNIQUE index refuses); then frees what it held.
    func forEachEntry(_ body: (_ record: UnsafeRawBufferPointer, _ repeatsValues: Bool) throws -> Void) throws
}

/// The keys of an index with a text or blob column, as byte strings that sort with `memcmp` the
/// way SQLite orders the values in the BINARY collation: NULL, then numbers (by value), then text
/// (bytes compared, a prefix first), then blobs — `IndexKeySorter` holds fixed-width words and
/// cannot hold text. BINARY compares text as the database stores it, with `memcmp`, whatever
/// its encoding: the bytes kept here are the record's own.
///
/// A key: per column a tag byte (0 NULL, 1 number, 2 text, 3 blob), then for a number the
/// 8-byte word `IndexKeySorter.word` makes (big-endian), for text and blobs the bytes with each
/// 0x00 written 0x00 0xFF and a terminator 0x00 0x00 (so no key is a prefix of another and a
/// shorter value sorts first); a descending column's bytes inverted; then the rowid (8 bytes,
/// sign bit flipped) and a byte saying which numbers were reals. Keys are sorted by comparison
/// (the rowid makes every key distinct), spilled as length-prefixed runs past the bulk load's
/// budget, and merged.
///
/// A record that would not fit an index page without overflow (a long text: the limit is about
/// 1,000 bytes on 4 KiB pages) abandons the collector: its indexes go to `REINDEX`.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class TextIndexKeySorter: IndexKeyCollector {
    let indexes: [BulkIndex]
    private let columns: [BulkIndex.Column]
    private let rowidColumn: Int?
    private let spillPath: String
    private let maximumRecordSize: Int
    @exclusivity(unchecked) private(set) var isAbandoned = false
    /// Keys held, back to back, and where each starts.
    @exclusivity(unchecked) private var bytes: [UInt8] = []
    @exclusivity(unchecked) private var starts: [Int] = []
    private var descriptor: Int32 = -1
    private var runs: [(offset: Int64, keys: Int)] = []
    private var spilledBytes: Int64 = 0
    private static let mergeBufferBytes = 64 << 10

    init(indexes: [BulkIndex], rowidColumn: Int?, usableSize: Int, spillPath: String) {
        precondition(!indexes.isEmpty && indexes.allSatisfy { $0.isBuiltPageByPage && $0.hasSameKeys(as: indexes[0]) })
        self.indexes = indexes
        columns = indexes[0].columns
        self.rowidColumn = rowidColumn
        self.spillPath = spillPath
        maximumRecordSize = IndexTreeBuilder.maximumRecordSize(usableSize: usableSize)
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
            unlink(spillPath)
        }
    }

    var bytesHeld: Int { bytes.count + starts.count * 8 }

    func add(rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer) {
        guard !isAbandoned else { return }
        // Appended to a local array (swapped in and out: no copy), not the property, which
        // would cost a runtime exclusivity check per byte.
        var bytes: [UInt8] = []
        swap(&bytes, &self.bytes)
        defer { if !isAbandoned { swap(&bytes, &self.bytes) } }
        let start = bytes.count
        var reals: UInt8 = 0
        // The index record's size, to refuse one that would overflow: header and values.
        var headerBytes = 1 + SQLiteVarint.length(of: UInt64(IndexKeySorter.serialType(of: rowid)))
        var bodyBytes = 8
        for (position, column) in columns.enumerated() {
            let segment = bytes.count
            if column.tableColumn == rowidColumn {
                guard let word = IndexKeySorter.word(exactly: rowid) else { return abandon() }
                Self.append(tag: 1, word: word, to: &bytes)
                headerBytes += 1
                bodyBytes += 8
            } else if column.tableColumn >= record.count {
                bytes.append(0)  // a record shorter than the table: NULL (the bulk load copies no other)
                headerBytes += 1
            } else {
                let value = record[column.tableColumn]
                switch value.storageClass {
                case .null:
                    bytes.append(0)
                    headerBytes += 1
                case .integer:
                    guard let word = IndexKeySorter.word(exactly: value.integer(in: payload)) else { return abandon() }
                    Self.append(tag: 1, word: word, to: &bytes)
                    headerBytes += 1
                    bodyBytes += 8
                case .real:
                    let real = value.real(in: payload)
                    guard !real.isNaN else { return abandon() }
                    Self.append(tag: 1, word: IndexKeySorter.word(real), to: &bytes)
                    reals |= 1 << UInt8(position)
                    headerBytes += 1
                    bodyBytes += 8
                case .text, .blob:
                    let data = value.bytes(in: payload)
                    bytes.append(value.storageClass == .text ? 2 : 3)
                    if data.isEmpty || memchr(data.baseAddress!, 0, data.count) == nil {
                        bytes.append(contentsOf: data)
                    } else {
                        for byte in data {
                            bytes.append(byte)
                            if byte == 0 { bytes.append(0xFF) }
                        }
                    }
                    bytes.append(0)
                    bytes.append(0)
                    headerBytes += SQLiteVarint.length(of: value.serialType)
                    bodyBytes += data.count
                }
            }
            if column.descending {
                for index in segment..<bytes.count { bytes[index] = ~bytes[index] }
            }
        }
        let headerSize = headerBytes > 127 ? headerBytes + 1 : headerBytes
        guard headerSize + bodyBytes <= maximumRecordSize else { return abandon() }
        Self.append(word: UInt64(bitPattern: rowid) ^ (1 << 63), to: &bytes)
        bytes.append(reals)
        starts.append(start)
    }

    private static func append(tag: UInt8, word: UInt64, to bytes: inout [UInt8]) {
        bytes.append(tag)
        append(word: word, to: &bytes)
    }

    private static func append(word: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: word.bigEndian) { bytes.append(contentsOf: $0) }
    }

    private func abandon() {
        isAbandoned = true
        bytes = []
        starts = []
        runs = []
    }

    /// The keys held in key order (positions into `starts`).
    private func sortedOrder() -> [Int] {
        var order = Array(starts.indices)
        let total = bytes.count
        let starts = self.starts
        bytes.withUnsafeBufferPointer { all in
            let base = all.baseAddress!
            order.sort { left, right in
                let a = starts[left], b = starts[right]
                let aEnd = left + 1 < starts.count ? starts[left + 1] : total
                let bEnd = right + 1 < starts.count ? starts[right + 1] : total
                return Self.less(base + a, aEnd - a, base + b, bEnd - b)
            }
        }
        return order
    }

    /// Byte order of two keys, the mask byte at their end left out (the rowid before it decides).
    private static func less(_ a: UnsafePointer<UInt8>, _ aCount: Int, _ b: UnsafePointer<UInt8>, _ bCount: Int) -> Bool {
        let common = min(aCount, bCount) - 1
        let compared = memcmp(a, b, common)
        return compared != 0 ? compared < 0 : aCount < bCount
    }

    func spill() throws {
        guard !isAbandoned, !starts.isEmpty else { return }
        if descriptor < 0 {
            descriptor = open(spillPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard descriptor >= 0 else { throw SalvageError.writing(spillPath, code: errno) }
        }
        let start = spilledBytes
        var chunk: [UInt8] = []
        chunk.reserveCapacity(Self.mergeBufferBytes)
        for position in sortedOrder() {
            let key = self.key(position)
            let length = UInt32(key.count)
            for shift in stride(from: 24, through: 0, by: -8) { chunk.append(UInt8(truncatingIfNeeded: length >> UInt32(shift))) }
            chunk.append(contentsOf: key)
            if chunk.count >= Self.mergeBufferBytes { try flush(&chunk) }
        }
        try flush(&chunk)
        runs.append((start, starts.count))
        bytes.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
    }

    private func flush(_ chunk: inout [UInt8]) throws {
        guard !chunk.isEmpty else { return }
        try chunk.withUnsafeBytes { try FileWriting.write(descriptor, $0, at: spilledBytes, path: spillPath) }
        spilledBytes += Int64(chunk.count)
        chunk.removeAll(keepingCapacity: true)
    }

    private func key(_ position: Int) -> ArraySlice<UInt8> {
        bytes[starts[position]..<(position + 1 < starts.count ? starts[position + 1] : bytes.count)]
    }

    func forEachEntry(_ body: (UnsafeRawBufferPointer, Bool) throws -> Void) throws {
        precondition(!isAbandoned, "an abandoned sorter has no keys")
        defer {
            bytes = []
            starts = []
            runs = []
        }
        var record: [UInt8] = []
        var types: [UInt64] = []
        var values: [UInt8] = []
        var previous: [UInt8] = []
        var isFirst = true
        func emit(_ key: ArraySlice<UInt8>) throws {
            let repeats = !isFirst && haveSameValues(previous[...], key)
            previous.removeAll(keepingCapacity: true)
            previous.append(contentsOf: key)
            isFirst = false
            self.record(of: key, into: &record, types: &types, body: &values)
            try record.withUnsafeBytes { try body($0, repeats) }
        }
        if runs.isEmpty {
            for position in sortedOrder() { try emit(key(position)) }
            return
        }
        try spill()
        bytes = []
        starts = []
        try merge(emit)
    }

    /// The values part of two keys is the same, and holds no NULL.
    private func haveSameValues(_ left: ArraySlice<UInt8>, _ right: ArraySlice<UInt8>) -> Bool {
        var a = left.startIndex, b = right.startIndex
        for column in columns {
            let flip: UInt8 = column.descending ? 0xFF : 0
            let tag = left[a] ^ flip
            guard tag == right[b] ^ flip, tag != 0 else { return false }
            let aEnd = Self.segmentEnd(left, from: a, flip: flip), bEnd = Self.segmentEnd(right, from: b, flip: flip)
            guard left[a..<aEnd].elementsEqual(right[b..<bEnd]) else { return false }
            a = aEnd
            b = bEnd
        }
        return true
    }

    /// Where the segment of one column that starts at `start` ends.
    private static func segmentEnd(_ key: ArraySlice<UInt8>, from start: Int, flip: UInt8) -> Int {
        switch key[start] ^ flip {
        case 0: return start + 1
        case 1: return start + 9
        default:
            var index = start + 1
            while true {
                if key[index] ^ flip == 0 {
                    if key[index + 1] ^ flip == 0 { return index + 2 }
                    index += 2  // an escaped 0x00
                } else {
                    index += 1
                }
            }
        }
    }

    /// The index record of `key`: the values as the table's record held them, then the rowid.
    private func record(of key: ArraySlice<UInt8>, into record: inout [UInt8], types: inout [UInt64], body: inout [UInt8]) {
        types.removeAll(keepingCapacity: true)
        body.removeAll(keepingCapacity: true)
        var position = key.startIndex
        let reals = key[key.endIndex - 1]
        for (column, description) in columns.enumerated() {
            let flip: UInt8 = description.descending ? 0xFF : 0
            let end = Self.segmentEnd(key, from: position, flip: flip)
            switch key[position] ^ flip {
            case 0: types.append(0)
            case 1:
                var word: UInt64 = 0
                for index in position + 1..<end { word = word << 8 | UInt64(key[index] ^ flip) }
                let number = IndexKeySorter.number(word) ?? 0
                if reals & (1 << UInt8(column)) != 0 {
                    types.append(7)
                    Self.appendBigEndian(number.bitPattern, bytes: 8, to: &body)
                } else {
                    let integer = Int64(number)
                    let type = IndexKeySorter.serialType(of: integer)
                    types.append(UInt64(type))
                    Self.appendBigEndian(UInt64(bitPattern: integer), bytes: Self.valueBytes(type), to: &body)
                }
            default:
                let isText = key[position] ^ flip == 2
                var length = 0
                var index = position + 1
                while index < end - 2 {
                    let byte = key[index] ^ flip
                    body.append(byte)
                    length += 1
                    index += byte == 0 ? 2 : 1
                }
                types.append(UInt64(2 * length + (isText ? 13 : 12)))
            }
            position = end
        }
        var rowidWord: UInt64 = 0
        for index in position..<position + 8 { rowidWord = rowidWord << 8 | UInt64(key[index]) }
        let rowid = Int64(bitPattern: rowidWord ^ (1 << 63))
        let rowidType = IndexKeySorter.serialType(of: rowid)
        types.append(UInt64(rowidType))
        Self.appendBigEndian(UInt64(bitPattern: rowid), bytes: Self.valueBytes(rowidType), to: &body)
        var headerSize = types.reduce(1) { $0 + SQLiteVarint.length(of: $1) }
        if headerSize > 127 { headerSize += 1 }
        record.removeAll(keepingCapacity: true)
        Self.appendVarint(UInt64(headerSize), to: &record)
        for type in types { Self.appendVarint(type, to: &record) }
        record.append(contentsOf: body)
    }

    private static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        if value < 0x80 {
            bytes.append(UInt8(value))
            return
        }
        var scratch: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &scratch) { buffer in
            let length = SQLiteVarint.write(value, into: buffer, at: 0)
            bytes.append(contentsOf: buffer[..<length])
        }
    }

    private static func valueBytes(_ type: UInt8) -> Int { type == 6 ? 8 : type == 5 ? 6 : type < 5 ? Int(type) : 0 }

    private static func appendBigEndian(_ value: UInt64, bytes: Int, to body: inout [UInt8]) {
        var shift = bytes
        while shift > 0 {
            shift -= 1
            body.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * shift)))
        }
    }

    /// A k-way merge of the spilled runs (length-prefixed keys), smallest first.
    private func merge(_ emit: (ArraySlice<UInt8>) throws -> Void) throws {
        var readers = runs.map { RunReader(offset: $0.offset, keysLeft: $0.keys) }
        var heads: [[UInt8]?] = []
        for index in readers.indices { heads.append(try readers[index].next(descriptor: descriptor, path: spillPath)) }
        while true {
            var smallest: Int?
            for index in heads.indices {
                guard let head = heads[index] else { continue }
                if let current = smallest, let other = heads[current] {
                    let isLess = head.withUnsafeBufferPointer { a in
                        other.withUnsafeBufferPointer { b in Self.less(a.baseAddress!, a.count, b.baseAddress!, b.count) }
                    }
                    if !isLess { continue }
                }
                smallest = index
            }
            guard let index = smallest, let head = heads[index] else { return }
            try emit(head[...])
            heads[index] = try readers[index].next(descriptor: descriptor, path: spillPath)
        }
    }

    /// One spilled run, read through a buffer.
    private struct RunReader {
        var offset: Int64
        var keysLeft: Int
        var buffer: [UInt8] = []
        var position = 0

        init(offset: Int64, keysLeft: Int) {
            self.offset = offset
            self.keysLeft = keysLeft
        }

        mutating func next(descriptor: Int32, path: String) throws -> [UInt8]? {
            guard keysLeft > 0 else { return nil }
            let length = Int(try take(4, descriptor: descriptor, path: path).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            keysLeft -= 1
            return try take(length, descriptor: descriptor, path: path)
        }

        private mutating func take(_ count: Int, descriptor: Int32, path: String) throws -> [UInt8] {
            if position + count > buffer.count {
                buffer.removeFirst(position)
                position = 0
                let wanted = max(count - buffer.count, TextIndexKeySorter.mergeBufferBytes)
                var more = [UInt8](repeating: 0, count: wanted)
                let read = FileReading.read(descriptor, into: &more, at: offset)
                guard read >= count - buffer.count else {
                    throw SalvageError.writeFailed(path: path, reason: "sorted index keys could not be read back")
                }
                buffer.append(contentsOf: more[..<read])
                offset += Int64(read)
            }
            defer { position += count }
            return Array(buffer[position..<position + count])
        }
    }
}
