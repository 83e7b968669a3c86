import Foundation
import Testing
@testable import StoreRescue

/// `RowPresence` and `KeyLedger`: the keys and reference values a Core Data salvage notes as rows
/// go in, and the dangling rows the finish takes from them instead of asking SQLite. Each answer
/// is checked against a brute-force model of the same rows, and every case the ledger cannot
/// know is checked to say so (nil), never to answer.
@Suite struct KeyLedgerTests {
    // Owners: entities 2 and 3 in ZOWNER. Items (entity 1) point at owners of entity 2 only;
    // notes point at any owner; join rows pair items and owners.
    static let toOwner = LayoutReferences.Reference(
        table: "ZITEM", column: "ZOWNER", companions: ["Z_FOK_OWNER"], targetTable: "ZOWNER", targetEntities: [2])
    static let toAnyOwner = LayoutReferences.Reference(
        table: "ZNOTE", column: "ZOWNER", companions: [], targetTable: "ZOWNER", targetEntities: [2, 3])
    static let joinItems = LayoutReferences.Reference(table: "Z_1TAGS", column: "Z_1ITEMS", companions: [], targetTable: "ZITEM", targetEntities: [1])
    static let joinOwners = LayoutReferences.Reference(table: "Z_1TAGS", column: "Z_2OWNERS", companions: [], targetTable: "ZOWNER", targetEntities: [2, 3])

    /// Targets 0: ZOWNER (Z_PK, Z_ENT, ZNAME), 1: ZITEM (Z_PK, Z_ENT, ZOWNER, Z_FOK_OWNER),
    /// 2: ZNOTE (Z_PK, Z_ENT, ZOWNER), 3: Z_1TAGS (Z_1ITEMS, Z_2OWNERS, rowid).
    static func ledger(maximumCandidates: Int = KeyLedger.maximumCandidates, budget: Int = KeyLedger.presenceBudgetWords) -> KeyLedger {
        var ledger = KeyLedger(
            entityTables: [("ZOWNER", [2, 3]), ("ZITEM", [1]), ("ZNOTE", [5])], toOne: [toOwner, toAnyOwner], joinEnds: [joinItems, joinOwners],
            maximumCandidates: maximumCandidates, presenceBudgetWords: budget)
        ledger.bind(target: 0, table: "ZOWNER", columns: ["Z_PK", "Z_ENT", "ZNAME"])
        ledger.bind(target: 1, table: "ZITEM", columns: ["Z_PK", "Z_ENT", "ZOWNER", "Z_FOK_OWNER"])
        ledger.bind(target: 2, table: "ZNOTE", columns: ["Z_PK", "Z_ENT", "ZOWNER"])
        ledger.bind(target: 3, table: "Z_1TAGS", columns: ["Z_1ITEMS", "Z_2OWNERS", "rowid"])
        return ledger
    }

    static func route(_ target: Int, columns: Int, entityPosition: Int?, entities: Set<Int64>) -> RowRoute {
        let rules = RowRoute.CoreDataRules(
            allowedClasses: Array(repeating: 0xFF, count: columns), entityPosition: entityPosition, entityNumbers: entities,
            soleEntity: entities.count == 1 ? entities.first : nil, optimisticLockPosition: nil)
        let sources = (0..<columns).map { column -> RowRoute.ValueSource in
            column == 0 && entityPosition != nil ? .rowid : .record(index: column, fallback: .null)
        }
        return RowRoute(target: target, sources: sources, rules: rules)
    }

    /// Notes one row through a real record: `values` encoded as SQLite would store them.
    static func note(_ ledger: inout KeyLedger, target: Int, rowid: Int64, _ values: [SQLiteValue]) throws {
        let routes = [
            route(0, columns: 3, entityPosition: 1, entities: [2, 3]), route(1, columns: 4, entityPosition: 1, entities: [1]),
            route(2, columns: 3, entityPosition: 1, entities: [5]), route(3, columns: 3, entityPosition: nil, entities: []),
        ]
        let record = IndexTreeBuilderTests.record(values)
        var columns: [RecordColumn] = []
        try record.withUnsafeBytes { payload in
            try #require(RecordDecoder.decode(payload, declaredSize: payload.count, into: &columns) == .complete)
            ledger.note(route: routes[target], rowid: rowid, record: columns, payload: payload)
        }
    }

    @Test func presenceKnowsEachKeyByEntity() {
        var presence = RowPresence(keepsEntities: true)
        for key in [1, 2, 64, 65, 1000] as [Int64] { _ = presence.insert(key: key, entity: key == 64 ? 3 : 2, wordsLeft: 1 << 10) }
        #expect(presence.contains(key: 64, entities: nil))
        #expect(presence.contains(key: 64, entities: [3]))
        #expect(!presence.contains(key: 64, entities: [2]))
        #expect(presence.contains(key: 1000, entities: [2, 3]))
        for absent in [0, 3, 63, 66, 999, 1001, 1 << 40, -5] as [Int64] { #expect(!presence.contains(key: absent, entities: nil), "\(absent)") }
        #expect(presence.rowsByEntity.map(\.entity) == [2, 3])
        #expect(presence.rowsByEntity.map(\.rows) == [4, 1])

        var single = RowPresence(keepsEntities: false)
        _ = single.insert(key: 7, entity: 9, wordsLeft: 10)
        #expect(single.contains(key: 7, entities: nil))
        #expect(single.isTracked)
    }

    @Test func presenceStopsTrackingWhatItCannotKeep() {
        var negative = RowPresence(keepsEntities: false)
        _ = negative.insert(key: 5, entity: 1, wordsLeft: 100)
        _ = negative.insert(key: 0, entity: 1, wordsLeft: 100)
        #expect(!negative.isTracked, "a key below 1 is not Core Data's")

        // 10 words: keys up to 639 fit, 640 does not.
        var bounded = RowPresence(keepsEntities: false)
        var left = 10
        left -= bounded.insert(key: 639, entity: 1, wordsLeft: left)
        #expect(bounded.isTracked && left == 0)
        _ = bounded.insert(key: 640, entity: 1, wordsLeft: left)
        #expect(!bounded.isTracked)
        #expect(bounded.rowsByEntity.isEmpty, "its bits and counts are gone")
    }

    @Test func rowsWhoseTargetCameEarlierOrLaterAreKeptAndTheOthersDangle() throws {
        var ledger = Self.ledger()
        try Self.note(&ledger, target: 0, rowid: 1, [.null, .integer(2), .text("a")])
        try Self.note(&ledger, target: 0, rowid: 3, [.null, .integer(3), .text("c")])  // entity 3
        // Items: owner 1 (there), 2 (comes later), 3 (entity 3: not a target), 4 (never), NULL.
        for (item, owner) in [(10, SQLiteValue.integer(1)), (11, .integer(2)), (12, .integer(3)), (13, .integer(4)), (14, .null)] {
            try Self.note(&ledger, target: 1, rowid: Int64(item), [.null, .integer(1), owner, .integer(0)])
        }
        try Self.note(&ledger, target: 0, rowid: 2, [.null, .integer(2), .text("b")])
        #expect(ledger.danglingRows(of: [Self.toOwner]) == [12, 13])
        // Notes may point at owners of either entity: 3 is fine there.
        for (note, owner) in [(20, Int64(3)), (21, 4), (22, 1)] {
            try Self.note(&ledger, target: 2, rowid: Int64(note), [.null, .integer(5), .integer(owner)])
        }
        #expect(ledger.danglingRows(of: [Self.toAnyOwner]) == [21])
        // Join rows: either end NULL or dangling drops the row (once).
        let pairs: [(Int64, SQLiteValue, SQLiteValue)] = [
            (1, .integer(10), .integer(1)), (2, .integer(99), .integer(2)), (3, .integer(11), .null), (4, .null, .integer(77)),
            (5, .integer(12), .integer(3)),
        ]
        for (rowid, item, owner) in pairs { try Self.note(&ledger, target: 3, rowid: rowid, [item, owner, .integer(rowid)]) }
        #expect(ledger.danglingRows(of: [Self.joinItems, Self.joinOwners]) == [2, 3, 4])
        #expect(ledger.presence(ofTable: "zowner")?.rowsByEntity.map(\.rows) == [2, 1])
        #expect(ledger.presence(ofTable: "ZITEM")?.rowsByEntity.map(\.rows) == [5])
        #expect(ledger.target(of: Self.toAnyOwner)?.entities == nil, "every entity of ZOWNER: the table's one bitmap")
        #expect(ledger.target(of: Self.toOwner)?.entities == [2])
    }

    @Test func whatTheLedgerCannotKnowItDoesNotAnswer() throws {
        // A value that is neither an integer nor NULL: SQLite must compare it.
        var text = Self.ledger()
        try Self.note(&text, target: 1, rowid: 1, [.null, .integer(1), .text("5"), .null])
        #expect(text.danglingRows(of: [Self.toOwner]) == nil)
        #expect(text.danglingRows(of: [Self.toAnyOwner]) == [], "another reference is still known")

        // More candidates than the bound.
        var many = Self.ledger(maximumCandidates: 3)
        for item in 1...4 { try Self.note(&many, target: 1, rowid: Int64(item), [.null, .integer(1), .integer(Int64(item)), .null]) }
        #expect(many.danglingRows(of: [Self.toOwner]) == nil)
        // Its candidates were given back: another reference may still keep three.
        for note in 1...3 { try Self.note(&many, target: 2, rowid: Int64(note), [.null, .integer(5), .integer(50)]) }
        #expect(many.danglingRows(of: [Self.toAnyOwner]) == [1, 2, 3])

        // The target table untracked (a key it could not keep): its references are not known.
        var untracked = Self.ledger(budget: 4)
        try Self.note(&untracked, target: 1, rowid: 1, [.null, .integer(1), .integer(1), .null])
        try Self.note(&untracked, target: 0, rowid: 1_000, [.null, .integer(2), .null])
        #expect(untracked.presence(ofTable: "ZOWNER") == nil)
        #expect(untracked.danglingRows(of: [Self.toOwner]) == nil)
        #expect(untracked.target(of: Self.toOwner) == nil)

        // Rows put back through SQLite unseen: the table's own references and keys are forgotten.
        var refused = Self.ledger()
        try Self.note(&refused, target: 3, rowid: 1, [.integer(1), .integer(1), .integer(1)])
        try Self.note(&refused, target: 1, rowid: 1, [.null, .integer(1), .null, .null])
        refused.forgetRows(ofTarget: 3)
        #expect(refused.danglingRows(of: [Self.joinItems, Self.joinOwners]) == nil)
        #expect(refused.danglingRows(of: [Self.toOwner]) == [], "ZITEM is still known")
        refused.forgetRows(ofTarget: 1)
        #expect(refused.presence(ofTable: "ZITEM") == nil)
        #expect(refused.danglingRows(of: [Self.toOwner]) == nil)
    }

    /// Rows of every table in a random order, against the rows the same references name by brute
    /// force once every row is in.
    @Test(arguments: [1, 2, 3, 4, 5])
    func randomOrdersGiveTheBruteForceAnswer(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        var ledger = Self.ledger()
        var owners: [Int64: Int64] = [:]
        var items: Set<Int64> = []
        var itemOwners: [(Int64, Int64?)] = []
        var joins: [(Int64, Int64?, Int64?)] = []
        var events: [Int] = (0..<300).map { $0 % 3 }
        events.shuffle(using: &generator)
        for (number, event) in events.enumerated() {
            let key = Int64(number + 1)
            func reference() -> Int64? { Int64.random(in: 0...20, using: &generator) == 0 ? nil : Int64.random(in: 1...320, using: &generator) }
            switch event {
            case 0:
                let entity: Int64 = Bool.random(using: &generator) ? 2 : 3
                owners[key] = entity
                try Self.note(&ledger, target: 0, rowid: key, [.null, .integer(entity), .null])
            case 1:
                let owner = reference()
                items.insert(key)
                itemOwners.append((key, owner))
                try Self.note(&ledger, target: 1, rowid: key, [.null, .integer(1), owner.map(SQLiteValue.integer) ?? .null, .null])
            default:
                let pair = (key, reference(), reference())
                joins.append(pair)
                try Self.note(&ledger, target: 3, rowid: key, [pair.1.map(SQLiteValue.integer) ?? .null, pair.2.map(SQLiteValue.integer) ?? .null, .integer(key)])
            }
        }
        let danglingItems = itemOwners.filter { item in item.1.map { owners[$0] != 2 } ?? false }.map(\.0).sorted()
        let droppedJoins = joins.filter { row in
            row.1.map { !items.contains($0) } ?? true || row.2.map { owners[$0] == nil } ?? true
        }.map(\.0).sorted()
        #expect(ledger.danglingRows(of: [Self.toOwner]) == danglingItems)
        #expect(ledger.danglingRows(of: [Self.joinItems, Self.joinOwners]) == droppedJoins)
        #expect(!danglingItems.isEmpty && !droppedJoins.isEmpty && danglingItems.count < itemOwners.count, "the model has both kinds")
        let counts = Dictionary(grouping: owners.values, by: { $0 }).mapValues(\.count)
        #expect(ledger.presence(ofTable: "ZOWNER")?.rowsByEntity.map(\.rows) == [counts[2] ?? 0, counts[3] ?? 0])
    }
}
