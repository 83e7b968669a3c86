/// The cells of table b-tree pages (file format §1.6), parsed without trusting a byte: every
/// varint is bounded by the usable size of the page, and the local payload must fit in it.
enum TableCell {
    /// A cell of a table leaf page: the row's key and where its record lies.
    struct Leaf: Sendable, Equatable {
        var rowid: Int64
        /// The whole record's size, as the cell declares it (local part plus overflow).
        var payloadSize: Int
        /// Where the local part of the record starts in the page, and how long it is.
        var localStart: Int
        var localSize: Int
        /// The first overflow page, when the record does not fit in the page.
        var firstOverflowPage: UInt32?
    }

    /// The largest record SQLite writes (`SQLITE_MAX_LENGTH` is at most 2^31 - 1); a larger
    /// declared size is damage.
    static let maximumPayloadSize = Int(Int32.max)

    static func leaf(in page: UnsafeRawBufferPointer, at offset: Int, usableSize: Int) -> Leaf? {
        guard let size = SQLiteVarint.read(page, at: offset, end: usableSize), size.value <= UInt64(maximumPayloadSize),
            let key = SQLiteVarint.read(page, at: offset + size.length, end: usableSize)
        else { return nil }
        let payloadSize = Int(size.value)
        let local = localPayloadSize(payloadSize: payloadSize, usableSize: usableSize)
        let start = offset + size.length + key.length
        let spills = local < payloadSize
        guard start + local + (spills ? 4 : 0) <= usableSize else { return nil }
        let overflow = spills ? page.bigEndianUInt32(at: start + local) : nil
        return Leaf(
            rowid: Int64(bitPattern: key.value), payloadSize: payloadSize, localStart: start, localSize: local,
            firstOverflowPage: overflow)
    }

    /// A cell of an index page (a `WITHOUT ROWID` table's rows live in one): its record, as a
    /// `Leaf` whose `rowid` is 0; an interior cell's left child comes first (file format §1.6).
    /// Interior cells hold whole records too.
    static func index(in page: UnsafeRawBufferPointer, at offset: Int, usableSize: Int, isInterior: Bool) -> (cell: Leaf, leftChild: UInt32?)? {
        let sizeAt = offset + (isInterior ? 4 : 0)
        guard sizeAt <= usableSize, let size = SQLiteVarint.read(page, at: sizeAt, end: usableSize), size.value <= UInt64(maximumPayloadSize)
        else { return nil }
        let payloadSize = Int(size.value)
        let maximumLocal = ((usableSize - 12) * 64 / 255) - 23
        let minimumLocal = ((usableSize - 12) * 32 / 255) - 23
        let candidate = minimumLocal + ((payloadSize - minimumLocal) % (usableSize - 4))
        let local = payloadSize <= maximumLocal ? payloadSize : (candidate <= maximumLocal ? candidate : minimumLocal)
        let start = sizeAt + size.length
        let spills = local < payloadSize
        guard start + local + (spills ? 4 : 0) <= usableSize else { return nil }
        let overflow = spills ? page.bigEndianUInt32(at: start + local) : nil
        let cell = Leaf(rowid: 0, payloadSize: payloadSize, localStart: start, localSize: local, firstOverflowPage: overflow)
        return (cell, isInterior ? page.bigEndianUInt32(at: offset) : nil)
    }

    /// A cell of a table interior page: its left child and the largest key that child holds.
    static func interior(in page: UnsafeRawBufferPointer, at offset: Int, usableSize: Int) -> (leftChild: UInt32, key: Int64)? {
        guard offset + 4 <= usableSize, let key = SQLiteVarint.read(page, at: offset + 4, end: usableSize) else { return nil }
        return (page.bigEndianUInt32(at: offset), Int64(bitPattern: key.value))
    }

    /// How many bytes of a record of `payloadSize` bytes a table leaf keeps on the page (file
    /// format §1.6: X = U-35; M = ((U-12)*32/255)-23; K = M+((P-M) % (U-4)); K if K ≤ X, else M).
    static func localPayloadSize(payloadSize: Int, usableSize: Int) -> Int {
        let maximumLocal = usableSize - 35
        guard payloadSize > maximumLocal else { return payloadSize }
        let minimumLocal = ((usableSize - 12) * 32 / 255) - 23
        let candidate = minimumLocal + ((payloadSize - minimumLocal) % (usableSize - 4))
        return candidate <= maximumLocal ? candidate : minimumLocal
    }
}

/// How many bytes of one page's cells are decoded: about what the page holds. The records of a
/// sound page never overlap, so their local payloads add up to less than its usable size; once
/// the records decoded cover that much, the remaining pointers are aimed at bytes already read
/// (damage, or a crafted page) and their cells count as unreadable. Without it, thousands of
/// pointers aimed at one large record made one page cost thousands of decodes: a crafted 2.6 MB
/// file took over two minutes and 325 MB (every page scanned for schema rows, 16,000 columns
/// per cell).
///
/// A record that does not decode is charged only its header — what the decoder read of it —
/// not the size its cell claims: a damaged size must not cost the page's other rows.
struct CellBudget {
    private var left: Int

    init(usableSize: Int) {
        left = usableSize
    }

    /// Whether another cell may be decoded.
    var hasRoom: Bool { left > 0 }

    /// Charges a cell whose record in `payload` decoded (`isRecord`) or did not.
    mutating func charge(_ cell: TableCell.Leaf, payload: UnsafeRawBufferPointer, isRecord: Bool) {
        if isRecord {
            left -= cell.localSize
        } else {
            let header = SQLiteVarint.read(payload, at: 0, end: payload.count).map { Int(min($0.value, UInt64(payload.count))) } ?? 0
            left -= max(1, header)
        }
    }
}
