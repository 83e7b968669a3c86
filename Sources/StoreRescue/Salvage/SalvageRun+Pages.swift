import Foundation

/// Passes 2–4: table trees from their roots, then every page no tree reached, then free pages.
extension SalvageRun {
    /// Walks each table's b-tree (roots named in the schema), in schema order.
    func walkTrees() throws {
        for index in tables.indices {
            guard let root = tables[index].rootPage, walkedRoots.insert(root).inserted else { continue }
            // A skipped table's tree is walked too: its pages (and overflow chains) are claimed, so
            // they are not taken for another table's orphans. A WITHOUT ROWID table has no table
            // tree: its rows are the cells of an index b-tree, read when the table is written.
            if tables[index].isWithoutRowid {
                // A root an index of the schema also names is damage: its entries are not rows.
                guard case .write = roles[index], !schemaEntries.contains(where: { $0.type == "index" && $0.rootPage == root }) else { continue }
                tallies[index].addPages(try walkIndexTree(root: root, owner: .table(index)))
                continue
            }
            tallies[index].addPages(try walkTree(root: root, owner: .table(index)))
        }
    }

    /// Pass 2's fast path: the tables whose rows may be written page by page are walked first,
    /// with SQLite's transaction ended; then the file's header is settled, SQLite takes over
    /// again, and the rows set aside go in through it.
    func walkTreesInBulk(file: String) throws {
        guard let output, !output.bulkTargets.isEmpty else { return }
        func bulkTarget(_ index: Int) -> Int? {
            guard case .write(let route) = roles[index], output.bulkTargets[route.target] != nil,
                tables[index].rootPage != nil, !tables[index].isWithoutRowid
            else { return nil }
            return route.target
        }
        let candidates = tables.indices.filter { bulkTarget($0) != nil }
        guard !candidates.isEmpty else { return }
        try output.pauseForBulkLoad(targets: candidates.compactMap(bulkTarget))
        // In the order the output asks for (the schema's among equals).
        let bulkTables = candidates.compactMap { index in bulkTarget(index).map { (index, output.loadRank(ofTarget: $0)) } }
            .enumerated().sorted { ($0.element.1, $0.offset) < ($1.element.1, $1.offset) }.map(\.element.0)
        let load = try SalvageBulkLoad(
            file: file, spillPath: file + "-set-aside", targets: output.bulkTargets, writer: output.writer, flush: flush,
            cancellation: cancellation)
        bulk = load
        defer { bulk = nil }
        for index in bulkTables {
            guard let root = tables[index].rootPage, walkedRoots.insert(root).inserted else { continue }
            tallies[index].addPages(try walkTree(root: root, owner: .table(index)))
            try load.endTable()
        }
        try load.finish()
        rowsCopiedPageByPage = load.rowsAppended
        indexEntriesBuiltPageByPage = load.indexEntriesWritten
        for target in output.bulkTargets.keys { output.writer.addLoadedRows(load.rowsAppended(to: target), target: target) }
        bulk = nil
        // Indexes the load could not build page by page are filled from the rows.
        for (target, indexes, refused) in load.indexesToRebuild {
            let dropped = try output.writer.rebuildIndexes(target: target, indexes: indexes, refused: refused)
            guard dropped > 0 || refused else { continue }
            // Every row of that table went back in through SQLite, every index entry with it.
            rowsCopiedPageByPage -= load.rowsAppended(to: target)
            indexEntriesBuiltPageByPage -= load.indexEntriesWritten(to: target)
            if let index = bulkTables.first(where: { if case .write(let route) = roles[$0] { return route.target == target } else { return false } }) {
                tallies[index].conflicts += dropped
            }
        }
        try pagesWritten?()
        try output.resumeAfterBulkLoad()
        try replaySetAside(load.spill)
    }

    /// Walks the table b-tree rooted at `root` depth-first, left to right (rows arrive in rowid
    /// order). A child is followed only when its number is in range, it is not already claimed
    /// (cycles, pages shared by two trees), it is a table page, and — for leaves — every rowid
    /// lies between the keys of the interior cells above it. What fails is left for the sweep.
    /// - Returns: the tree's page counts (rows are counted as they are delivered).
    func walkTree(root: UInt32, owner: RowOwner) throws -> TableTally {
        var tally = TableTally()
        var stack: [(page: UInt32, lower: Int64?, upper: Int64?, depth: Int)] = [(root, nil, nil, 0)]
        let usable = geometry.usableSize
        defer { endWalk() }
        var visits = 0
        while let item = stack.popLast() {
            try countVisit(&visits)
            guard let header = readTreePage(item.page, depth: item.depth, tally: &tally, accepting: \.isTable) else { continue }
            if header.kind == .tableInterior {
                let children = pageBuffer.withUnsafeBytes { Self.children(of: header, in: $0, lower: item.lower, upper: item.upper) }
                treePages.insert(item.page)
                pageKinds.tableInterior += 1
                tally.pagesRead += 1
                if children.damaged { tally.pagesDamaged += 1 }
                for child in children.list.reversed() {
                    stack.append((child.page, child.lower, child.upper, item.depth + 1))
                }
                continue
            }
            let inBounds = pageBuffer.withUnsafeBytes { bytes in
                (0..<header.cellCount).allSatisfy { index in
                    guard let offset = header.cellOffset(index, in: bytes), let cell = TableCell.leaf(in: bytes, at: offset, usableSize: usable) else {
                        return true  // an unreadable cell is counted when the page is read
                    }
                    return (item.lower.map { cell.rowid > $0 } ?? true) && (item.upper.map { cell.rowid <= $0 } ?? true)
                }
            }
            // Not this tree's leaf (a damaged pointer or root page number): the sweep decides.
            guard inBounds, leafFits(owner, header: header, page: item.page) else {
                if refusedFirst(item.page) { tally.pagesDamaged += 1 }
                continue
            }
            try readRows(ofTreePage: item.page, header: header, owner: owner, tally: &tally)
        }
        return tally
    }

    /// Walks a `WITHOUT ROWID` table's index b-tree from `root`, depth-first: every cell of every
    /// page, interior ones included, is a row (in key order). A page is followed once (claimed),
    /// when in range and an index page; what fails is counted, and its rows are not recovered
    /// (orphaned index pages are not matched to tables: Docs/SALVAGE.md, Limits).
    func walkIndexTree(root: UInt32, owner: RowOwner) throws -> TableTally {
        var tally = TableTally()
        var stack: [(page: UInt32, depth: Int)] = [(root, 0)]
        let usable = geometry.usableSize
        defer { endWalk() }
        var visits = 0
        while let item = stack.popLast() {
            try countVisit(&visits)
            guard let header = readTreePage(item.page, depth: item.depth, tally: &tally, accepting: { !$0.isTable }) else { continue }
            if header.kind == .indexInterior {
                let children: [UInt32] = pageBuffer.withUnsafeBytes { bytes in
                    (0..<header.cellCount).compactMap { index in
                        header.cellOffset(index, in: bytes).flatMap { TableCell.index(in: bytes, at: $0, usableSize: usable, isInterior: true)?.leftChild }
                    } + [header.rightChild]
                }
                for child in children.reversed() { stack.append((child, item.depth + 1)) }
            }
            try readRows(ofTreePage: item.page, header: header, owner: owner, tally: &tally)
        }
        return tally
    }

    /// Claims a page of `owner`'s tree that holds rows (a table leaf, any page of a `WITHOUT
    /// ROWID` table's index tree), counts it by kind, and delivers its rows.
    private func readRows(ofTreePage page: UInt32, header: BTreePageHeader, owner: RowOwner, tally: inout TableTally) throws {
        treePages.insert(page)
        switch header.kind {
        case .tableLeaf: pageKinds.tableLeaf += 1
        case .indexLeaf: pageKinds.indexLeaf += 1
        case .indexInterior: pageKinds.indexInterior += 1
        case .tableInterior: pageKinds.tableInterior += 1
        }
        tally.bySchema += 1
        if try processLeaf(page: page, header: header, owner: owner, provenance: .tree) {
            tally.pagesRead += 1
        } else {
            tally.pagesDamaged += 1
        }
    }

    /// Every 64 pages a walk visits: a chance to cancel, and progress.
    private func countVisit(_ visits: inout Int) throws {
        visits += 1
        guard visits % 64 == 0 else { return }
        try checkCancellation()
        reportProgress()
    }

    /// Reads a page a tree walk reached into `pageBuffer`: its b-tree header, or nil when the page
    /// is out of range, too deep, missing, already claimed, unreadable or of a kind the walk does
    /// not `accept` — counted in `tally` once per walk however many pointers lead to it. Pair with
    /// `endWalk`.
    private func readTreePage(
        _ page: UInt32, depth: Int, tally: inout TableTally, accepting accepts: (BTreePageHeader.Kind) -> Bool
    ) -> BTreePageHeader? {
        guard page >= 1, page <= source.pageCount, depth < 64 else {
            tally.pagesDamaged += 1
            return nil
        }
        guard page <= capacity else {
            tally.pagesMissing += 1
            return nil
        }
        guard !refusedInWalk.contains(page) else { return nil }
        guard !treePages.contains(page), !overflowPages.contains(page) else {
            if refusedFirst(page) { tally.pagesDamaged += 1 }
            return nil
        }
        guard source.read(page, into: &pageBuffer) else {
            if refusedFirst(page) {
                tally.pagesMissing += 1
                pageKinds.readFailures += 1
            }
            return nil
        }
        pagesProcessed += 1
        let header = pageBuffer.withUnsafeBytes { BTreePageHeader(page: $0, pageNumber: page, usableSize: geometry.usableSize) }
        guard let header, accepts(header.kind) else {
            if refusedFirst(page) {
                tally.pagesDamaged += 1
                if header == nil { _ = unreadableTreePages.insert(page) }
            }
            return nil
        }
        return header
    }

    /// Whether `page` is refused for the first time in this walk (then remembered until `endWalk`).
    private func refusedFirst(_ page: UInt32) -> Bool {
        guard refusedInWalk.insert(page) else { return false }
        refusedList.append(page)
        return true
    }

    /// Forgets the pages this walk refused: the next walk judges them afresh.
    private func endWalk() {
        for page in refusedList { refusedInWalk.remove(page) }
        refusedList.removeAll(keepingCapacity: true)
    }

    /// Whether the records of a leaf reached from `owner`'s root can be that tree's rows, judged
    /// on a few cells (first, middle, last): a pointer damaged into another tree's leaf fails, and
    /// the leaf is left for the sweep instead of being claimed by the wrong tree.
    private func leafFits(_ owner: RowOwner, header: BTreePageHeader, page: UInt32) -> Bool {
        guard header.cellCount > 0 else { return true }
        let usable = geometry.usableSize
        return pageBuffer.withUnsafeBytes { bytes in
            var judged = 0, fitting = 0
            for cellIndex in Set([0, header.cellCount / 2, header.cellCount - 1]) {
                guard let offset = header.cellOffset(cellIndex, in: bytes), let cell = TableCell.leaf(in: bytes, at: offset, usableSize: usable) else {
                    continue
                }
                let local = UnsafeRawBufferPointer(rebasing: bytes[cell.localStart..<cell.localStart + cell.localSize])
                guard RecordDecoder.decode(local, declaredSize: cell.payloadSize, into: &columns) != .malformed else { continue }
                judged += 1
                let second = columns.count > 1 && columns[1].isAvailable && columns[1].storageClass == .integer ? columns[1].integer(in: local) : nil
                let shape = ShapeMatcher.Shape(classes: columns.map(\.storageClass), secondInteger: second)
                let fits: Bool
                switch owner {
                case .table(let index): fits = matcher.score(shape, table: index, evidenced: true) != nil
                case .schema: fits = isSchemaRow(columns, local)
                case .bookkeeping(let table): fits = bookkeepingMatcher.tables.firstIndex { $0.name == table.rawValue }
                    .map { bookkeepingMatcher.score(shape, table: $0) != nil } ?? true
                case .lost: fits = true
                }
                if fits { fitting += 1 }
            }
            return judged == 0 || fitting * 2 > judged
        }
    }

    /// The children of an interior page with the rowid bounds each subtree must keep: child i
    /// holds keys in (key[i-1], key[i]], the right child keys above the last. Keys out of order
    /// or out of the page's own bounds make the bounds unusable: children then inherit the
    /// page's.
    static func children(
        of header: BTreePageHeader, in page: UnsafeRawBufferPointer, lower: Int64?, upper: Int64?
    ) -> (list: [(page: UInt32, lower: Int64?, upper: Int64?)], damaged: Bool) {
        var cells: [(child: UInt32, key: Int64)] = []
        var damaged = false
        for index in 0..<header.cellCount {
            guard let offset = header.cellOffset(index, in: page),
                let cell = TableCell.interior(in: page, at: offset, usableSize: header.usableSize)
            else {
                damaged = true
                continue
            }
            cells.append((cell.leftChild, cell.key))
        }
        let keys = cells.map(\.key)
        let ordered = zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }
            && (keys.first.map { key in lower.map { key > $0 } ?? true } ?? true)
            && (keys.last.map { key in upper.map { key <= $0 } ?? true } ?? true)
        if !ordered { damaged = true }
        var list: [(page: UInt32, lower: Int64?, upper: Int64?)] = []
        var previous = lower
        for cell in cells {
            list.append(ordered ? (cell.child, previous, cell.key) : (cell.child, lower, upper))
            previous = cell.key
        }
        list.append(ordered ? (header.rightChild, previous, upper) : (header.rightChild, lower, upper))
        return (list, damaged)
    }

    /// Pass 3: every page no tree claimed, in file order. Table leaves are orphans: rows still
    /// recovered, their table named by the pointer map or their shape.
    func sweepUnclaimedPages() throws {
        for page in UInt32(1)...capacity {
            if page % 64 == 0 {
                try checkCancellation()
                reportProgress()
            }
            guard !treePages.contains(page), !overflowPages.contains(page), !freeTrunks.contains(page), !freeLeaves.contains(page) else {
                continue
            }
            if pointerMap?.isMapPage(page) == true || page == pointerMap?.lockBytePage { continue }
            guard let header = try readUnclaimed(page) else { continue }
            // A free page the freelist did not list (its chain broken, or the header gone): the
            // pointer map still says so. Its rows are deleted ones, never mixed into live tables,
            // even when the map is what is damaged (Docs/SALVAGE.md, Limits).
            if header.kind == .tableLeaf, let entry = pointerMap?.entry(for: page, source: source), entry.type == .freePage {
                _ = freeLeaves.insert(page)
                continue
            }
            try sweep(page: page, header: header)
        }
    }

    /// Reads an unclaimed page into `pageBuffer`: its b-tree header, or nil (a read failure, a
    /// zeroed page or one of unknown kind, each counted once).
    private func readUnclaimed(_ page: UInt32) throws -> BTreePageHeader? {
        guard source.read(page, into: &pageBuffer) else {
            pageKinds.readFailures += 1
            return nil
        }
        pagesProcessed += 1
        let header = pageBuffer.withUnsafeBytes { bytes -> BTreePageHeader? in
            BTreePageHeader(page: bytes, pageNumber: page, usableSize: geometry.usableSize)
        }
        if header == nil {
            if pageBuffer.withUnsafeBytes({ $0.isZero(in: 0..<$0.count) }) { zeroedPages.insert(page) } else { unknownPages.insert(page) }
        }
        return header
    }

    /// Counts an unclaimed b-tree page by kind; a table leaf's rows are recovered as an orphan's.
    private func sweep(page: UInt32, header: BTreePageHeader) throws {
        switch header.kind {
        case .indexLeaf: pageKinds.indexLeaf += 1
        case .indexInterior: pageKinds.indexInterior += 1
        case .tableInterior: pageKinds.tableInterior += 1
        case .tableLeaf:
            pageKinds.tableLeaf += 1
            try recoverOrphan(page: page, header: header)
        }
    }

    private func recoverOrphan(page: UInt32, header: BTreePageHeader) throws {
        let root = pointerMap?.root(of: page, source: source)
        if root == 1 { return }  // a schema page: read in pass 1
        let shapes = recordShapes(header: header, page: page).shapes
        let preferred = root.flatMap { root in tables.firstIndex { $0.rootPage == root } }
        // A root page no known table has: the page is another table's — one whose root is not
        // known (a table known from the layout only), never one whose root is elsewhere.
        let candidates = root != nil && preferred == nil ? Set(tables.indices.filter { tables[$0].rootPage == nil }) : nil
        var identified: Int?
        if preferred == nil, let sequence = sequenceLeafOwner, isSequenceLeaf(header: header, page: page, naming: sequence.tables) {
            identified = sequence.index
        } else {
            identified = matcher.identify(shapes, preferred: preferred, among: candidates)
        }
        if identified == nil, matcher.isStrict, preferred != nil || candidates != nil {
            // Core Data mode writes no lost and found, and `Z_ENT` names a record's entity: a page
            // that fits neither the table the damaged schema gives its root nor a table of unknown
            // root (a root number swapped or aimed at an index) is still the table its records
            // fit — without this, every row of such a table was lost.
            identified = matcher.identify(shapes)
        }
        guard let index = identified else {
            let complete = try processLeaf(page: page, header: header, owner: .lost(root: root), provenance: .orphan)
            if !complete { pagesDamagedOutsideTables += 1 }
            return
        }
        if index == preferred { tallies[index].byPointerMap += 1 } else { tallies[index].byShape += 1 }
        if try processLeaf(page: page, header: header, owner: .table(index), provenance: .orphan) {
            tallies[index].pagesRead += 1
        } else {
            tallies[index].pagesDamaged += 1
        }
    }

    /// Whether the orphan leaf in `pageBuffer` is `sqlite_sequence`'s: records of two values whose
    /// first is a text naming one of `tables` (the `AUTOINCREMENT` tables), each name counted
    /// once, are most of its cells. A record that does not fit (a damaged name, a table the
    /// schema lost, a second row for a name `INSERT OR REPLACE` left) does not refuse the leaf;
    /// a change log of (table name, rowid) rows names a few tables many times and is never taken.
    /// When `sqlite_sequence`'s interior root is lost, its leaves are orphans; by shape alone
    /// they went to a user table of two columns (text, integer), as rows it never had, and the
    /// counters were lost. A user table's leaf that looks so (one row per `AUTOINCREMENT` table)
    /// loses nothing: the rows of a leaf taken here are kept in lost and found too (`deliver`),
    /// and its values can only raise counters.
    private func isSequenceLeaf(header: BTreePageHeader, page: UInt32, naming tables: Set<String>) -> Bool {
        guard header.cellCount > 0 else { return false }
        let usable = geometry.usableSize
        let encoding = geometry.textEncoding
        return pageBuffer.withUnsafeBytes { bytes in
            var names: Set<String> = []
            for cellIndex in 0..<header.cellCount {
                guard let offset = header.cellOffset(cellIndex, in: bytes), let cell = TableCell.leaf(in: bytes, at: offset, usableSize: usable),
                      cell.localSize == cell.payloadSize
                else { continue }
                let local = UnsafeRawBufferPointer(rebasing: bytes[cell.localStart..<cell.localStart + cell.localSize])
                guard RecordDecoder.decode(local, declaredSize: cell.payloadSize, into: &columns) != .malformed, columns.count == 2,
                      columns[0].isAvailable, columns[0].storageClass == .text
                else { continue }
                let name = encoding.string(from: columns[0].bytes(in: local))
                if tables.contains(name) { names.insert(name) }
            }
            return names.count * 2 > header.cellCount
        }
    }

    /// Pass 4: free leaf pages that still hold a table leaf: deleted rows (or stale copies). The
    /// main file's pages past the last WAL commit's end, freed by it, are read the same way.
    func readFreePages() throws {
        if freeLeaves.count > 0, capacity >= 2 {
            for page in UInt32(2)...capacity where freeLeaves.contains(page) && !treePages.contains(page) {
                if page % 64 == 0 { try checkCancellation() }
                guard source.read(page, into: &pageBuffer) else {
                    pageKinds.readFailures += 1
                    continue
                }
                pagesProcessed += 1
                try readFreePage(page)
            }
        }
        guard let freed = source.pagesPastCommit else { return }
        for page in freed {
            if page % 64 == 0 { try checkCancellation() }
            if source.readPastCommit(page, into: &pageBuffer) { try readFreePage(page) }
        }
    }

    /// The rows of the free page in `pageBuffer`, when it holds a table leaf.
    private func readFreePage(_ page: UInt32) throws {
        let header = pageBuffer.withUnsafeBytes { BTreePageHeader(page: $0, pageNumber: page, usableSize: geometry.usableSize) }
        guard let header, header.kind == .tableLeaf else { return }
        let shapes = recordShapes(header: header, page: page).shapes
        let owner: RowOwner = matcher.identify(shapes).map { .table($0) } ?? .lost(root: nil)
        _ = try processLeaf(page: page, header: header, owner: owner, provenance: .free)
    }
}
