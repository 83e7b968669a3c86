/// One bit per page: which pages a pass has claimed (tree pages, overflow pages, free pages).
///
/// Salvage must remember facts about every page without holding the pages: a bit each keeps that
/// to 32 KiB per gigabyte of 4 KiB pages, whatever the store size. Page numbers outside
/// `1...capacity` are never members.
struct PageBitmap: Sendable {
    private var words: [UInt64]
    let capacity: UInt32
    private(set) var count = 0

    init(capacity: UInt32) {
        self.capacity = capacity
        words = [UInt64](repeating: 0, count: Int(capacity) / 64 + 1)
    }

    func contains(_ page: UInt32) -> Bool {
        guard page >= 1, page <= capacity else { return false }
        return words[Int(page) >> 6] & (1 << UInt64(page & 63)) != 0
    }

    /// Adds `page`; false when it was already there or is out of range.
    @discardableResult
    mutating func insert(_ page: UInt32) -> Bool {
        guard page >= 1, page <= capacity else { return false }
        let index = Int(page) >> 6, bit: UInt64 = 1 << UInt64(page & 63)
        guard words[index] & bit == 0 else { return false }
        words[index] |= bit
        count += 1
        return true
    }

    mutating func remove(_ page: UInt32) {
        guard page >= 1, page <= capacity else { return }
        let index = Int(page) >> 6, bit: UInt64 = 1 << UInt64(page & 63)
        if words[index] & bit != 0 {
            words[index] &= ~bit
            count -= 1
        }
    }
}
