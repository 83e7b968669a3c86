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

    /// A leaf being filled where it will be written: cells from the end of the usable space
    /// down, in order (the first cell highest, as `write` lays out an interior page), their
    /// pointers after the header, the rest zero. The leaves take almost every entry, and
    /// gathering their cells in arrays first, then copying them into a page, cost about as much
    /// as sorting the keys.
    private final class LeafPage {
        let bytes: UnsafeMutableRawBufferPointer
        let usableSize: Int
        private(set) var count = 0
        private(set) var contentStart: Int

        init(pageSize: Int, usableSize: Int) {
            bytes = .allocate(byteCount: pageSize, alignment: 8)
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            self.usableSize = usableSize
            contentStart = usableSize
        }

        deinit { bytes.deallocate() }

        var isEmpty: Bool { count == 0 }

        /// Whether a cell of `cellSize` bytes and its pointer fit beside those in.
        func fits(cellSize: Int) -> Bool { IndexTreeBuilder.leafHeaderSize + 2 * (count + 1) + cellSize <= contentStart }

        func append(_ record: UnsafeRawBufferPointer, cellSize: Int) {
            contentStart -= cellSize
            let position = contentStart + SQLiteVarint.write(UInt64(record.count), into: bytes, at: contentStart)
            bytes.baseAddress!.advanced(by: position).copyMemory(from: record.baseAddress!, byteCount: record.count)
            bytes.storeBigEndianUInt16(contentStart, at: IndexTreeBuilder.leafHeaderSize + 2 * count)
            count += 1
        }

        /// Takes the last cell out (its bytes and pointer zeroed); returns its record.
        func removeLast() -> [UInt8] {
            precondition(count > 0, "a cell to take")
            let size = SQLiteVarint.read(UnsafeRawBufferPointer(bytes), at: contentStart, end: usableSize)!
            let start = contentStart + size.length
            let record = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Int(size.value))]))
            let end = start + record.count
            count -= 1
            UnsafeMutableRawBufferPointer(rebasing: bytes[contentStart..<end]).initializeMemory(as: UInt8.self, repeating: 0)
            UnsafeMutableRawBufferPointer(rebasing: bytes[(IndexTreeBuilder.leafHeaderSize + 2 * count)..<(IndexTreeBuilder.leafHeaderSize + 2 * count + 2)])
                .initializeMemory(as: UInt8.self, repeating: 0)
            contentStart = end
            return record
        }

        /// The page with its header, ready to write.
        func finished() -> UnsafeRawBufferPointer {
            bytes[0] = 0x0A
            bytes.storeBigEndianUInt16(count, at: 3)
            bytes.storeBigEndianUInt16(contentStart == 65_536 ? 0 : contentStart, at: 5)
            return UnsafeRawBufferPointer(bytes)
        }

        /// Empties the page for the next leaf.
        func reset() {
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            count = 0
            contentStart = usableSize
        }
    }

    let root: UInt32
    private let file: PageAppender
    private let usableSize: Int
    @exclusivity(unchecked) private(set) var entries = 0
    /// Levels whose last page took a cell from the page before it at `finish` (for tests).
    private(set) var levelsBalanced: [Int] = []
    /// The interior levels, `levels[1]` up (`levels[0]` is unused: the leaves are `leaf`).
    @exclusivity(unchecked) private var levels: [Level] = [Level()]
    @exclusivity(unchecked) private var page: [UInt8]
    @exclusivity(unchecked) private var isFinished = false
    /// The leaf being filled; a full one held until `leaf` has a cell, with the record that
    /// goes up above it; a spare page; whether a leaf was written.
    @exclusivity(unchecked) private var leaf: LeafPage
    @exclusivity(unchecked) private var heldLeaf: (page: LeafPage, divider: [UInt8])?
    @exclusivity(unchecked) private var spareLeaf: LeafPage
    @exclusivity(unchecked) private var wroteLeaf = false

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
        leaf = LeafPage(pageSize: file.pageSize, usableSize: file.usableSize)
        spareLeaf = LeafPage(pageSize: file.pageSize, usableSize: file.usableSize)
    }

    /// An interior cell: a left child, the record's size and the record (leaves: `LeafPage`).
    private static func interiorCellSize(recordSize: Int) -> Int {
        4 + SQLiteVarint.length(of: UInt64(recordSize)) + recordSize
    }

    /// Whether an interior cell of `cellSize` bytes fits beside cells taking `used` bytes.
    private func fits(_ used: Int, adding cellSize: Int) -> Bool {
        Self.interiorHeaderSize + used + cellSize + 2 <= usableSize
    }

    /// Appends the next entry: `record` sorts after every one before it.
    func append(_ record: UnsafeRawBufferPointer) throws {
        precondition(!isFinished && record.count >= 2 && record.count <= Self.maximumRecordSize(usableSize: usableSize),
                     "a record that fits a page, before finish")
        entries += 1
        let size = SQLiteVarint.length(of: UInt64(record.count)) + record.count
        if !leaf.isEmpty, !leaf.fits(cellSize: size) {
            // The same as `add` does for a level above: the page is held, the record goes up.
            precondition(heldLeaf == nil, "a held page is written once the page after it has a cell")
            heldLeaf = (leaf, Array(record))
            leaf = spareLeaf
            spareLeaf = heldLeaf!.page
            leaf.reset()
            return
        }
        if leaf.isEmpty, let held = heldLeaf {
            heldLeaf = nil
            let number = try writeLeafAsChild(held.page)
            try add(held.divider, child: number, level: 1)
        }
        leaf.append(record, cellSize: size)
    }

    private func writeLeafAsChild(_ page: LeafPage) throws -> UInt32 {
        let number = file.allocate()
        try file.write(page.finished(), at: number)
        wroteLeaf = true
        return number
    }

    /// Adds one cell at `level` (a leaf entry, or a left child and its divider), closing the
    /// level's page first when the cell does not fit: the cell's record then goes up instead.
    private func add<Record: Collection<UInt8>>(_ record: Record, child: UInt32?, level: Int) throws {
        precondition(level >= 1, "the leaves are filled by append")
        if level == levels.count { levels.append(Level()) }
        let size = Self.interiorCellSize(recordSize: record.count)
        if !levels[level].current.isEmpty, !fits(levels[level].current.size, adding: size) {
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
        if leaf.isEmpty {
            // The entries ended just after a leaf closed: it gives its last cell, and the
            // record that was to go up above it comes down into the last leaf.
            guard let held = heldLeaf else { preconditionFailure("a leaf with a cell or a held leaf") }
            heldLeaf = nil
            levelsBalanced.append(0)
            precondition(held.page.count >= 2, "a held page of two cells at least")
            let last = held.page.removeLast()
            held.divider.withUnsafeBytes { leaf.append($0, cellSize: SQLiteVarint.length(of: UInt64($0.count)) + $0.count) }
            let number = try writeLeafAsChild(held.page)
            try add(last, child: number, level: 1)
        }
        if !wroteLeaf {
            // One leaf: the whole tree.
            try file.write(leaf.finished(), at: root)
            return
        }
        var rightChild = try writeLeafAsChild(leaf)
        var level = 1
        while true {
            if levels[level].current.isEmpty {
                // The entries ended just after a page closed: it gives its last cell, and the
                // record that was to go up above it comes down into the last page.
                guard var held = levels[level].held else { preconditionFailure("a level with a page or a held page") }
                levels[level].held = nil
                levelsBalanced.append(level)
                precondition(held.cells.ends.count >= 2, "a held page of two cells at least")
                let last = held.cells.removeLast { Self.interiorCellSize(recordSize: $0) }
                let size = Self.interiorCellSize(recordSize: held.divider.count)
                levels[level].current.append(held.divider, child: held.rightChild, cellSize: size)
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

    /// Writes an interior page (the leaves are written from `LeafPage`).
    private func write(_ cells: Cells, rightChild: UInt32, level: Int, at number: UInt32) throws {
        precondition(level >= 1 && !cells.isEmpty && rightChild != 0, "an interior page with a cell and a right child")
        try page.withUnsafeMutableBytes { page in
            page.initializeMemory(as: UInt8.self, repeating: 0)
            var contentStart = usableSize
            for index in cells.ends.indices {
                let record = cells.record(index)
                contentStart -= Self.interiorCellSize(recordSize: record.count)
                var position = contentStart
                page.storeBigEndianUInt32(cells.children[index], at: position)
                position += 4
                position += SQLiteVarint.write(UInt64(record.count), into: page, at: position)
                record.withUnsafeBytes { page.baseAddress!.advanced(by: position).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                page.storeBigEndianUInt16(contentStart, at: Self.interiorHeaderSize + 2 * index)
            }
            page[0] = 0x02
            page.storeBigEndianUInt16(cells.ends.count, at: 3)
            page.storeBigEndianUInt16(contentStart == 65_536 ? 0 : contentStart, at: 5)
            page.storeBigEndianUInt32(rightChild, at: 8)
            try file.write(UnsafeRawBufferPointer(page), at: number)
        }
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
        try writeTrees(of: [sorter], to: file, trees: given.map { [$0] }, cancellation: cancellation)[0]
    }

    /// `writeTrees(of:to:trees:cancellation:)` for several collectors, one after the other: the
    /// collectors sort and make their records on a thread of their own (`IndexEntryPipeline`)
    /// while this one writes the trees, so the next collector's sort runs beside the trees of
    /// the one before it. The pages are those the collectors written one at a time would give.
    static func writeTrees(
        of sorters: [any IndexKeyCollector], to file: PageAppender, trees given: [[IndexTreeBuilder]]? = nil,
        cancellation: CancellationFlag? = nil
    ) throws -> [(entries: Int, refused: Bool)] {
        let trees = given ?? sorters.map { sorter in sorter.indexes.map { IndexTreeBuilder(file: file, root: $0.rootPage) } }
        precondition(trees.count == sorters.count && zip(trees, sorters).allSatisfy { $0.count == $1.indexes.count },
                     "a builder per index")
        let checksUnique = sorters.map { $0.indexes.contains(where: \.isUnique) }
        var refused = [Bool](repeating: false, count: sorters.count)
        var merged = 0
        // The trees of the collector whose records are coming (looked up once per collector,
        // not per record: the lookup's reference counting was a tenth of this loop).
        var current = -1
        var first: IndexTreeBuilder?
        var others: ArraySlice<IndexTreeBuilder> = []
        try IndexEntryPipeline(collectors: sorters).forEach { collector, record, repeatsValues in
            // A large table's indexes take a while (0.5 s for 2,000,000 rows): a cancellation
            // is seen within a few thousand entries, as the walk sees it within a page.
            merged &+= 1
            if merged & 0xFFF == 0, cancellation?.isCancelled == true { throw SalvageError.interrupted }
            if collector != current {
                current = collector
                first = trees[collector].first
                others = trees[collector].dropFirst()
            }
            if checksUnique[collector], repeatsValues { refused[collector] = true }
            try first?.append(record)
            for tree in others { try tree.append(record) }
        } collectorEnded: { collector in
            for tree in trees[collector] { try tree.finish() }
        }
        return trees.indices.map { (trees[$0].reduce(0) { $0 + $1.entries }, refused[$0]) }
    }
}
