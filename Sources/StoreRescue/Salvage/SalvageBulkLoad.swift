import Foundation

/// How rows of one output table may be written page by page instead of through SQLite: where its
/// tree goes, and which records can be copied exactly as the damaged store holds them.
///
/// A record is copied as it is when the output table's columns are the source table's, in the
/// same order, with the same affinity (so SQLite reads each value back as it read it in the
/// damaged store): its value count within `recordLengths` (a shorter record reads as NULLs, so
/// only when the missing columns' fallback is NULL), and NULL in the rowid column. The table must
/// have no rows yet; its indexes are left empty by the table's load and filled right after it,
/// before any row goes in through SQLite: built page by page from the keys collected as the rows
/// were copied (`IndexKeySorter`, `IndexTreeBuilder`), or by `REINDEX`
/// (`SalvageRowWriter.rebuildIndexes`) when a key holds a value the sorter cannot order.
struct BulkTarget: Equatable {
    var rootPage: UInt32
    var recordLengths: ClosedRange<Int>
    /// The `INTEGER PRIMARY KEY` column (the rowid's alias), whose record value is NULL.
    var rowidColumn: Int?
    /// The table's indexes, to fill once its rows are in.
    var indexes: [BulkIndex] = []

    /// Whether `record` can be copied as it is.
    func copies(_ record: [RecordColumn]) -> Bool {
        guard recordLengths.contains(record.count) else { return false }
        if let rowidColumn, rowidColumn < record.count, record[rowidColumn].serialType != 0 { return false }
        return true
    }

    /// Where output column `j` takes its value from.
    enum Position: Equatable {
        /// Record value `j` (when the record is shorter: the fallback, which may be NULL or not).
        case record(fallbackIsNull: Bool)
        /// The rowid (the column is its alias; the record holds NULL there).
        case rowid
        /// NULL: the damaged table has no such column (this and every later one).
        case null
    }

    /// The bulk target of a table rooted at `rootPage` whose output columns take their values as
    /// `positions` say; nil when that is not a positional copy of the record.
    static func make(rootPage: UInt32?, positions: [Position], indexes: [BulkIndex] = []) -> BulkTarget? {
        guard let rootPage, rootPage >= 2, !positions.isEmpty else { return nil }
        var shortest = 1
        var longest = positions.count
        var rowidColumn: Int?
        for (index, position) in positions.enumerated() {
            switch position {
            case .record(let fallbackIsNull):
                guard longest == positions.count else { return nil }  // a value after a NULL-only column
                if !fallbackIsNull { shortest = index + 1 }
            case .rowid:
                guard rowidColumn == nil, longest == positions.count else { return nil }
                rowidColumn = index
            case .null:
                if longest == positions.count { longest = index }
            }
        }
        guard shortest <= longest else { return nil }
        return BulkTarget(rootPage: rootPage, recordLengths: shortest...longest, rowidColumn: rowidColumn, indexes: indexes)
    }
}

/// Pass 2's fast path: rows read from intact table trees — in rowid order — written page by page
/// (`TableTreeBuilder`) into the tables SQLite created empty, while SQLite has no transaction
/// open on the file. A row that cannot be copied as it is — out of rowid order, a value to fix,
/// a record cut short, a table without a bulk target — is set aside (`RowSpill`) and goes in
/// through SQLite afterwards, exactly as it would have without this path: the first copy of a
/// rowid still wins, and every count is the same.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class SalvageBulkLoad {
    enum Offer {
        /// Written to the table's tree.
        case appended
        /// Refused by the Core Data rules (a value of the wrong storage class, a foreign `Z_ENT`).
        case notFitting
        /// Not for this path: set aside, to go through SQLite.
        case setAside
    }

    let appender: PageAppender
    let spill: RowSpill
    private let writer: SalvageRowWriter
    /// By writer target (small numbers: arrays, not dictionaries — this runs for every row).
    @exclusivity(unchecked) private var targets: [BulkTarget?]
    @exclusivity(unchecked) private var builder: (target: Int, tree: TableTreeBuilder, keys: [any IndexKeyCollector])?
    /// Targets whose tree was finished: later rows for them go through SQLite.
    @exclusivity(unchecked) private var closed: [Bool]
    /// Per target, the largest rowid appended or set aside: a row at or below it is set aside,
    /// so the first copy of a rowid stays the one kept.
    @exclusivity(unchecked) private var highest: [Int64?]
    @exclusivity(unchecked) private(set) var rowsAppended = 0
    @exclusivity(unchecked) private var appendedByTarget: [Int]
    /// Targets given rows, in the order loaded, with the indexes left for `REINDEX`, and whether
    /// a UNIQUE index built page by page found a key twice (the table's rows must then go in
    /// again through SQLite: `SalvageRowWriter.rebuildIndexes`).
    private(set) var indexesToRebuild: [(target: Int, indexes: [String], refused: Bool)] = []
    /// Index entries written page by page, in all and by target.
    private(set) var indexEntriesWritten = 0
    private var indexEntriesByTarget: [Int: Int] = [:]
    private let keyFolder: String
    private var sorterFiles = 0
    /// Bytes of index keys held in memory before the sorters spill their runs to disk. (12 MiB
    /// spared the benchmark store's orders one spill, 13 ms, and took the 2,000,000-row store's
    /// peak from 54 to 58 MB: the memory target is 64.)
    static let indexKeyBudget = 8 << 20

    /// Stops the index trees' writing (`endTable`) within a few thousand entries.
    private let cancellation: CancellationFlag?

    init(
        file: String, spillPath: String, targets: [Int: BulkTarget], writer: SalvageRowWriter, flush: BackgroundFlush? = nil,
        cancellation: CancellationFlag? = nil
    ) throws {
        self.cancellation = cancellation
        appender = try PageAppender(path: file, flush: flush)
        keyFolder = spillPath
        spill = try RowSpill(path: spillPath)
        let count = (targets.keys.max() ?? -1) + 1
        self.targets = (0..<count).map { targets[$0] }
        closed = Array(repeating: false, count: count)
        highest = Array(repeating: nil, count: count)
        appendedByTarget = Array(repeating: 0, count: count)
        self.writer = writer
    }

    /// Rows written to `target`'s tree.
    func rowsAppended(to target: Int) -> Int { target >= 0 && target < appendedByTarget.count ? appendedByTarget[target] : 0 }

    /// Index entries written page by page for `target`'s table.
    func indexEntriesWritten(to target: Int) -> Int { indexEntriesByTarget[target] ?? 0 }

    func isBulk(_ target: Int) -> Bool { target >= 0 && target < targets.count && targets[target] != nil }

    /// Takes one decoded row of a table tree.
    func offer(route: RowRoute, rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer, isComplete: Bool) throws -> Offer {
        let index = route.target
        guard isBulk(index), let target = targets[index], !closed[index] else { return .setAside }
        if let rules = route.rules, !writer.fits(route: route, rules: rules, record: record, payload: payload) { return .notFitting }
        let isFirst = highest[index].map { rowid > $0 } ?? true
        if isFirst { highest[index] = rowid }
        guard isFirst, isComplete, payload.count >= 2, target.copies(record) else { return .setAside }
        if let rules = route.rules, writer.needsFixes(route: route, rules: rules, record: record, payload: payload) { return .setAside }
        if builder?.target != route.target {
            try endTable()
            builder = (route.target, TableTreeBuilder(file: appender, root: target.rootPage), sorters(for: target))
        }
        guard let (_, tree, keys) = builder else { preconditionFailure("a tree for the row's table") }
        try tree.append(rowid: rowid, payload: payload)
        writer.ledger?.note(route: route, rowid: rowid, record: record, payload: payload)
        if !keys.isEmpty {
            var held = 0
            for sorter in keys {
                sorter.add(rowid: rowid, record: record, payload: payload)
                held += sorter.bytesHeld
            }
            if held > Self.indexKeyBudget {
                for sorter in keys { try sorter.spill() }
            }
        }
        rowsAppended += 1
        appendedByTarget[index] += 1
        return .appended
    }

    /// The table being read is done: its tree is finished, then its indexes' trees, and its
    /// target closed.
    func endTable() throws {
        guard let builder else { return }
        self.builder = nil
        closed[builder.target] = true
        try builder.tree.finish()
        guard let target = targets[builder.target], !target.indexes.isEmpty else { return }
        var built: Set<String> = []
        var refused = false
        let sorters = builder.keys.filter { !$0.isAbandoned }
        for (sorter, written) in zip(sorters, try IndexTreeBuilder.writeTrees(of: sorters, to: appender, cancellation: cancellation)) {
            indexEntriesWritten += written.entries
            indexEntriesByTarget[builder.target, default: 0] += written.entries
            refused = refused || written.refused
            built.formUnion(sorter.indexes.map(\.name))
        }
        let rest = target.indexes.map(\.name).filter { !built.contains($0) }
        if !rest.isEmpty || refused { indexesToRebuild.append((builder.target, rest, refused)) }
    }

    /// The sorters of `target`'s indexes (none in a file whose schema format predates serial
    /// types 8 and 9).
    private func sorters(for target: BulkTarget) -> [any IndexKeyCollector] {
        guard appender.schemaFormat >= 4 else { return [] }
        return IndexKeySorter.sorters(for: target.indexes, rowidColumn: target.rowidColumn, usableSize: appender.usableSize) { _ in
            sorterFiles += 1
            return "\(keyFolder)-keys-\(sorterFiles)"
        }
    }

    /// Finishes the last tree and the file's header; SQLite may then read and write it again.
    func finish() throws {
        try endTable()
        try appender.finish()
        try spill.finishWriting()
    }
}

/// Rows set aside while SQLite is away from the file, kept on disk (in the salvage's private
/// folder) and handed back in the order they came: each as the table it was read for, its page,
/// its rowid, its declared record size and the record bytes read.
final class RowSpill {
    let path: String
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var written: Int64 = 0
    private(set) var rows = 0
    private static let flushBytes = 1 << 20
    private static let entryHeader = 32

    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw SalvageError.writing(path, code: errno) }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    func add(table: Int, page: UInt32, rowid: Int64, declaredSize: Int, payload: UnsafeRawBufferPointer) throws {
        append(UInt64(table), bytes: 8)
        append(UInt64(page), bytes: 8)
        append(UInt64(bitPattern: rowid), bytes: 8)
        append(UInt64(declaredSize), bytes: 4)
        append(UInt64(payload.count), bytes: 4)
        buffer.append(contentsOf: payload)
        rows += 1
        if buffer.count >= Self.flushBytes { try flush() }
    }

    private func append(_ value: UInt64, bytes: Int) {
        for index in stride(from: bytes - 1, through: 0, by: -1) { buffer.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    private func flush() throws {
        try buffer.withUnsafeBytes { try FileWriting.write(descriptor, $0, at: written, path: path) }
        written += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }

    func finishWriting() throws {
        try flush()
        buffer = []
    }

    /// Hands back every row, in the order added.
    func replay(_ body: (_ table: Int, _ page: UInt32, _ rowid: Int64, _ declaredSize: Int, _ payload: UnsafeRawBufferPointer) throws -> Void) throws {
        var offset: Int64 = 0
        var header = [UInt8](repeating: 0, count: Self.entryHeader)
        var payload: [UInt8] = []
        for _ in 0..<rows {
            guard FileReading.read(descriptor, into: &header, at: offset) == Self.entryHeader else {
                throw SalvageError.writeFailed(path: path, reason: "rows set aside could not be read back")
            }
            let fields = header.withUnsafeBytes { raw in
                (table: Int(UInt64(raw.bigEndianUInt32(at: 0)) << 32 | UInt64(raw.bigEndianUInt32(at: 4))),
                 page: UInt32(truncatingIfNeeded: UInt64(raw.bigEndianUInt32(at: 8)) << 32 | UInt64(raw.bigEndianUInt32(at: 12))),
                 rowid: Int64(bitPattern: UInt64(raw.bigEndianUInt32(at: 16)) << 32 | UInt64(raw.bigEndianUInt32(at: 20))),
                 declared: Int(raw.bigEndianUInt32(at: 24)), count: Int(raw.bigEndianUInt32(at: 28)))
            }
            payload.removeAll(keepingCapacity: true)
            payload.append(contentsOf: repeatElement(0, count: fields.count))
            guard FileReading.read(descriptor, into: &payload, at: offset + Int64(Self.entryHeader)) == fields.count else {
                throw SalvageError.writeFailed(path: path, reason: "rows set aside could not be read back")
            }
            try payload.withUnsafeBytes { try body(fields.table, fields.page, fields.rowid, fields.declared, $0) }
            offset += Int64(Self.entryHeader + fields.count)
        }
    }
}
