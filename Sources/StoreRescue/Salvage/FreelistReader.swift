/// The freelist (file format §1.5): trunk pages chained from the header, each listing leaf pages.
///
/// Free leaf pages keep what they held before they were freed — often a whole b-tree leaf of
/// deleted rows — so salvage reads them as "deleted, recoverable". The chain comes from a possibly
/// damaged file: every page number is range-checked, a page seen twice ends the walk (a cycle),
/// and a trunk may list no more leaves than fit in it.
enum FreelistReader {
    struct Freelist {
        var trunkPages: PageBitmap
        var leafPages: PageBitmap
        /// What stopped the walk early, for the report.
        var issue: String?
    }

    static func read(source: PageSource, firstTrunk: UInt32, declaredCount: UInt32, capacity: UInt32) -> Freelist {
        var list = Freelist(trunkPages: PageBitmap(capacity: capacity), leafPages: PageBitmap(capacity: capacity), issue: nil)
        var trunk = firstTrunk
        var buffer: [UInt8] = []
        let usable = source.geometry.usableSize
        let maximumLeaves = usable / 4 - 2
        var found = 0
        while trunk != 0 {
            guard trunk <= source.availablePages else {
                list.issue = "freelist trunk page \(trunk) is missing"
                break
            }
            guard !list.trunkPages.contains(trunk), !list.leafPages.contains(trunk) else {
                list.issue = "the freelist loops back to page \(trunk)"
                break
            }
            guard source.read(trunk, into: &buffer) else {
                list.issue = "freelist trunk page \(trunk) cannot be read"
                break
            }
            list.trunkPages.insert(trunk)
            found += 1
            let next: UInt32 = buffer.withUnsafeBytes { raw in
                let leaves = Int(raw.bigEndianUInt32(at: 4))
                if leaves > maximumLeaves { list.issue = "freelist trunk page \(trunk) lists \(leaves) leaves, more than fit in it" }
                for index in 0..<min(leaves, maximumLeaves) {
                    let leaf = raw.bigEndianUInt32(at: 8 + 4 * index)
                    if leaf >= 2, leaf <= capacity, !list.trunkPages.contains(leaf), list.leafPages.insert(leaf) { found += 1 }
                }
                return raw.bigEndianUInt32(at: 0)
            }
            guard found <= Int(declaredCount) + 1 else {
                list.issue = "the freelist holds more pages than the header's \(declaredCount)"
                break
            }
            trunk = next
        }
        return list
    }
}
