/// The header of a b-tree page (file format §1.6), checked against the page it came from so that
/// nothing read from it can point outside the page.
///
/// A page is taken as a b-tree page only when its type byte is one of the four b-tree types, its
/// cell pointer array fits before the cell content area, and that area starts inside the usable
/// part of the page. Cell offsets are checked again one by one (`cellOffset(_:)`).
struct BTreePageHeader: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        case indexInterior = 2
        case tableInterior = 5
        case indexLeaf = 10
        case tableLeaf = 13

        var isLeaf: Bool { self == .indexLeaf || self == .tableLeaf }
        var isTable: Bool { self == .tableInterior || self == .tableLeaf }
    }

    var kind: Kind
    /// 100 on page 1 (after the database header), 0 elsewhere.
    var headerOffset: Int
    var cellCount: Int
    /// Where the cell pointer array starts.
    var cellPointerStart: Int
    /// The first byte after the cell pointer array: no cell may start before it.
    var cellPointerEnd: Int
    var usableSize: Int
    /// The right-most child of an interior page (0 on a leaf).
    var rightChild: UInt32

    /// Reads the header of `page` (numbered `pageNumber`), or nil when the bytes are not a
    /// plausible b-tree page header.
    init?(page: UnsafeRawBufferPointer, pageNumber: UInt32, usableSize: Int) {
        let offset = pageNumber == 1 ? 100 : 0
        guard usableSize >= 480, page.count >= usableSize, let kind = Kind(rawValue: page[offset]) else { return nil }
        let size = kind.isLeaf ? 8 : 12
        let cellCount = page.bigEndianUInt16(at: offset + 3)
        let pointerEnd = offset + size + 2 * cellCount
        var contentStart = page.bigEndianUInt16(at: offset + 5)
        if contentStart == 0 { contentStart = 65536 }
        guard pointerEnd <= usableSize, contentStart >= pointerEnd || cellCount == 0, contentStart <= usableSize || cellCount == 0 else {
            return nil
        }
        self.kind = kind
        headerOffset = offset
        self.cellCount = cellCount
        cellPointerStart = offset + size
        cellPointerEnd = pointerEnd
        self.usableSize = usableSize
        rightChild = kind.isLeaf ? 0 : page.bigEndianUInt32(at: offset + 8)
    }

    /// The offset of cell `index` in the page, or nil when the pointer lands in the header, the
    /// pointer array or past the usable size (a damaged pointer).
    func cellOffset(_ index: Int, in page: UnsafeRawBufferPointer) -> Int? {
        guard index >= 0, index < cellCount else { return nil }
        let offset = page.bigEndianUInt16(at: cellPointerStart + 2 * index)
        guard offset >= cellPointerEnd, offset < usableSize else { return nil }
        return offset
    }
}
