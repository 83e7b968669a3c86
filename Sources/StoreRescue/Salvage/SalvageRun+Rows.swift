import Foundation

/// Who a leaf page's rows belong to.
enum RowOwner {
    case table(Int)
    /// No known table; `root` is the pointer map's root page for the leaf, when it has one.
    case lost(root: UInt32?)
    case schema
    case bookkeeping(BookkeepingRows.Table)
}

/// How a leaf page was reached, which decides what its rows may become.
enum RowProvenance {
    /// From its table's root: these rows win.
    case tree
    /// A leaf no intact tree reaches: still live data, inserted unless the rowid is already there.
    case orphan
    /// A free page: deleted rows, or stale copies of live ones; never mixed into live tables.
    case free
}

/// Decoding the cells of one leaf page and sending each row where it belongs.
extension SalvageRun {
    /// Decodes every cell of the table leaf (or `WITHOUT ROWID` table's index page) in
    /// `pageBuffer` and delivers its row. Returns false when some cell could not be decoded.
    func processLeaf(page: UInt32, header: BTreePageHeader, owner: RowOwner, provenance: RowProvenance) throws -> Bool {
        // A WITHOUT ROWID table's rows are the cells of its index b-tree pages, interior ones too.
        // One specialisation per kind of cell: a branch per cell cost 0.6% of a plain salvage.
        switch header.kind {
        case .indexLeaf: return try processCells(page: page, header: header, owner: owner, provenance: provenance, IndexCells(isInterior: false))
        case .indexInterior: return try processCells(page: page, header: header, owner: owner, provenance: provenance, IndexCells(isInterior: true))
        case .tableLeaf, .tableInterior: return try processCells(page: page, header: header, owner: owner, provenance: provenance, TableLeafCells())
        }
    }

    private func processCells<Cells: CellReader>(
        page: UInt32, header: BTreePageHeader, owner: RowOwner, provenance: RowProvenance, _ cells: Cells
    ) throws -> Bool {
        let usable = geometry.usableSize
        var complete = true
        let route = self.route(of: owner)
        var budget = CellBudget(usableSize: usable)
        try pageBuffer.withUnsafeBytes { bytes in
            for index in 0..<header.cellCount {
                guard budget.hasRoom, let offset = header.cellOffset(index, in: bytes),
                    let cell = cells.cell(in: bytes, at: offset, usableSize: usable)
                else {
                    countUnreadable(owner)
                    complete = false
                    continue
                }
                if cell.firstOverflowPage == nil {
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[cell.localStart..<cell.localStart + cell.localSize])
                    let decoded = RecordDecoder.decode(payload, declaredSize: cell.payloadSize, into: &columns)
                    budget.charge(cell, payload: payload, isRecord: decoded != .malformed)
                    if try !deliver(
                        decoded, rowid: cell.rowid, payload: payload, declaredSize: cell.payloadSize, page: page, owner: owner, route: route,
                        provenance: provenance)
                    {
                        complete = false
                    }
                    continue
                }
                let chain = chainReader.read(cell: cell, page: bytes, source: source, claimed: &overflowPages, forbidden: treePages)
                if chain == .tooLarge {
                    countUnreadable(owner)
                    noteOnce("rows larger than \(options.maximumPayloadBytes) bytes are not read (memory bound); they count as unreadable")
                    complete = false
                    continue
                }
                let delivered = try chainReader.payload.withUnsafeBytes { payload in
                    let decoded = RecordDecoder.decode(payload, declaredSize: cell.payloadSize, into: &columns)
                    budget.charge(cell, payload: payload, isRecord: decoded != .malformed)
                    return try deliver(
                        decoded, rowid: cell.rowid, payload: payload, declaredSize: cell.payloadSize, page: page, owner: owner, route: route,
                        provenance: provenance)
                }
                if !delivered { complete = false }
            }
        }
        return complete
    }

    /// The route of `owner`'s rows when its table's are written (`TableRole.write`): looked up
    /// once per page, not copied out of `roles` for every row.
    private func route(of owner: RowOwner) -> RowRoute? {
        guard case .table(let index) = owner, case .write(let route) = roles[index] else { return nil }
        return route
    }

    /// Sends one decoded row where `owner` (with `route`, its table's route when written) and
    /// `provenance` say; false when it was unreadable.
    private func deliver(
        _ decoded: RecordDecoder.Outcome, rowid: Int64, payload: UnsafeRawBufferPointer, declaredSize: Int, page: UInt32, owner: RowOwner,
        route: RowRoute?, provenance: RowProvenance
    ) throws -> Bool {
        if decoded == .malformed {
            countUnreadable(owner)
            return false
        }
        let isPartial = decoded != .complete
        switch (owner, provenance) {
        case (.schema, _):
            addSchemaRow(columns, payload)
        case (.bookkeeping(let table), _):
            bookkeeping.add(table, rowid: rowid, record: columns, payload: payload, encoding: geometry.textEncoding)
        case (.table(let index), .tree) where bulk != nil:
            // Pass 2's fast path (SQLite is away from the file): written page by page, or set
            // aside whole — and counted when it goes in through SQLite, as any other row.
            guard let bulk else { break }
            let offer: SalvageBulkLoad.Offer
            if let route {
                offer = try bulk.offer(route: route, rowid: rowid, record: columns, payload: payload, isComplete: !isPartial)
            } else {
                offer = .setAside  // only tables written by route are walked in bulk; anything else goes the usual way
            }
            switch offer {
            case .appended:
                tallies[index].rowsRead += 1
            case .notFitting:
                tallies[index].rowsRead += 1
                tallies[index].rowsNotFitting += 1
            case .setAside:
                try bulk.spill.add(table: index, page: page, rowid: rowid, declaredSize: declaredSize, payload: payload)
            }
        case (.table(let index), .tree), (.table(let index), .orphan):
            tallies[index].rowsRead += 1
            if let route {
                // More values than the table has columns (its schema text is damaged): never drop
                // the extra values — the whole row goes to lost and found (plain mode).
                guard columns.count <= tables[index].columns.count else {
                    tallies[index].rowsNotFitting += 1
                    if let lostRoute = try output?.lostRoute(columnCount: columns.count) {
                        _ = try write(lostRoute, rowid: rowid, payload: payload, context: .init(pageNumber: page, rootPage: tables[index].rootPage))
                    }
                    return true
                }
                let context = SalvageRowWriter.Context(pageNumber: page, rootPage: tables[index].rootPage)
                let outcome = try write(route, rowid: rowid, payload: payload, context: context)
                switch outcome {
                case .inserted: if isPartial { tallies[index].rowsPartial += 1 }
                case .duplicate where try keepApart(route: route, rowid: rowid, payload: payload, context: context):
                    break
                case .duplicate: tallies[index].duplicates += 1
                case .conflict: tallies[index].conflicts += 1
                case .notFitting: tallies[index].rowsNotFitting += 1
                }
            } else if case .collect(let table) = roles[index] {
                bookkeeping.add(
                    table, rowid: rowid, record: columns, payload: payload, encoding: geometry.textEncoding, fromOrphanLeaf: provenance == .orphan)
                // An orphan leaf taken as `sqlite_sequence`'s by the names its rows hold
                // (`isSequenceLeaf`): its rows are kept in lost and found too, so that a user
                // table's leaf that looks so loses nothing.
                if table == .sequence, provenance == .orphan, let route = try output?.lostRoute(columnCount: columns.count) {
                    lost.rows += 1
                    _ = try write(route, rowid: rowid, payload: payload, context: .init(pageNumber: page, rootPage: nil))
                }
            }
        case (.lost(let root), .tree), (.lost(let root), .orphan):
            lost.rows += 1
            if let route = try output?.lostRoute(columnCount: columns.count) {
                _ = try write(route, rowid: rowid, payload: payload, context: .init(pageNumber: page, rootPage: root))
            }
        case (.table(let index), .free):
            if let route, try output?.writer.contains(rowid: rowid, target: route.target) == true {
                tallies[index].duplicates += 1
                return true
            }
            tallies[index].rowsDeleted += 1
            if let route = try output?.deletedRoute(columnCount: columns.count) {
                _ = try write(route, rowid: rowid, payload: payload, context: .init(pageNumber: page, likelyTable: tables[index].name))
            }
        case (.lost, .free):
            lost.deleted += 1
            if let route = try output?.deletedRoute(columnCount: columns.count) {
                _ = try write(route, rowid: rowid, payload: payload, context: .init(pageNumber: page))
            }
        }
        return true
    }

    /// A row whose rowid its table already holds with other values is not a second copy of that
    /// row: an orphan matched by its pointer-map entry or its shape may be another table's (an
    /// older, shorter table's rows fit a table of their shape), a tree's may be an older version.
    /// It goes to lost and found rather than nowhere (plain mode; Core Data mode writes no lost
    /// and found, and `Z_ENT` names a record's entity). True when it was kept there.
    private func keepApart(route: RowRoute, rowid: Int64, payload: UnsafeRawBufferPointer, context: SalvageRowWriter.Context) throws -> Bool {
        guard !matcher.isStrict, let output,
            try !output.writer.holdsSameRow(route: route, rowid: rowid, record: columns, payload: payload, context: context),
            let lostRoute = try output.lostRoute(columnCount: columns.count)
        else { return false }
        lost.rows += 1
        rowsKeptApart += 1
        _ = try write(lostRoute, rowid: rowid, payload: payload, context: context)
        return true
    }

    /// The note that says how many rows `keepApart` kept in lost and found.
    var keptApartNote: [String] {
        rowsKeptApart == 0 ? [] : ["\(rowsKeptApart) rows whose rowid their table already held with other values were kept in lost and found"]
    }

    /// Rows set aside by the fast path, delivered through SQLite in the order they were read.
    func replaySetAside(_ spill: RowSpill) throws {
        try spill.replay { table, page, rowid, declaredSize, payload in
            let decoded = RecordDecoder.decode(payload, declaredSize: declaredSize, into: &columns)
            _ = try deliver(
                decoded, rowid: rowid, payload: payload, declaredSize: declaredSize, page: page, owner: .table(table), route: route(of: .table(table)),
                provenance: .tree)
        }
    }

    private func write(_ route: RowRoute, rowid: Int64, payload: UnsafeRawBufferPointer, context: SalvageRowWriter.Context) throws -> SalvageRowWriter.Outcome {
        guard let writer = output?.writer else { return .notFitting }
        return try writer.insert(route: route, rowid: rowid, record: columns, payload: payload, context: context)
    }

    private func countUnreadable(_ owner: RowOwner) {
        switch owner {
        case .table(let index): tallies[index].rowsUnreadable += 1
        case .lost: lost.unreadable += 1
        case .schema, .bookkeeping: break
        }
    }

    func noteOnce(_ note: String) {
        if !notes.contains(note) { notes.append(note) }
    }
}

/// How a page's cells are read: a table leaf's, or an index page's (whose record is the row).
protocol CellReader {
    func cell(in page: UnsafeRawBufferPointer, at offset: Int, usableSize: Int) -> TableCell.Leaf?
}

struct TableLeafCells: CellReader {
    @inline(__always) func cell(in page: UnsafeRawBufferPointer, at offset: Int, usableSize: Int) -> TableCell.Leaf? {
        TableCell.leaf(in: page, at: offset, usableSize: usableSize)
    }
}

struct IndexCells: CellReader {
    var isInterior: Bool
    @inline(__always) func cell(in page: UnsafeRawBufferPointer, at offset: Int, usableSize: Int) -> TableCell.Leaf? {
        TableCell.index(in: page, at: offset, usableSize: usableSize, isInterior: isInterior)?.cell
    }
}
