import Foundation

/// Appends pages to the end of the new database a salvage is building — a private file SQLite
/// made (its schema, its empty tables) and has no transaction open on — and, at the end, makes
/// the header say so, so SQLite reads the file as one it wrote itself.
///
/// Why not through SQLite: inserting row by row costs SQLite a b-tree search, a cell insert and,
/// now and then, a page split per row, most of the salvage's time; rows recovered from a tree
/// arrive in rowid order, so their pages can be written once each, in order, the way a bulk
/// loader does (`TableTreeBuilder`). The pages follow the file format (§1.5–1.6) exactly and the
/// finished file is checked by SQLite (`quick_check`) before it is published.
///
/// Pages are numbered from the file's page count on, skipping the lock-byte page (offset 2^30,
/// never used) and, in an auto-vacuum database (every Core Data store), the pointer-map pages;
/// every page written gets its pointer-map entry (`setPointerMapEntry`). Pointer-map pages are
/// kept in a small cache and written back when evicted and at `finish`.
///
/// Header: `finish` writes the page count (offset 28), increments the file change counter (24)
/// and sets the version-valid-for number (92) to it — the change SQLite looks for to drop the
/// pages it cached before: its next transaction reads the file afresh.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class PageAppender {
    let path: String
    let pageSize: Int
    let usableSize: Int
    let hasPointerMap: Bool
    /// The schema format number (header offset 44): 4 lets records hold 0 and 1 as serial
    /// types 8 and 9.
    let schemaFormat: UInt32
    /// Pages in the file, including those appended so far.
    @exclusivity(unchecked) private(set) var pageCount: UInt32
    /// Pages appended (b-tree and overflow pages; not pointer-map pages).
    @exclusivity(unchecked) private(set) var pagesWritten = 0
    private let descriptor: Int32
    private let pointerMap: PointerMap
    @exclusivity(unchecked) private var mapCache: [(page: UInt32, bytes: [UInt8], dirty: Bool)] = []
    private static let cachedMapPages = 8
    @exclusivity(unchecked) private var isFinished = false
    /// Pages go to the file in runs, written on a thread of their own (`WriteBehind`); every
    /// 8 MiB the kernel is asked to start flushing (`Writeback`), so the final `fsync` has less
    /// to wait for.
    private let writer: WriteBehind
    /// Pages the file had before the first append: a pointer-map page above them that was never
    /// written back holds zeros, and is not read.
    private let initialPageCount: UInt32
    private var mapPagesWrittenBack: Set<UInt32> = []

    /// Flushes the file to the disk every 8 MiB written and once it is complete (`BackgroundFlush`).
    private let flush: BackgroundFlush?

    /// Opens the database at `path` (not through a symbolic link) and reads its header; `flush`
    /// is asked to flush the file every 8 MiB written and once `finish` has written the header.
    ///
    /// - Throws: `SalvageError.writeFailed` when the file cannot be opened or its header is not
    ///   one SQLite wrote (it is the salvage's own file, so this is a failure, not damage).
    init(path: String, flush: BackgroundFlush? = nil) throws {
        self.path = path
        self.flush = flush
        let descriptor = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw SalvageError.writing(path, code: errno) }
        self.descriptor = descriptor
        var header = [UInt8](repeating: 0, count: SQLiteFileHeader.size)
        var info = stat()
        guard FileReading.read(descriptor, into: &header, at: 0) == header.count, fstat(descriptor, &info) == 0 else {
            close(descriptor)
            throw SalvageError.writeFailed(path: path, reason: "the new database has no header to extend")
        }
        let (size, reserved, autoVacuum, format) = header.withUnsafeBytes { raw in
            (raw.bigEndianUInt16(at: 16), Int(raw[20]), raw.bigEndianUInt32(at: 52), raw.bigEndianUInt32(at: 44))
        }
        schemaFormat = format
        pageSize = size == 1 ? 65_536 : size
        usableSize = pageSize - reserved
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0, usableSize >= 480,
            info.st_size > 0, Int64(info.st_size) % Int64(pageSize) == 0, Int64(info.st_size) / Int64(pageSize) < Int64(UInt32.max / 2)
        else {
            close(descriptor)
            throw SalvageError.writeFailed(path: path, reason: "the new database's header does not match its size")
        }
        pageCount = UInt32(Int64(info.st_size) / Int64(pageSize))
        initialPageCount = pageCount
        hasPointerMap = autoVacuum != 0
        pointerMap = PointerMap(usableSize: usableSize, pageSize: pageSize, pageCount: .max)
        var onWriteback: (@Sendable () -> Void)?
        if let flush { onWriteback = { flush.request() } }
        writer = WriteBehind(descriptor: descriptor, onWriteback: onWriteback)
    }

    deinit {
        writer.stop()
        close(descriptor)
    }

    /// The next free page number (the page is the caller's to write; it counts from now on).
    func allocate() -> UInt32 {
        var page = pageCount + 1
        while page == pointerMap.lockBytePage || (hasPointerMap && pointerMap.isMapPage(page)) { page += 1 }
        pageCount = page
        return page
    }

    /// Writes one whole page (`pageSize` bytes) at `number`, an allocated page or a table's root.
    func write(_ page: UnsafeRawBufferPointer, at number: UInt32) throws {
        precondition(page.count == pageSize && number >= 2 && number <= pageCount, "a whole page at a page of this file")
        try writeBytes(page, at: Int64(number - 1) * Int64(pageSize))
        pagesWritten += 1
    }

    /// Records what `page` is and which page points to it (file format §1.8); nothing in a
    /// database without pointer maps.
    func setPointerMapEntry(_ page: UInt32, type: PointerMap.EntryType, parent: UInt32) throws {
        guard hasPointerMap else { return }
        let map = pointerMap.mapPage(for: page)
        precondition(map >= 2 && map < page, "a page a pointer map covers")
        let slot = try mapSlot(map)
        let offset = 5 * Int(page - map - 1)
        mapCache[slot].bytes.withUnsafeMutableBytes { map in
            map[offset] = type.rawValue
            map.storeBigEndianUInt32(parent, at: offset + 1)
        }
        mapCache[slot].dirty = true
    }

    /// The cache slot holding pointer-map page `map`, read from the file (or zeros past its end).
    private func mapSlot(_ map: UInt32) throws -> Int {
        if let slot = mapCache.firstIndex(where: { $0.page == map }) { return slot }
        if mapCache.count >= Self.cachedMapPages {
            try writeBack(mapCache[0])
            mapCache.removeFirst()
        }
        var bytes = [UInt8](repeating: 0, count: pageSize)
        if mapPagesWrittenBack.contains(map) {
            try drain()  // its last version may still be on its way to the file
        }
        if map <= initialPageCount || mapPagesWrittenBack.contains(map) {
            let read = FileReading.read(descriptor, into: &bytes, at: Int64(map - 1) * Int64(pageSize))
            guard read >= 0 else { throw SalvageError.writeFailed(path: path, reason: String(cString: strerror(errno))) }
        }
        mapCache.append((map, bytes, false))
        return mapCache.count - 1
    }

    private func writeBack(_ entry: (page: UInt32, bytes: [UInt8], dirty: Bool)) throws {
        guard entry.dirty else { return }
        try entry.bytes.withUnsafeBytes { try writeBytes($0, at: Int64(entry.page - 1) * Int64(pageSize)) }
        mapPagesWrittenBack.insert(entry.page)
    }

    /// Writes the cached pointer-map pages and the header; the file is then `pageCount` pages
    /// long. Called once, after the last page.
    func finish() throws {
        precondition(!isFinished, "finished once")
        isFinished = true
        for entry in mapCache { try writeBack(entry) }
        mapCache.removeAll()
        do {
            try writer.finish()
        } catch let failure as WriteBehind.Failure {
            throw SalvageError.writing(path, code: failure.code)
        }
        var header = [UInt8](repeating: 0, count: SQLiteFileHeader.size)
        guard FileReading.read(descriptor, into: &header, at: 0) == header.count else {
            throw SalvageError.writeFailed(path: path, reason: "the new database's header could not be read back")
        }
        let counter = header.withUnsafeBytes { $0.bigEndianUInt32(at: 24) } &+ 1
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBigEndianUInt32(pageCount, at: 28)
            bytes.storeBigEndianUInt32(counter, at: 24)
            bytes.storeBigEndianUInt32(counter, at: 92)
        }
        try header.withUnsafeBytes { try FileWriting.write(descriptor, $0, at: 0, path: path) }
        // Every page up to `pageCount` was written (a pointer-map page before the pages it maps),
        // so this only settles the size; it never cuts a page.
        guard ftruncate(descriptor, off_t(Int64(pageCount) * Int64(pageSize))) == 0 else {
            throw SalvageError.writing(path, code: errno)
        }
        // The pages since the writer's last hint go to the disk too, while SQLite goes on.
        Writeback.start(descriptor)
        flush?.request()
    }

    private func writeBytes(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        do {
            try writer.write(bytes, at: offset)
        } catch let failure as WriteBehind.Failure {
            throw SalvageError.writing(path, code: failure.code)
        }
    }

    /// Waits for every page handed to the writer to be in the file (before reading it back).
    private func drain() throws {
        do {
            try writer.drain()
        } catch let failure as WriteBehind.Failure {
            throw SalvageError.writing(path, code: failure.code)
        }
    }
}

extension SQLiteConnection {
    /// A connection to a private file under construction that pages may be appended behind
    /// (`PageAppender`): no journal (a crash discards the file anyway), and not in WAL mode.
    ///
    /// A file SQLite made in WAL mode is first taken out of it by a connection of its own, then
    /// opened afresh: a connection that leaves WAL mode keeps the exclusive lock it closed the
    /// WAL under for the rest of its life, and so never looks at the file again — it would
    /// neither see the appended pages nor let its next commit keep them.
    static func openForBulkLoad(path: String) throws -> SQLiteConnection {
        do {
            let leaving = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
            guard try leaving.setJournalMode("DELETE") == "delete" else {
                throw SalvageError.writeFailed(path: path, reason: "SQLite would not take the new file out of WAL mode")
            }
        }
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.setJournalMode("OFF")
        try connection.execute("PRAGMA synchronous = OFF")
        return connection
    }
}
