/// Reads the part of a record that did not fit in its cell: the chain of overflow pages (file
/// format §1.7), each a 4-byte link to the next and `usableSize - 4` bytes of payload.
///
/// The chain comes from a damaged file. It stops — keeping what was read — at a link that is
/// zero too early, out of range, past the end of the file, already used by another chain or by a
/// b-tree (a cycle or a reused page), at a b-tree page no tree has claimed yet, or at a page that
/// cannot be read. A record declared larger
/// than `maximumPayloadBytes` is not read at all, which bounds memory whatever the file says.
struct OverflowChainReader {
    enum Outcome: Equatable {
        case complete
        /// The chain broke at `page`; `reason` says how (for the report).
        case broken(page: UInt32, reason: String)
        case tooLarge
    }

    let maximumPayloadBytes: Int
    /// The record: the cell's local bytes, then the overflow bytes read.
    private(set) var payload: [UInt8] = []
    private var pageBuffer: [UInt8] = []

    init(maximumPayloadBytes: Int) {
        self.maximumPayloadBytes = maximumPayloadBytes
    }

    /// Fills `payload` with the record of `cell`, found on `page`. Overflow pages read are added
    /// to `claimed`; pages in `claimed` or `forbidden` are never read as overflow.
    mutating func read(
        cell: TableCell.Leaf, page: UnsafeRawBufferPointer, source: PageSource, claimed: inout PageBitmap,
        forbidden: PageBitmap
    ) -> Outcome {
        payload.removeAll(keepingCapacity: payload.count <= 1 << 20)
        guard cell.payloadSize <= maximumPayloadBytes else { return .tooLarge }
        payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: page[cell.localStart..<cell.localStart + cell.localSize]))
        let usable = source.geometry.usableSize
        var remaining = cell.payloadSize - cell.localSize
        var next = cell.firstOverflowPage ?? 0
        while remaining > 0 {
            guard next != 0 else { return .broken(page: 0, reason: "the chain ends \(remaining) bytes early") }
            guard next <= source.availablePages else { return .broken(page: next, reason: "overflow page \(next) is missing") }
            guard !claimed.contains(next), !forbidden.contains(next) else {
                return .broken(page: next, reason: "overflow page \(next) is already used elsewhere")
            }
            guard source.read(next, into: &pageBuffer) else { return .broken(page: next, reason: "overflow page \(next) cannot be read") }
            // A b-tree page is not an overflow page, though a damaged link can name one that no
            // tree has claimed yet (a leaf of a table walked later): taken, its rows would be
            // lost. An overflow page starts with its link, 0 or a page of the file; a b-tree
            // page's flag byte makes that link 2^25 or more, past any file of fewer pages.
            let isTreePage = pageBuffer.withUnsafeBytes { bytes in
                bytes.bigEndianUInt32(at: 0) > max(source.pageCount, source.availablePages)
                    && BTreePageHeader(page: bytes, pageNumber: next, usableSize: usable) != nil
            }
            guard !isTreePage else { return .broken(page: next, reason: "page \(next) is a b-tree page, not an overflow page") }
            claimed.insert(next)
            let take = min(remaining, usable - 4)
            pageBuffer.withUnsafeBytes { bytes in
                payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[4..<4 + take]))
                next = bytes.bigEndianUInt32(at: 0)
            }
            remaining -= take
        }
        return .complete
    }
}
