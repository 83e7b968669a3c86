/// What the finish of a Core Data salvage needs to know about the rows that went into the new
/// store, kept as they go in (`SalvageRowWriter.insert`, and each row a bulk load copies) so that
/// it need not read the tables back:
///
/// - each entity table's keys by entity (`RowPresence`): the report's rows per entity, and what a
///   relationship value is looked up in;
/// - for each reference column (`LayoutReferences`: to-one columns and join-table ends), the rows
///   whose value named no row of the target when the row went in — or NULL, for a join-table end:
///   the *candidates*. Rows only ever go into entity tables (the fix-ups remove join rows only),
///   so a value that named a row then names it still at the finish, and every dangling value is
///   among the candidates: the finish looks again at those only (`danglingRows`).
///
/// Whatever cannot be known this way is said so, and the finish asks SQLite as before: a table
/// whose keys could not all be kept (`RowPresence`), a value that is not an integer or NULL, more
/// than `maximumCandidates` candidates (a table read before the table it points to: every value
/// is one), or a table whose rows went back in through SQLite after a unique index refused them
/// (`forgetRows`).
struct KeyLedger {
    /// A reference column of a target's rows: which reference, and the position of its value
    /// among the target's columns (and its route's sources).
    private struct Watch {
        var reference: Int
        var position: Int
    }

    /// Candidates kept at most, over every reference (a rowid and an optional value: 24 bytes
    /// each in an array, 1.5 MiB).
    static let maximumCandidates = 1 << 16
    /// Words every table's key bitmaps may take together (4 MiB).
    static let presenceBudgetWords = 1 << 19

    private var presences: [RowPresence]
    private let presenceTables: [String]
    /// Per reference (`LayoutReferences`' to-one references, then its join ends): the
    /// reference, whether NULL dangles, its target table's presence (-1: none), the entities it
    /// may point to (nil: every entity of that table), and the rows (rowid, value; nil for NULL)
    /// whose value named no target row when they went in — unless no longer known.
    private let references: [LayoutReferences.Reference]
    private let nullDangles: [Bool]
    private let targetSlots: [Int]
    private let targetEntities: [[Int64]?]
    private var candidates: [[(rowid: Int64, value: Int64?)]]
    private var isKnown: [Bool]
    private var presenceOfTarget: [Int] = []
    private var watchesOfTarget: [[Watch]] = []
    private var presenceWordsLeft: Int
    private var candidatesLeft: Int

    /// - Parameters:
    ///   - entityTables: the tables whose keys are kept (a version's entity tables), with the
    ///     entities each holds.
    ///   - toOne: references cleared when dangling (NULL is no reference).
    ///   - joinEnds: join-table ends: a row whose end is NULL or dangling is dropped.
    ///   - maximumCandidates, presenceBudgetWords: the bounds (smaller in tests).
    init(
        entityTables: [(name: String, entities: Set<Int64>)], toOne: [LayoutReferences.Reference], joinEnds: [LayoutReferences.Reference],
        maximumCandidates: Int = KeyLedger.maximumCandidates, presenceBudgetWords: Int = KeyLedger.presenceBudgetWords
    ) {
        candidatesLeft = maximumCandidates
        presenceWordsLeft = presenceBudgetWords
        let tables = entityTables.map { $0.name.uppercased() }
        references = toOne + joinEnds
        nullDangles = toOne.map { _ in false } + joinEnds.map { _ in true }
        targetSlots = references.map { tables.firstIndex(of: $0.targetTable.uppercased()) ?? -1 }
        // A reference to every entity of its table looks keys up in the table's one bitmap.
        targetEntities = zip(references, targetSlots).map { reference, slot in
            let wanted = Set(reference.targetEntities.map(Int64.init))
            return slot >= 0 && entityTables[slot].entities.isSubset(of: wanted) ? nil : Array(wanted)
        }
        let partial = Set(zip(targetSlots, targetEntities).filter { $0.1 != nil }.map(\.0))
        presenceTables = tables
        presences = tables.indices.map { RowPresence(keepsEntities: partial.contains($0)) }
        candidates = references.map { _ in [] }
        isKnown = references.map { _ in true }
    }

    /// Target `target` writes `columns` (in its route's order) into `table`: its rows are noted
    /// in that table's presence and watched for each reference column of that table.
    mutating func bind(target: Int, table: String, columns: [String]) {
        precondition(target == presenceOfTarget.count, "targets are bound in order")
        let name = table.uppercased()
        presenceOfTarget.append(presenceTables.firstIndex(of: name) ?? -1)
        var watches: [Watch] = []
        for (number, reference) in references.enumerated() where reference.table.uppercased() == name {
            if let position = columns.firstIndex(where: { $0.uppercased() == reference.column.uppercased() }) {
                watches.append(Watch(reference: number, position: position))
            } else {
                forget(number)
            }
        }
        watchesOfTarget.append(watches)
    }

    /// The keys and entities of `table`'s rows, when every row that went into it was noted.
    func presence(ofTable table: String) -> RowPresence? {
        guard let slot = presenceTables.firstIndex(of: table.uppercased()), presences[slot].isTracked else { return nil }
        return presences[slot]
    }

    /// The keys of the rows `reference` may point to, and the entities to look them up with (nil:
    /// any of its table), when every row that went into its target was noted.
    func target(of reference: LayoutReferences.Reference) -> (presence: RowPresence, entities: [Int64]?)? {
        guard let number = references.firstIndex(of: reference) else { return nil }
        let slot = targetSlots[number]
        guard slot >= 0, presences[slot].isTracked else { return nil }
        return (presences[slot], targetEntities[number])
    }

    /// Notes a row that went into `route.target`'s table: its key with the `Z_ENT` it holds there
    /// (the table's sole entity, set when the record's differs; else the record's, which `fits`
    /// checked), and each reference value that names no row yet.
    mutating func note(route: RowRoute, rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer) {
        let slot = presenceOfTarget[route.target]
        if slot >= 0, presences[slot].isTracked {
            var entity = route.rules?.soleEntity
            if entity == nil, let position = route.rules?.entityPosition,
                case .some(.some(let value)) = Self.integer(route.sources[position], record: record, payload: payload)
            {
                entity = value
            }
            if let entity {
                presenceWordsLeft -= presences[slot].insert(key: rowid, entity: entity, wordsLeft: presenceWordsLeft)
            } else {
                presences[slot].untrack()
            }
        }
        for watch in watchesOfTarget[route.target] where isKnown[watch.reference] {
            let number = watch.reference
            guard let value = Self.integer(route.sources[watch.position], record: record, payload: payload) else {
                forget(number)  // neither an integer nor NULL: SQLite compares it
                continue
            }
            if let value {
                let target = targetSlots[number]
                if target >= 0, presences[target].isTracked, presences[target].contains(key: value, entities: targetEntities[number]) {
                    continue
                }
            } else if !nullDangles[number] {
                continue
            }
            guard candidatesLeft > 0 else {
                forget(number)
                continue
            }
            candidatesLeft -= 1
            candidates[number].append((rowid, value))
        }
    }

    /// The rows of `target`'s table went back in without being noted (a unique index refused
    /// some): its keys and reference values are no longer known here.
    mutating func forgetRows(ofTarget target: Int) {
        if presenceOfTarget[target] >= 0 { presences[presenceOfTarget[target]].untrack() }
        for watch in watchesOfTarget[target] { forget(watch.reference) }
    }

    /// The rowids, in order, of the rows of `references`' table (every one on the same table)
    /// with a dangling value in one of them: a value naming no row of the target with one of
    /// its entities, or NULL where it dangles. Nil when that is not known here.
    func danglingRows(of wanted: [LayoutReferences.Reference]) -> [Int64]? {
        var rows: [Int64] = []
        for reference in wanted {
            guard let number = references.firstIndex(of: reference), isKnown[number] else { return nil }
            let slot = targetSlots[number]
            guard slot >= 0, presences[slot].isTracked else { return nil }
            for candidate in candidates[number] {
                if let value = candidate.value, presences[slot].contains(key: value, entities: targetEntities[number]) { continue }
                rows.append(candidate.rowid)
            }
        }
        // A join row may dangle at both ends: once.
        return rows.sorted().reduce(into: []) { unique, rowid in
            if unique.last != rowid { unique.append(rowid) }
        }
    }

    private mutating func forget(_ reference: Int) {
        guard isKnown[reference] else { return }
        isKnown[reference] = false
        candidatesLeft += candidates[reference].count
        candidates[reference] = []
    }

    /// The value `source` gives the row: `.some(nil)` for NULL, nil when it is neither NULL nor an
    /// integer (SQLite writes what the writer binds: an unreadable value as NULL, a missing
    /// column as its default).
    private static func integer(_ source: RowRoute.ValueSource, record: [RecordColumn], payload: UnsafeRawBufferPointer) -> Int64?? {
        switch source {
        case .record(let column, let fallback):
            guard column < record.count else { return integer(fallback) }
            let value = record[column]
            guard value.isAvailable else { return .some(nil) }
            switch value.storageClass {
            case .null: return .some(nil)
            case .integer: return .some(value.integer(in: payload))
            default: return nil
            }
        case .constant(let constant): return integer(constant)
        case .rowid, .pageNumber, .rootPage, .likelyTable, .wholeRecord: return nil
        }
    }

    private static func integer(_ value: SQLiteValue) -> Int64?? {
        switch value {
        case .null: return .some(nil)
        case .integer(let integer): return .some(integer)
        default: return nil
        }
    }
}
