/// Builds one table b-tree bottom-up from rows given in increasing rowid order, each page
/// written once (`PageAppender`), the way a bulk loader does; the tree's top page is written
/// over the table's (empty) root page, so the schema needs no change.
///
/// Leaves are filled in order; a full leaf is written when the next row does not fit, and one
/// entry — its page and its largest rowid — goes to the interior level above, which fills and
/// spills the same way. Pages (file format §1.6):
/// - table leaf (`0x0D`): cells of varint payload size, varint rowid, the payload's local part
///   and, for a record larger than the page allows, the first overflow page; the rest in a
///   chain of overflow pages (4-byte next page, then `usableSize - 4` bytes);
/// - table interior (`0x05`): cells of a 4-byte left child and a varint key (the largest rowid
///   in that child), the last child in the header's right-child pointer.
///
/// No interior page is left with a right child only: the last page of a level is written with
/// one entry taken from the page before it when it would have just one. Every page gets its
/// pointer-map entry (the overflow pages once the leaf that holds their cell has a number).
///
/// Memory: one leaf, and at most two pages' worth of entries per interior level.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class TableTreeBuilder {
    struct Entry {
        var child: UInt32
        var key: Int64
    }

    private struct Level {
        /// A full page whose successor has a single entry so far: written once the successor has
        /// two, or balanced with it at the end.
        var held: [Entry]?
        var current: [Entry] = []
        /// Bytes the cells of `current` take (every entry but the last, which is the right child).
        var cellBytes = 0
        var wroteAny = false
    }

    let root: UInt32
    private let file: PageAppender
    private let usableSize: Int
    @exclusivity(unchecked) private(set) var lastRowid: Int64?
    @exclusivity(unchecked) private(set) var rows = 0

    @exclusivity(unchecked) private var leaf: [UInt8]
    @exclusivity(unchecked) private var leafCells = 0
    @exclusivity(unchecked) private var leafContentStart: Int
    @exclusivity(unchecked) private var leafLastRowid: Int64 = 0
    /// First overflow pages of the current leaf's cells: their pointer-map parent is the leaf.
    @exclusivity(unchecked) private var leafOverflows: [UInt32] = []
    @exclusivity(unchecked) private var leavesWritten = 0
    @exclusivity(unchecked) private var levels: [Level] = []
    @exclusivity(unchecked) private var scratch: [UInt8]
    @exclusivity(unchecked) private var isFinished = false

    private static let leafHeaderSize = 8
    private static let interiorHeaderSize = 12

    /// A builder for the table whose root page is `root` (which must hold no rows yet).
    init(file: PageAppender, root: UInt32) {
        self.file = file
        self.root = root
        usableSize = file.usableSize
        leaf = [UInt8](repeating: 0, count: file.pageSize)
        scratch = [UInt8](repeating: 0, count: file.pageSize)
        leafContentStart = file.usableSize
    }

    /// Whether a row with `rowid` can be appended: its rowid must be above every one before.
    func accepts(_ rowid: Int64) -> Bool {
        lastRowid.map { rowid > $0 } ?? true
    }

    /// Appends a row: `payload` is its whole record (at least 2 bytes: SQLite's smallest).
    func append(rowid: Int64, payload: UnsafeRawBufferPointer) throws {
        precondition(!isFinished && accepts(rowid) && payload.count >= 2, "rows in increasing rowid order, before finish")
        let size = payload.count
        let local = TableCell.localPayloadSize(payloadSize: size, usableSize: usableSize)
        let spills = local < size
        let cellSize = SQLiteVarint.length(of: UInt64(size)) + SQLiteVarint.length(of: UInt64(bitPattern: rowid)) + local + (spills ? 4 : 0)
        if Self.leafHeaderSize + 2 * (leafCells + 1) + cellSize > leafContentStart {
            try writeLeafAsChild()
        }
        var firstOverflow: UInt32 = 0
        if spills {
            firstOverflow = try writeOverflow(UnsafeRawBufferPointer(rebasing: payload[local...]))
            leafOverflows.append(firstOverflow)
        }
        let start = leafContentStart - cellSize
        leaf.withUnsafeMutableBytes { page in
            var position = start
            position += SQLiteVarint.write(UInt64(size), into: page, at: position)
            position += SQLiteVarint.write(UInt64(bitPattern: rowid), into: page, at: position)
            page.baseAddress!.advanced(by: position).copyMemory(from: payload.baseAddress!, byteCount: local)
            position += local
            if spills { page.storeBigEndianUInt32(firstOverflow, at: position) }
            page.storeBigEndianUInt16(start, at: Self.leafHeaderSize + 2 * leafCells)
        }
        leafContentStart = start
        leafCells += 1
        leafLastRowid = rowid
        lastRowid = rowid
        rows += 1
    }

    /// Writes what is left and the top page over the root. Without a row, the root is left as
    /// it is (an empty leaf).
    func finish() throws {
        precondition(!isFinished, "finished once")
        isFinished = true
        guard rows > 0 else { return }
        if leavesWritten == 0 {
            try writeLeaf(at: root)
            return
        }
        try writeLeafAsChild()
        var index = 0
        while index < levels.count {
            if !levels[index].wroteAny && levels[index].held == nil {
                // The only page of the highest level: the top of the tree (two entries at least).
                try writeInterior(levels[index].current, at: root)
                return
            }
            if var held = levels[index].held {
                // The last page would hold a right child only: it takes the entry before it.
                var current = levels[index].current
                current.insert(held.removeLast(), at: 0)
                levels[index].held = nil
                try writeInteriorAsChild(held, level: index)
                try writeInteriorAsChild(current, level: index)
            } else {
                try writeInteriorAsChild(levels[index].current, level: index)
            }
            levels[index].current = []
            index += 1
        }
        preconditionFailure("a level above every written page")
    }

    // MARK: - Leaves

    private func writeLeafAsChild() throws {
        let number = file.allocate()
        try writeLeaf(at: number)
        leavesWritten += 1
        try addEntry(Entry(child: number, key: leafLastRowid), level: 0)
    }

    private func writeLeaf(at number: UInt32) throws {
        leaf.withUnsafeMutableBytes { page in
            page[0] = 0x0D
            page.storeBigEndianUInt16(0, at: 1)
            page.storeBigEndianUInt16(leafCells, at: 3)
            page.storeBigEndianUInt16(leafContentStart == 65_536 ? 0 : leafContentStart, at: 5)
            page[7] = 0
            // The header, the cell pointers and the cells (packed from the end of the usable
            // area) are this leaf's own bytes; the reserved bytes past it are never written. What
            // lies between pointers and cells may still hold an earlier leaf's bytes: zeroed here,
            // rather than the whole buffer after each page (that memset was 1.6% of a
            // `--catalog` salvage's instructions).
            let gap = Self.leafHeaderSize + 2 * leafCells
            (page.baseAddress! + gap).initializeMemory(as: UInt8.self, repeating: 0, count: leafContentStart - gap)
        }
        try leaf.withUnsafeBytes { try file.write($0, at: number) }
        for overflow in leafOverflows { try file.setPointerMapEntry(overflow, type: .firstOverflow, parent: number) }
        leafOverflows.removeAll(keepingCapacity: true)
        leafCells = 0
        leafContentStart = usableSize
    }

    /// Writes the part of a record past its local bytes as a chain of overflow pages; returns
    /// the first page.
    private func writeOverflow(_ rest: UnsafeRawBufferPointer) throws -> UInt32 {
        let chunk = usableSize - 4
        let first = file.allocate()
        var page = first
        var offset = 0
        while offset < rest.count {
            let count = min(chunk, rest.count - offset)
            let next: UInt32 = offset + count < rest.count ? file.allocate() : 0
            try scratch.withUnsafeMutableBytes { buffer in
                buffer.storeBigEndianUInt32(next, at: 0)
                buffer.baseAddress!.advanced(by: 4).copyMemory(from: rest.baseAddress!.advanced(by: offset), byteCount: count)
                // Only the last page of a chain is not full: what its bytes leave of the usable
                // area is zeroed (the reserved bytes past it are never written).
                (buffer.baseAddress! + 4 + count).initializeMemory(as: UInt8.self, repeating: 0, count: usableSize - 4 - count)
                try file.write(UnsafeRawBufferPointer(buffer), at: page)
            }
            if next != 0 { try file.setPointerMapEntry(next, type: .laterOverflow, parent: page) }
            page = next
            offset += count
        }
        return first
    }

    // MARK: - Interior levels

    private func cellSize(_ entry: Entry) -> Int { 2 + 4 + SQLiteVarint.length(of: UInt64(bitPattern: entry.key)) }

    private func addEntry(_ entry: Entry, level index: Int) throws {
        if index == levels.count { levels.append(Level()) }
        if let last = levels[index].current.last {
            if Self.interiorHeaderSize + levels[index].cellBytes + cellSize(last) <= usableSize {
                levels[index].cellBytes += cellSize(last)
                levels[index].current.append(entry)
            } else {
                precondition(levels[index].held == nil, "a held page is written when its successor has two entries")
                levels[index].held = levels[index].current
                levels[index].current = [entry]
                levels[index].cellBytes = 0
            }
        } else {
            levels[index].current = [entry]
            levels[index].cellBytes = 0
        }
        if levels[index].current.count == 2, let held = levels[index].held {
            levels[index].held = nil
            try writeInteriorAsChild(held, level: index)
        }
    }

    private func writeInteriorAsChild(_ entries: [Entry], level index: Int) throws {
        let number = file.allocate()
        try writeInterior(entries, at: number)
        levels[index].wroteAny = true
        try addEntry(Entry(child: number, key: entries[entries.count - 1].key), level: index + 1)
    }

    private func writeInterior(_ entries: [Entry], at number: UInt32) throws {
        precondition(entries.count >= 2, "an interior page with a cell and a right child at least")
        try scratch.withUnsafeMutableBytes { page in
            page.initializeMemory(as: UInt8.self, repeating: 0)
            var contentStart = usableSize
            for (cell, entry) in entries.dropLast().enumerated() {
                let size = 4 + SQLiteVarint.length(of: UInt64(bitPattern: entry.key))
                contentStart -= size
                page.storeBigEndianUInt32(entry.child, at: contentStart)
                _ = SQLiteVarint.write(UInt64(bitPattern: entry.key), into: page, at: contentStart + 4)
                page.storeBigEndianUInt16(contentStart, at: Self.interiorHeaderSize + 2 * cell)
            }
            page[0] = 0x05
            page.storeBigEndianUInt16(entries.count - 1, at: 3)
            page.storeBigEndianUInt16(contentStart == 65_536 ? 0 : contentStart, at: 5)
            page.storeBigEndianUInt32(entries[entries.count - 1].child, at: 8)
            try file.write(UnsafeRawBufferPointer(page), at: number)
        }
        for entry in entries { try file.setPointerMapEntry(entry.child, type: .nonRootBTree, parent: number) }
    }
}
