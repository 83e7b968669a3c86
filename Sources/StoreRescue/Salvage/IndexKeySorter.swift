import Foundation

/// Collects the keys of one index (or of several with the same key columns) while a bulk load
/// copies its table's rows, and hands them back sorted, in bounded memory, for
/// `IndexTreeBuilder` — what SQLite's `CREATE INDEX`/`REINDEX` does with a scan of the table and
/// its sorter, without the scan (the rows are in hand as they are copied) and without a b-tree
/// insert per key.
///
/// Keys are fixed-width rows of 64-bit words: one word per key column, then the rowid (flipped
/// sign bit: unsigned order is signed order), then a mask saying which values are reals (it
/// never decides an order: rowids are unique). Keys are sorted by their value words with a
/// stable radix sort — they arrive in rowid order, so equal values stay in rowid order — and
/// runs are merged comparing values and rowid word by word. A value word orders as SQLite
/// orders the values of a numeric column: NULL (0) before every number,
/// integers and reals by value (5 and 5.0 equal), as an IEEE double whose bits are flipped to
/// sort as unsigned integers (no number maps to 0: that would be a NaN). A descending column's
/// word is inverted. Only values that order this way exactly are taken — NULL, a real that is not
/// a NaN, an integer a double holds exactly (|n| ≤ 2^53, and larger ones that happen to be
/// exact); the first other value (text, blob, a larger integer) abandons the sorter, and the
/// index is left to SQLite's `REINDEX`. Indexes with a text or untyped column take a
/// `TextIndexKeySorter` instead (`sorters(for:rowidColumn:usableSize:spillPath:)`).
///
/// Memory: keys are held until the bulk load's budget is reached (`spill`), then sorted and
/// written as a run to a file in the private folder; the runs are merged at the end, each read
/// through a 64 KiB buffer. Keys are held in memory this sorter allocates itself, not an array:
/// appending a word to an array property costs a runtime exclusivity check, and a key is
/// several words, for every row copied.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class IndexKeySorter: IndexKeyCollector {
    let indexes: [BulkIndex]
    /// Words per key: the key columns, the rowid, the reals mask.
    let wordsPerKey: Int
    private let columns: [BulkIndex.Column]
    /// Output column → where its value is: the rowid when it is the table's rowid alias.
    private let rowidColumn: Int?
    private let spillPath: String
    /// Keys held: `heldWords` words at `storage`, room for `capacity`.
    @exclusivity(unchecked) private var storage: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var capacity = 0
    @exclusivity(unchecked) private var heldWords = 0
    /// Bit `j`: key column `j` is descending.
    private let descendingMask: UInt64
    @exclusivity(unchecked) private(set) var isAbandoned = false
    private var descriptor: Int32 = -1
    /// Runs spilled: word offset and key count of each.
    private var runs: [(offset: Int64, keys: Int)] = []
    private var spilledWords: Int64 = 0

    private static let signBit: UInt64 = 1 << 63
    private static let mergeBufferWords = 8192

    /// - Parameters:
    ///   - indexes: indexes with the same key columns (`BulkIndex.hasSameKeys`), all built page by page.
    ///   - spillPath: a file this sorter may create for its runs (removed when it is done).
    init(indexes: [BulkIndex], rowidColumn: Int?, spillPath: String) {
        precondition(!indexes.isEmpty && indexes.allSatisfy { $0.isBuiltPageByPage && $0.hasSameKeys(as: indexes[0]) })
        self.indexes = indexes
        columns = indexes[0].columns
        wordsPerKey = columns.count + 2
        self.rowidColumn = rowidColumn
        self.spillPath = spillPath
        descendingMask = columns.enumerated().reduce(0) { $0 | ($1.element.descending ? 1 << UInt64($1.offset) : 0) }
        storage = .allocate(capacity: 0)
    }

    /// One collector per set of `indexes` with the same key columns, for those built page by
    /// page (`BulkIndex.isBuiltPageByPage`): an `IndexKeySorter` when every key column has numeric
    /// affinity, a `TextIndexKeySorter` when one holds text or blobs; `spillPath` names a file for
    /// each one's runs.
    static func sorters(for indexes: [BulkIndex], rowidColumn: Int?, usableSize: Int, spillPath: (Int) -> String) -> [any IndexKeyCollector] {
        var groups: [[BulkIndex]] = []
        for index in indexes where index.isBuiltPageByPage {
            if let group = groups.firstIndex(where: { $0[0].hasSameKeys(as: index) }) {
                groups[group].append(index)
            } else {
                groups.append([index])
            }
        }
        return groups.enumerated().map { position, group -> any IndexKeyCollector in
            if group[0].columns.contains(where: { $0.affinity == .text || $0.affinity == .blob }) {
                return TextIndexKeySorter(indexes: group, rowidColumn: rowidColumn, usableSize: usableSize, spillPath: spillPath(position))
            }
            return IndexKeySorter(indexes: group, rowidColumn: rowidColumn, spillPath: spillPath(position))
        }
    }

    deinit {
        storage.deallocate()
        if descriptor >= 0 {
            close(descriptor)
            unlink(spillPath)
        }
    }

    /// Bytes of keys held in memory.
    var bytesHeld: Int { heldWords * 8 }

    /// Keys held in memory (not yet spilled).
    var count: Int { heldWords / wordsPerKey }

    /// The keys held, as words.
    private var held: UnsafeBufferPointer<UInt64> { UnsafeBufferPointer(start: storage, count: heldWords) }

    /// Frees the keys held (and their memory, when `releasing`).
    private func clear(releasing: Bool) {
        heldWords = 0
        guard releasing else { return }
        storage.deallocate()
        storage = .allocate(capacity: 0)
        capacity = 0
    }

    /// Takes the key of one row copied to the table (`record` decoded from `payload`).
    func add(rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer) {
        guard !isAbandoned else { return }
        if heldWords + wordsPerKey > capacity {
            let grown = UnsafeMutablePointer<UInt64>.allocate(capacity: max(4096, capacity * 2))
            grown.update(from: storage, count: heldWords)
            storage.deallocate()
            storage = grown
            capacity = max(4096, capacity * 2)
        }
        let key = storage + heldWords
        var reals: UInt64 = 0
        for (position, column) in columns.enumerated() {
            var word: UInt64
            if column.tableColumn == rowidColumn {
                guard let value = Self.word(exactly: rowid) else { return abandon() }
                word = value
            } else if column.tableColumn >= record.count {
                word = 0  // a record shorter than the table: NULL (the bulk load copies no other)
            } else {
                let value = record[column.tableColumn]
                switch value.storageClass {
                case .null: word = 0
                case .integer:
                    guard let encoded = Self.word(exactly: value.integer(in: payload)) else { return abandon() }
                    word = encoded
                case .real:
                    let real = value.real(in: payload)
                    guard !real.isNaN else { return abandon() }
                    word = Self.word(real)
                    reals |= 1 << UInt64(position)
                case .text, .blob: return abandon()
                }
            }
            key[position] = column.descending ? ~word : word
        }
        key[columns.count] = UInt64(bitPattern: rowid) ^ Self.signBit
        key[columns.count + 1] = reals
        heldWords += wordsPerKey
    }

    private func abandon() {
        isAbandoned = true
        clear(releasing: true)
        runs = []
    }

    /// The word of a real: its bits, flipped so unsigned order is numeric order (-0.0 as 0.0).
    static func word(_ real: Double) -> UInt64 {
        let bits = (real == 0 ? 0.0 : real).bitPattern
        return bits & signBit != 0 ? ~bits : bits | signBit
    }

    /// The word of an integer a double holds exactly; nil for one it does not.
    static func word(exactly integer: Int64) -> UInt64? {
        let real = Double(integer)
        guard let back = Int64(exactly: real), back == integer else { return nil }
        return word(real)
    }

    /// The value a key word stands for (`descending` undone by the caller): nil for NULL.
    static func number(_ word: UInt64) -> Double? {
        guard word != 0 else { return nil }
        return Double(bitPattern: word & signBit != 0 ? word ^ signBit : ~word)
    }

    /// The most bytes `record(of:into:)` writes: a header of a size byte and a serial type per
    /// value, eight bytes per value.
    var maximumRecordSize: Int { 1 + (columns.count + 1) * 9 }

    /// Writes the index record of `key` (words as `add` made them) at the start of `record`
    /// (`maximumRecordSize` bytes at least) and returns its length: a one-byte header size, a
    /// serial type per value (the key columns, then the rowid), the values — each of the class
    /// the table's record gave it (a real stays a real), integers in the fewest bytes, 0 and 1
    /// as serial types 8 and 9 (schema format 4, as SQLite writes them), reals as 8-byte
    /// big-endian doubles.
    func record(of key: UnsafeBufferPointer<UInt64>, into record: UnsafeMutableRawBufferPointer) -> Int {
        let keyColumns = columns.count
        let reals = key[keyColumns + 1]
        record[0] = UInt8(keyColumns + 2)  // header size: itself and one byte per serial type
        var end = keyColumns + 2
        for position in 0...keyColumns {
            var type: UInt8 = 0
            var bits: UInt64 = 0
            if position == keyColumns {
                bits = key[position] ^ Self.signBit
                type = Self.serialType(of: Int64(bitPattern: bits))
            } else {
                let word = descendingMask & (1 << UInt64(position)) != 0 ? ~key[position] : key[position]
                if let number = Self.number(word) {
                    if reals & (1 << UInt64(position)) != 0 {
                        type = 7
                        bits = number.bitPattern
                    } else {
                        bits = UInt64(bitPattern: Int64(number))
                        type = Self.serialType(of: Int64(number))
                    }
                }
            }
            record[1 + position] = type
            let bytes = type == 7 || type == 6 ? 8 : type == 5 ? 6 : type < 5 ? Int(type) : 0
            if bytes > 0 {
                // The value's low `bytes` bytes, most significant first: shifted to the top of a
                // word stored big-endian, they are its first bytes.
                precondition(end + bytes <= record.count, "room for the record")
                withUnsafeBytes(of: (bits << UInt64(64 - 8 * bytes)).bigEndian) { word in
                    record.baseAddress!.advanced(by: end).copyMemory(from: word.baseAddress!, byteCount: bytes)
                }
                end += bytes
            }
        }
        return end
    }

    /// SQLite's serial type for an integer: the fewest bytes that hold it, 8 and 9 for 0 and 1.
    static func serialType(of value: Int64) -> UInt8 {
        let magnitude = value < 0 ? ~UInt64(bitPattern: value) : UInt64(value)
        switch magnitude {
        case ...1 where value >= 0: return UInt8(8 + value)
        case ...0x7F: return 1
        case ...0x7FFF: return 2
        case ...0x7F_FFFF: return 3
        case ...0x7FFF_FFFF: return 4
        case ...0x7FFF_FFFF_FFFF: return 5
        default: return 6
        }
    }

    /// Whether two keys' values are equal with none NULL: a UNIQUE index may not hold both.
    func haveSameValues(_ left: UnsafeBufferPointer<UInt64>, _ right: UnsafeBufferPointer<UInt64>) -> Bool {
        for (position, column) in columns.enumerated() {
            let word = left[position]
            guard word == right[position], word != (column.descending ? ~0 : 0) else { return false }
        }
        return true
    }

    /// Sorts the keys held and writes them to the spill file as one run.
    func spill() throws {
        guard !isAbandoned, heldWords > 0 else { return }
        if descriptor < 0 {
            descriptor = open(spillPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard descriptor >= 0 else { throw SalvageError.writing(spillPath, code: errno) }
        }
        let order = sortedOrder()
        // Keys are copied a key at a time into a buffer of our own (an array's generic
        // `append(contentsOf:)` took 1.6% of a `--catalog` salvage's instructions).
        let chunk = UnsafeMutablePointer<UInt64>.allocate(capacity: Self.mergeBufferWords)
        defer { chunk.deallocate() }
        var filled = 0
        let start = spilledWords
        let words = storage
        for (number, position) in order.enumerated() {
            (chunk + filled).update(from: words + Int(position) * wordsPerKey, count: wordsPerKey)
            filled += wordsPerKey
            if filled + wordsPerKey > Self.mergeBufferWords || number == order.count - 1 {
                try FileWriting.write(descriptor, UnsafeRawBufferPointer(start: chunk, count: filled * 8), at: spilledWords * 8, path: spillPath)
                spilledWords += Int64(filled)
                filled = 0
            }
        }
        runs.append((start, order.count))
        clear(releasing: false)
    }

    /// The positions of the keys held, in key order: a stable LSD radix sort of their value
    /// words, last column first, a byte at a time (a byte every key shares is skipped). Keys come
    /// in increasing rowid order, so keys of equal values stay in rowid order without comparing
    /// the rowid words.
    private func sortedOrder() -> [UInt32] {
        let width = wordsPerKey
        let total = heldWords / width
        var order = [UInt32](unsafeUninitializedCapacity: total) { buffer, initialized in
            for position in 0..<total { buffer[position] = UInt32(position) }
            initialized = total
        }
        var scratch = [UInt32](repeating: 0, count: total)
        var counts = [Int](repeating: 0, count: 8 * 256)
        do {
            let words = held
            for column in Swift.stride(from: columns.count - 1, through: 0, by: -1) {
                counts.withUnsafeMutableBufferPointer { counts in
                    for index in counts.indices { counts[index] = 0 }
                    for position in 0..<total {
                        let word = words[position * width + column]
                        for byte in 0..<8 { counts[byte << 8 | Int(truncatingIfNeeded: word >> UInt64(8 * byte)) & 0xFF] += 1 }
                    }
                    for byte in 0..<8 {
                        let base = byte << 8
                        guard !(0..<256).contains(where: { counts[base + $0] == total }) else { continue }
                        var sum = 0
                        for digit in 0..<256 {
                            let count = counts[base + digit]
                            counts[base + digit] = sum
                            sum += count
                        }
                        order.withUnsafeBufferPointer { from in
                            scratch.withUnsafeMutableBufferPointer { to in
                                for position in from {
                                    let digit = base + Int(truncatingIfNeeded: words[Int(position) * width + column] >> UInt64(8 * byte)) & 0xFF
                                    to[counts[digit]] = position
                                    counts[digit] += 1
                                }
                            }
                        }
                        swap(&order, &scratch)
                    }
                }
            }
        }
        return order
    }

    /// Hands every key back in order (the words of one key at a time), then frees what it held.
    /// A sorter that spilled merges its runs; one that did not sorts in memory.
    func forEachSorted(_ body: (UnsafeBufferPointer<UInt64>) throws -> Void) throws {
        precondition(!isAbandoned, "an abandoned sorter has no keys")
        defer {
            clear(releasing: true)
            runs = []
        }
        if runs.isEmpty {
            let order = sortedOrder()
            do {
                let words = held
                for position in order {
                    let first = Int(position) * wordsPerKey
                    try body(UnsafeBufferPointer(rebasing: words[first..<first + wordsPerKey]))
                }
            }
            return
        }
        try spill()
        clear(releasing: true)
        try merge(body)
    }

    func forEachEntry(_ body: (UnsafeRawBufferPointer, Bool) throws -> Void) throws {
        var record = [UInt8](repeating: 0, count: maximumRecordSize)
        var previous = [UInt64](repeating: 0, count: wordsPerKey)
        var isFirst = true
        try forEachSorted { key in
            let repeats = !isFirst && previous.withUnsafeBufferPointer { haveSameValues($0, key) }
            _ = previous.withUnsafeMutableBufferPointer { $0.update(fromContentsOf: key) }
            isFirst = false
            try record.withUnsafeMutableBytes { bytes in
                let length = self.record(of: key, into: bytes)
                try body(UnsafeRawBufferPointer(rebasing: bytes[..<length]), repeats)
            }
        }
    }

    /// A k-way merge of the spilled runs, through a heap of run readers. Keys are compared and
    /// handed out where they lie in the readers' buffers (an array slice per comparison, with
    /// its reference counting, took about a tenth of the index work on the benchmark store).
    private func merge(_ body: (UnsafeBufferPointer<UInt64>) throws -> Void) throws {
        let width = wordsPerKey
        let bufferKeys = max(1, Self.mergeBufferWords / width)
        let readers = runs.map { RunReader(offset: $0.offset, keys: $0.keys, width: width, bufferKeys: bufferKeys) }
        for reader in readers { try reader.fill(descriptor: descriptor, path: spillPath) }
        // The value words and the rowid decide; the reals mask, last, never does.
        let compared = width - 1
        func less(_ left: RunReader, _ right: RunReader) -> Bool {
            let a = left.current, b = right.current
            for word in 0..<compared where a[word] != b[word] { return a[word] < b[word] }
            return false
        }
        var heap = readers.filter { !$0.isDone }
        func siftDown(_ start: Int) {
            var parent = start
            while true {
                var smallest = parent
                let left = 2 * parent + 1
                if left < heap.count, less(heap[left], heap[smallest]) { smallest = left }
                if left + 1 < heap.count, less(heap[left + 1], heap[smallest]) { smallest = left + 1 }
                if smallest == parent { return }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        for start in stride(from: heap.count / 2, through: 0, by: -1) { siftDown(start) }
        while let top = heap.first {
            try body(UnsafeBufferPointer(start: top.current, count: width))
            try top.advance(descriptor: descriptor, path: spillPath)
            if top.isDone {
                heap[0] = heap[heap.count - 1]
                heap.removeLast()
            }
            if !heap.isEmpty { siftDown(0) }
        }
    }

    /// One spilled run, read a buffer at a time into memory of its own.
    private final class RunReader {
        private var offset: Int64
        private var keysLeft: Int
        private let width: Int
        private let bufferKeys: Int
        private let buffer: UnsafeMutablePointer<UInt64>
        /// Words read into `buffer`, and the first word of the current key.
        private var filled = 0
        private var position = 0
        /// The current key's words.
        var current: UnsafePointer<UInt64> { UnsafePointer(buffer + position) }
        var isDone: Bool { position >= filled && keysLeft == 0 }

        init(offset: Int64, keys: Int, width: Int, bufferKeys: Int) {
            self.offset = offset
            keysLeft = keys
            self.width = width
            self.bufferKeys = bufferKeys
            buffer = .allocate(capacity: bufferKeys * width)
        }

        deinit { buffer.deallocate() }

        func fill(descriptor: Int32, path: String) throws {
            let keys = min(bufferKeys, keysLeft)
            position = 0
            filled = keys * width
            guard keys > 0 else { return }
            let wanted = keys * width * 8
            let read = FileReading.read(descriptor, into: UnsafeMutableRawBufferPointer(start: buffer, count: wanted), at: offset * 8)
            guard read == wanted else { throw SalvageError.writeFailed(path: path, reason: "sorted index keys could not be read back") }
            offset += Int64(keys * width)
            keysLeft -= keys
        }

        func advance(descriptor: Int32, path: String) throws {
            position += width
            if position >= filled, keysLeft > 0 { try fill(descriptor: descriptor, path: path) }
        }
    }
}
