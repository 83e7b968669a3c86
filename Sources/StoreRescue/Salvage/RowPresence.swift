/// Which `Z_PK`s an entity table of the new store holds, and with which `Z_ENT`, kept as rows go
/// in (`SalvageRowWriter.insert`, and the rows a bulk load copies) so that the finish need not
/// read the tables back: the dangling-reference fix-ups look each value up here instead of in the
/// target's b-tree, and the report's rows per entity are these counts.
///
/// One bit per key, from 1 to the largest key seen, whatever its entity — and per entity as
/// well, for a table of several entities that a reference may point into only some of
/// (`keepsEntities`); the bitmaps of all tables share one budget (`KeyLedger.presenceBudgetWords`). Core Data hands out keys counting up from
/// 1, so the bits stay close to the rows: 190 KB for 1.5 million orders. A key below 1, or one
/// that would take the bitmaps past the budget (only damage, or a store of a hundred million
/// rows, puts one there), stops the tracking of its table (`isTracked` false, its bits freed), and
/// the finish asks SQLite about that table instead, as it always did.
struct RowPresence {
    /// Bitmaps per entity too (a table of several entities, some reference pointing at some of
    /// them only); else one bitmap for the table.
    let keepsEntities: Bool
    /// False once a key could not be kept: nothing else here may then be used.
    private(set) var isTracked = true
    /// The keys of every row: bit `k % 64` of word `k / 64` for key `k`.
    private var all: [UInt64] = []
    /// The entities seen (`Z_ENT`), with their rows and (`keepsEntities`) their keys' bits. A
    /// few entities per table: looked up in order.
    private var entities: [Int64] = []
    private var rows: [Int] = []
    private var bits: [[UInt64]] = []

    init(keepsEntities: Bool) {
        self.keepsEntities = keepsEntities
    }

    /// Rows noted, by entity, in entity order.
    var rowsByEntity: [(entity: Int64, rows: Int)] {
        zip(entities, rows).map { (entity: $0, rows: $1) }.sorted { $0.entity < $1.entity }
    }

    /// Notes a row with key `key` of entity `entity`. Each key is noted once per table: a row is
    /// noted only when it went in, and a table's keys are unique.
    ///
    /// - Parameter wordsLeft: words the bitmaps may still grow by; the table stops being tracked
    ///   when this row's key would need more.
    /// - Returns: the words the bitmaps grew by.
    mutating func insert(key: Int64, entity: Int64, wordsLeft: Int) -> Int {
        guard isTracked else { return 0 }
        guard key >= 1 else {
            untrack()
            return 0
        }
        let position: Int
        if let found = entities.firstIndex(of: entity) {
            position = found
        } else {
            entities.append(entity)
            rows.append(0)
            if keepsEntities { bits.append([]) }
            position = entities.count - 1
        }
        let word = Int(key >> 6)
        let bit: UInt64 = 1 << UInt64(key & 63)
        var grown = 0
        if word >= all.count {
            grown += Self.grow(&all, toHold: word, wordsLeft: wordsLeft)
        }
        if keepsEntities, word >= bits[position].count {
            grown += Self.grow(&bits[position], toHold: word, wordsLeft: wordsLeft - grown)
        }
        guard grown <= wordsLeft else {
            untrack()
            return 0
        }
        all[word] |= bit
        if keepsEntities { bits[position][word] |= bit }
        rows[position] += 1
        return grown
    }

    /// Grows `words` to hold word `word` — doubling, so that a table filled key by key grows its
    /// bitmap a few times only — unless that takes more than `wordsLeft`; returns the words
    /// added, or more than `wordsLeft` when it would not fit.
    private static func grow(_ words: inout [UInt64], toHold word: Int, wordsLeft: Int) -> Int {
        let count = words.count
        let wanted = max(word + 1, min(count * 2, count + wordsLeft))
        guard wanted - count <= wordsLeft else { return wordsLeft + 1 }
        words.append(contentsOf: repeatElement(0, count: wanted - count))
        return wanted - count
    }

    /// True when a row with key `key` was noted: of any entity when `entities` is nil, else of
    /// one of `entities` (which needs `keepsEntities`).
    func contains(key: Int64, entities targetEntities: [Int64]?) -> Bool {
        precondition(isTracked, "an untracked table's keys are not known")
        guard key >= 1 else { return false }
        let word = Int(key >> 6)
        let bit: UInt64 = 1 << UInt64(key & 63)
        guard word < all.count, all[word] & bit != 0 else { return false }
        guard let targetEntities else { return true }
        precondition(keepsEntities, "the keys of each entity were not kept")
        for (position, entity) in entities.enumerated() where targetEntities.contains(entity) {
            if word < bits[position].count, bits[position][word] & bit != 0 { return true }
        }
        return false
    }

    /// Stops tracking: the table's rows are no longer known here (its bits are freed).
    mutating func untrack() {
        isTracked = false
        all = []
        entities = []
        rows = []
        bits = []
    }
}
