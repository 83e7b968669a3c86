import Foundation

/// One salvage in progress: the damaged store's pages, what has been learned about each, and the
/// new database being filled. `Salvager` is its public face.
///
/// The passes, in order:
/// 1. **Schema**: `sqlite_schema` from page 1's tree; when that is broken, schema rows are looked
///    for on every leaf page (and, in Core Data mode, Core Data's own metadata rows, to tell the
///    version).
/// 2. **Trees**: every table's b-tree from its root page, rowid bounds checked at every level, so
///    a damaged interior pointer cannot hand one table's leaf to another; these rows go in first.
///    Tables whose records copy as they are come first, written page by page while SQLite is
///    away from the file (`SalvageBulkLoad`); the rows that path sets aside, and other tables,
///    go through SQLite.
/// 3. **Sweep**: every page no tree reached, in file order: table leaves are orphans, named by the
///    pointer map or by their records' shape; their rows go in unless the rowid is already there.
/// 4. **Free pages**: leaves on the freelist hold deleted rows; a rowid still live is a stale copy
///    (a duplicate), the rest are "deleted, recoverable" — reported, never mixed into live tables.
/// 5. **Finish**: fix-ups, counts, checks; the file is published by the caller.
///
/// Memory: a few page buffers, one record (bounded by `maximumPayloadBytes`), five bitmaps of one
/// bit per page, the WAL's page index, and SQLite's page cache for the output.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class SalvageRun {
    let storePath: String
    let outputPath: String
    let options: SalvageOptions
    let progress: ((SalvageProgress) -> Void)?
    let cancellation: CancellationFlag?

    let source: PageSource
    var geometry: DatabaseGeometry { source.geometry }
    /// Pages that can be read (bitmaps cover these).
    let capacity: UInt32

    // What is known about each page.
    @exclusivity(unchecked) var treePages: PageBitmap
    @exclusivity(unchecked) var overflowPages: PageBitmap
    var freeTrunks: PageBitmap
    var freeLeaves: PageBitmap
    var zeroedPages: PageBitmap
    var unknownPages: PageBitmap
    /// Pages a tree led to that are no b-tree page (zeroed, garbage): counted as the tree's
    /// damage, so the file's damage does not count them again as zeroed or unknown.
    var unreadableTreePages: PageBitmap
    var pointerMap: PointerMap?
    /// Pages the tree being walked has refused (not its leaf, not a table page, unreadable, or
    /// already claimed), each counted once: many pointers to one such page (damage, or a file
    /// built to make every cell of many interior pages point at one 64 KiB leaf) cost one read,
    /// not one each. A leaf refused under one pointer's bounds is not judged again under
    /// another's: the sweep takes it, and its pointer-map root or its records name its table.
    /// Cleared after each walk through `refusedList`.
    @exclusivity(unchecked) var refusedInWalk: PageBitmap
    @exclusivity(unchecked) var refusedList: [UInt32] = []
    @exclusivity(unchecked) var pageKinds = SalvageRun.PageKindTally()
    var pagesDamagedOutsideTables = 0

    // Reusable buffers.
    @exclusivity(unchecked) var pageBuffer: [UInt8] = []
    @exclusivity(unchecked) var columns: [RecordColumn] = []
    @exclusivity(unchecked) var chainReader: OverflowChainReader

    // What was found.
    var schemaEntries: [SchemaEntry] = []
    var schemaKeys: Set<String> = []
    /// Core Data mode: the version rebuilt, and how it was chosen.
    var resolvedVersion: (name: String, source: String)?
    var schemaFromTree = false
    @exclusivity(unchecked) var tables: [TableDefinition] = []
    @exclusivity(unchecked) var roles: [TableRole] = []
    @exclusivity(unchecked) var tallies: [TableTally] = []
    var walkedRoots: Set<UInt32> = []
    /// Core Data mode: the page counts of the bookkeeping trees, read before the version is known.
    var bookkeepingPages: [Int: TableTally] = [:]
    var matcher = ShapeMatcher(tables: [], isStrict: false)
    /// `sqlite_sequence`'s index in `tables` and the names of the `AUTOINCREMENT` tables, when the
    /// schema has both: an orphan leaf whose rows name those tables is `sqlite_sequence`'s
    /// (`isSequenceLeaf`), which claims no page by shape alone.
    var sequenceLeafOwner: (index: Int, tables: Set<String>)?
    /// Core Data's own tables, as `create` writes them: what their rows look like.
    lazy var bookkeepingMatcher = ShapeMatcher(tables: (try? Self.bookkeepingDefinitions()) ?? [], isStrict: true)
    var lost = LostTally()
    /// Rows whose rowid their table already held with other values, kept in lost and found.
    var rowsKeptApart = 0
    var bookkeeping = BookkeepingRows()
    var notes: [String] = []
    var output: (any SalvageOutput)?
    /// Pass 2's fast path while it runs (`walkTreesInBulk`), and the rows it wrote.
    var bulk: SalvageBulkLoad?
    var rowsCopiedPageByPage = 0
    var indexEntriesBuiltPageByPage = 0
    var pagesProcessed = 0
    /// Read from the output before it is closed: values fixed per output table (writer target).
    var valuesFixed: [Int: Int] = [:]
    var looseTableNames: [String] = []
    /// Called once the bulk load's pages are all in the new file, before SQLite writes again
    /// (tests: `Salvager.Stage.pagesWritten`).
    var pagesWritten: (() throws -> Void)?
    /// Flushes the new file to the disk on a thread of its own as it is written (`Salvager`
    /// waits for it before its `fsync`); nil: that `fsync` does it all.
    var flush: BackgroundFlush?

    init(store: String, output: String, options: SalvageOptions, progress: ((SalvageProgress) -> Void)?, cancellation: CancellationFlag?) throws {
        storePath = store
        outputPath = output
        self.options = options
        self.progress = progress
        self.cancellation = cancellation
        // A link followed is read as its target, with the target's -wal (as SQLite would).
        let file = options.followsSymlinks ? InputProbe.followingSymlink(at: store) : store
        source = try PageSource(path: file, followsSymlinks: options.followsSymlinks)
        capacity = source.availablePages
        treePages = PageBitmap(capacity: capacity)
        overflowPages = PageBitmap(capacity: capacity)
        freeTrunks = PageBitmap(capacity: capacity)
        freeLeaves = PageBitmap(capacity: capacity)
        zeroedPages = PageBitmap(capacity: capacity)
        unknownPages = PageBitmap(capacity: capacity)
        unreadableTreePages = PageBitmap(capacity: capacity)
        refusedInWalk = PageBitmap(capacity: capacity)
        chainReader = OverflowChainReader(maximumPayloadBytes: options.maximumPayloadBytes)
        notes = source.geometry.notes
    }

    /// Counts of the pages the passes read, by kind.
    struct PageKindTally {
        var tableLeaf = 0, tableInterior = 0, indexLeaf = 0, indexInterior = 0
        var readFailures = 0
    }

    /// Per recovered table: what its rows and pages came to.
    struct TableTally {
        var rowsRead = 0, rowsPartial = 0, rowsUnreadable = 0, rowsNotFitting = 0, rowsDeleted = 0
        var duplicates = 0, conflicts = 0
        var pagesRead = 0, pagesDamaged = 0, pagesMissing = 0
        var bySchema = 0, byPointerMap = 0, byShape = 0

        mutating func addPages(_ other: TableTally) {
            pagesRead += other.pagesRead
            pagesDamaged += other.pagesDamaged
            pagesMissing += other.pagesMissing
            bySchema += other.bySchema
        }
    }

    /// Rows whose table could not be told.
    struct LostTally {
        var rows = 0, unreadable = 0, deleted = 0
    }

    /// One row of `sqlite_schema`.
    struct SchemaEntry: Equatable {
        var type: String
        var name: String
        var tableName: String
        var rootPage: UInt32
        var sql: String?
    }

    func checkCancellation() throws {
        if cancellation?.isCancelled == true { throw SalvageError.interrupted }
    }

    func reportProgress(_ phase: SalvageProgress.Phase = .read) {
        progress?(SalvageProgress(phase: phase, completedPages: pagesProcessed, totalPages: Int(capacity)))
    }

    /// Why the store holds nothing to salvage (no whole page; no page that reads as an SQLite
    /// page, and no `-wal`), or nil.
    var nothingToSalvage: String? {
        if capacity == 0 { return "it holds no whole \(geometry.pageSize)-byte page" }
        if geometry.hasNoRecognisablePage && source.writeAheadLog == nil { return "no page of it reads as an SQLite page" }
        return nil
    }

    /// Reads the store and fills a new database at `file` (a path in a private folder).
    func run(into file: String) throws -> SalvageOutputSummary {
        if let reason = nothingToSalvage { throw SalvageError.nothingToSalvage(path: storePath, reason: reason) }
        readFreelist()
        locatePointerMap()
        try readSchema()
        let isCoreData = options.catalog != nil
        try defineTables(coreData: isCoreData)
        if let catalog = options.catalog {
            output = try makeCoreDataOutput(catalog: catalog, file: file)
        } else {
            output = try PlainSalvageOutput(path: file, geometry: geometry, cancellation: cancellation)
        }
        guard let output else { preconditionFailure("the output is made above") }
        output.flush = flush
        let summary: SalvageOutputSummary
        do {
            try assignRoles()
            try walkTreesInBulk(file: file)
            try walkTrees()
            try sweepUnclaimedPages()
            try readFreePages()
            reportProgress(.finish)
            summary = try output.finish(bookkeeping: bookkeeping)
        } catch {
            // Nothing of the output's may go on beside the file once the salvage has failed:
            // the caller removes it.
            let failure = output.abandon(after: error)
            // SQLite's work stopped by the cancellation (the outputs' progress handler) is the
            // interruption, not a write failure.
            if (failure as? SQLiteError)?.isInterrupt == true, cancellation?.isCancelled == true { throw SalvageError.interrupted }
            throw failure
        }
        valuesFixed = output.writer.valuesFixed
        looseTableNames = output.looseTables
        self.output = nil  // closes the database: WAL checkpointed, -wal and -shm removed
        return summary
    }
}
