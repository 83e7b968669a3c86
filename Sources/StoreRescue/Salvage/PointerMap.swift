/// The pointer-map pages of an auto-vacuum database (file format §1.8; every Core Data store
/// has them, `auto_vacuum=2`): for each page, what it is and which page points to it.
///
/// Salvage uses them to name the table of a leaf that no intact interior page reaches: the
/// chain of parents from a b-tree page ends at its table's root page, and the schema names the
/// table with that root. They are hints from a possibly damaged file, so every answer is
/// checked (types in range, parents in range, chains bounded) and callers confirm it with the
/// rows' shape.
struct PointerMap {
    enum EntryType: UInt8, Sendable {
        case rootPage = 1, freePage = 2, firstOverflow = 3, laterOverflow = 4, nonRootBTree = 5
    }

    let usableSize: Int
    let pageCount: UInt32
    /// The page holding the lock byte (offset 2^30), which SQLite never uses.
    let lockBytePage: UInt32
    private var cache: [UInt32: [UInt8]] = [:]
    /// Pointer-map pages kept in memory at once (a few hundred KiB at most).
    private static let cachedPages = 64

    init(usableSize: Int, pageSize: Int, pageCount: UInt32) {
        self.usableSize = usableSize
        self.pageCount = pageCount
        lockBytePage = UInt32(clamping: (1 << 30) / pageSize + 1)
    }

    private var entriesPerPage: UInt32 { UInt32(usableSize / 5) }

    /// The pointer-map page that holds the entry of `page` (SQLite's `ptrmapPageno`).
    func mapPage(for page: UInt32) -> UInt32 {
        guard page >= 2 else { return 0 }
        let pagesPerMap = entriesPerPage + 1
        var result = ((page - 2) / pagesPerMap) * pagesPerMap + 2
        if result == lockBytePage { result += 1 }
        return result
    }

    func isMapPage(_ page: UInt32) -> Bool { page >= 2 && mapPage(for: page) == page }

    /// The entry for `page`, or nil when its map page is missing or the entry is not valid.
    mutating func entry(for page: UInt32, source: PageSource) -> (type: EntryType, parent: UInt32)? {
        let map = mapPage(for: page)
        guard map >= 2, map < page else { return nil }
        if cache[map] == nil {
            var buffer: [UInt8] = []
            guard source.read(map, into: &buffer) else { return nil }
            if cache.count >= Self.cachedPages { cache.removeAll(keepingCapacity: true) }
            cache[map] = buffer
        }
        let offset = 5 * Int(page - map - 1)
        guard let bytes = cache[map], offset + 5 <= usableSize else { return nil }
        return bytes.withUnsafeBytes { raw in
            guard let type = EntryType(rawValue: raw[offset]) else { return nil }
            let parent = raw.bigEndianUInt32(at: offset + 1)
            switch type {
            case .rootPage, .freePage: return parent == 0 ? (type, 0) : nil
            default: return parent >= 1 && parent <= pageCount ? (type, parent) : nil
            }
        }
    }

    /// The root page of the b-tree `page` belongs to, following parents; nil when the chain breaks,
    /// loops or does not end at a root.
    mutating func root(of page: UInt32, source: PageSource) -> UInt32? {
        var current = page
        for _ in 0..<64 {
            if current == 1 { return 1 }  // the schema's root has no entry of its own
            guard let entry = entry(for: current, source: source) else { return nil }
            switch entry.type {
            case .rootPage: return current
            case .nonRootBTree: current = entry.parent
            default: return nil
            }
        }
        return nil
    }

    /// Whether page 2 reads as a pointer map: for a database whose header is gone, this is how
    /// salvage learns that pointer maps exist. Most entries of the pages it covers must be valid.
    static func looksPresent(in source: PageSource, usableSize: Int) -> Bool {
        var buffer: [UInt8] = []
        guard source.pageCount >= 3, source.read(2, into: &buffer) else { return false }
        let covered = Int(min(UInt32(usableSize / 5), source.pageCount - 2))
        return buffer.withUnsafeBytes { raw in
            var valid = 0
            for index in 0..<covered {
                let type = raw[5 * index], parent = raw.bigEndianUInt32(at: 5 * index + 1)
                switch type {
                case 1, 2: if parent == 0 { valid += 1 }
                case 3, 4, 5: if parent >= 1, parent <= source.pageCount { valid += 1 }
                default: break
                }
            }
            return covered > 0 && valid * 10 >= covered * 9
        }
    }
}
