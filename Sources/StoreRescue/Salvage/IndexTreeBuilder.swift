/// Builds one index b-tree bottom-up from its records given in increasing key order, each page
/// written once (`PageAppender`), the way `TableTreeBuilder` builds a table's; the top page is
/// written over the index's (empty) root page, so the schema needs no change.
///
/// An index b-tree keeps every entry once (file format §1.6): a leaf (`0x0A`) holds cells of a
/// varint payload size and the record; an interior page (`0x02`) holds cells of a 4-byte left
/// child, a varint payload size and a record that sorts after every entry of that child and
/// before every entry of the next one — so the entry that does not fit in a full leaf goes up
/// to the level above as the divider, and the next leaf starts with the entry after it. Interior
/// levels fill and spill the same way: an entry that does not fit closes the page, its child
/// becomes the page's right child, its record goes up.
///
/// No page is left empty (a leaf) or with a right child only (an interior page): a full page is
/// held until the page after it has a cell, and when the entries end first, the held page gives
/// its last cell. Every page written gets its pointer-map entry; the root keeps the one SQLite
/// gave it. Records must fit a page without overflow (the collectors refuse larger ones).
///
/// Memory: at most two pages' worth of cells per level.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class IndexTreeBuilder {
    /// Cells of a page not yet written: their records back to back, and for an interior page
    /// each cell's left child.
    private struct Cells {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        var children: [UInt32] = []
        /// Bytes the cells take on the page, their pointers included.
        var size = 0
        var isEmpty: Bool { ends.isEmpty }

        func record(_ index: Int) -> ArraySlice<UInt8> { bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]] }

        mutating func append<Record: Collection<UInt8>>(_ record: Record, child: UInt32?, cellSize: Int) {
            bytes.append(contentsOf: record)
            ends.append(bytes.count)
            if let child { children.append(child) }
            size += cellSize + 2
        }

        /// Removes the last cell; returns its record and left child (0 on a leaf).
        mutating func removeLast(cellSize: (Int) -> Int) -> (record: [UInt8], child: UInt32) {
            let record = Array(self.record(ends.count - 1))
            bytes.removeLast(record.count)
            ends.removeLast()
            size -= cellSize(record.count) + 2
            return (record, children.popLast() ?? 0)
        }
    }

    private struct Level {
        var current = Cells()
        /// A full page held until `current` has a cell, with its right child (interior levels)
        /// and the record that goes up above it.
        var held: (cells: Cells, rightChild: UInt32, divider: [UInt8])?
        var wroteAny = false
    }

    let root: UInt32
    private let file: PageAppender
    private let usableSize: Int
    @exclusivity(unchecked) private(set) var entries = 0
    /// Levels whose last page took a cell from the page before it at `finish` (for tests).
    private(set) var levelsBalanced: [Int] = []
    @exclusivity(unchecked) private var levels: [Level] = [Level()]
    @exclusivity(unchecked) private var page: [UInt8]
    @exclusivity(unchecked) private var isFinished = false

    private static let leafHeaderSize = 8
    private static let interiorHeaderSize = 12

    /// The largest record this builder writes (the smallest local payload an index page of
    /// `usableSize` bytes allows: file format §1.6, `(U-12)*64/255-23`).
    static func maximumRecordSize(usableSize: Int) -> Int { (usableSize - 12) * 64 / 255 - 23 }

    /// A builder for the index whose root page is `root` (which must hold no entry yet).
    init(file: PageAppender, root: UInt32) {
        self.file = file
        self.root = root
        usableSize = file.usableSize
        page = [UInt8](repeating: 0, count: file.pageSize)
    }

    private static func cellSize(recordSize: Int, level: Int) -> Int {
        (level == 0 ? 0 : 4) + SQLiteVarint.length(of: UInt64(recordSize)) + recordSize
    }

    private func fits(_ used: Int, adding cellSize: Int, level: Int) -> Bool {
        (level == 0 ? Self.leafHeaderSize : Self.interiorHeaderSize) + used + cellSize + 2 <= usableSize
    }

    /// Appends the next entry: `record` sorts after every one before it.
    func append(_ record: UnsafeRawBufferPointer) throws {
        precondition(!isFinished && record.count >= 2 && record.count <= Self.maximumRecordSize(usableSize: usableSize),
                     "a record that fits a page, before finish")
        entries += 1
        try add(record, child: nil, level: 0)
    }

    /// Adds one cell at `level` (a leaf entry, or a left child and its divider), closing the
    /// level's page first when the cell does not fit: the cell's record then goes up instead.
    private func add<Record: Collection<UInt8>>(_ record: Record, child: UInt32?, level: Int) throws {
        if level == levels.count { levels.append(Level()) }
        let size = Self.cellSize(recordSize: record.count, level: level)
        if !levels[level].current.isEmpty, !fits(levels[level].current.size, adding: size, level: level) {
            precondition(levels[level].held == nil, "a held page is written once the page after it has a cell")
            levels[level].held = (levels[level].current, child ?? 0, Array(record))
            levels[level].current = Cells()
            return
        }
        if levels[level].current.isEmpty, let held = levels[level].held {
            levels[level].held = nil
            let number = try writeAsChild(held.cells, rightChild: held.rightChild, level: level)
            try add(held.divider, child: number, level: level + 1)
        }
        levels[level].current.append(record, child: child, cellSize: size)
    }

    /// Writes what is left and the top page over the root. Without an entry, the root is left
    /// as it is (an empty leaf).
    func finish() throws {
        precondition(!isFinished, "finished once")
        isFinished = true
        guard entries > 0 else { return }
        var rightChild: UInt32 = 0
        var level = 0
        while true {
            if levels[level].current.isEmpty {
                // The entries ended just after a page closed: it gives its last cell, and the
                // record that was to go up above it comes down into the last page.
                guard var held = levels[level].held else { preconditionFailure("a level with a page or a held page") }
                levels[level].held = nil
                levelsBalanced.append(level)
                precondition(held.cells.ends.count >= 2, "a held page of two cells at least")
                let last = held.cells.removeLast { Self.cellSize(recordSize: $0, level: level) }
                let size = Self.cellSize(recordSize: held.divider.count, level: level)
                levels[level].current.append(held.divider, child: level == 0 ? nil : held.rightChild, cellSize: size)
                let number = try writeAsChild(held.cells, rightChild: last.child, level: level)
                try add(last.record, child: number, level: level + 1)
            }
            if !levels[level].wroteAny {
                // The only page of the highest level: the top of the tree.
                try write(levels[level].current, rightChild: rightChild, level: level, at: root)
                return
            }
            rightChild = try writeAsChild(levels[level].current, rightChild: rightChild, level: level)
            levels[level].current = Cells()
            level += 1
        }
    }

    private func writeAsChild(_ cells: Cells, rightChild: UInt32, level: Int) throws -> UInt32 {
        let number = file.allocate()
        try write(cells, rightChild: rightChild, level: level, at: number)
        levels[level].wroteAny = true
        return number
    }

    private func write(_ cells: Cells, rightChild: UInt32, level: Int, at number: UInt32) throws {
        let isLeaf = level == 0
        precondition(!cells.isEmpty && (isLeaf || rightChild != 0), "a page with a cell, and a right child above the leaves")
        let headerSize = isLeaf ? Self.leafHeaderSize : Self.interiorHeaderSize
        try page.withUnsafeMutableBytes { page in
            page.initializeMemory(as: UInt8.self, repeating: 0)
            var contentStart = usableSize
            for index in cells.ends.indices {
                let record = cells.record(index)
                contentStart -= Self.cellSize(recordSize: record.count, level: level)
                var position = contentStart
                if !isLeaf {
                    page.storeBigEndianUInt32(cells.children[index], at: position)
                    position += 4
                }
                position += SQLiteVarint.write(UInt64(record.count), into: page, at: position)
                record.withUnsafeBytes { page.baseAddress!.advanced(by: position).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                page.storeBigEndianUInt16(contentStart, at: headerSize + 2 * index)
            }
            page[0] = isLeaf ? 0x0A : 0x02
            page.storeBigEndianUInt16(cells.ends.count, at: 3)
            page.storeBigEndianUInt16(contentStart == 65_536 ? 0 : contentStart, at: 5)
            if !isLeaf { page.storeBigEndianUInt32(rightChild, at: 8) }
            try file.write(UnsafeRawBufferPointer(page), at: number)
        }
        guard !isLeaf else { return }
        for child in cells.children + [rightChild] { try file.setPointerMapEntry(child, type: .nonRootBTree, parent: number) }
    }

    /// Writes the tree of each of `sorter`'s indexes from its sorted entries, each record made
    /// once for all of them. Returns the entries written, and `refused` when a UNIQUE index among
    /// them holds the same values twice (its tree is still whole and in order, values then rowid:
    /// the caller empties it with its table).
    ///
    /// - Parameter trees: the builders to use, one per index of `sorter` in order (tests read
    ///   them afterwards); nil makes them.
    static func writeTrees(
        of sorter: any IndexKeyCollector, to file: PageAppender, trees given: [IndexTreeBuilder]? = nil,
        cancellation: CancellationFlag? = nil
    ) throws -> (entries: Int, refused: Bool) {
        let trees = given ?? sorter.indexes.map { IndexTreeBuilder(file: file, root: $0.rootPage) }
        precondition(trees.count == sorter.indexes.count, "a builder per index")
        let checksUnique = sorter.indexes.contains(where: \.isUnique)
        var refused = false
        var merged = 0
        try sorter.forEachEntry { record, repeatsValues in
            // A large table's indexes take a while (0.5 s for 2,000,000 rows): a cancellation
            // is seen within a few thousand entries, as the walk sees it within a page.
            merged &+= 1
            if merged & 0xFFF == 0, cancellation?.isCancelled == true { throw SalvageError.interrupted }
            if checksUnique, repeatsValues { refused = true }
            for tree in trees { try tree.append(record) }
        }
        for tree in trees { try tree.finish() }
        return (trees.reduce(0) { $0 + $1.entries }, refused)
    }
}
