/// Names the table of a leaf page that no intact tree reaches, from the shape of its records:
/// column count, the storage class of each value against each column's declared type, NULL in
/// the rowid column, and — for Core Data entity tables — `Z_ENT` naming one of the table's
/// entities, which makes the answer unambiguous between entity tables.
///
/// A leaf belongs to one table, so the page is judged as a whole: the table most of its records
/// fit (and fit best) wins; a tie between tables is no answer.
struct ShapeMatcher {
    /// One record, as much as identification needs.
    struct Shape {
        var classes: [RecordColumn.StorageClass]
        /// Column 1 as an integer, when it is one (`Z_ENT` in Core Data tables).
        var secondInteger: Int64?
    }

    let tables: [TableDefinition]
    /// Each table's column affinities, worked out once (they are read for every record judged).
    private let affinities: [[TableDefinition.Affinity]]
    /// Core Data mode: a value must have a storage class its column's declared type allows
    /// (what Core Data writes); plain mode scores typical classes higher but refuses none.
    let isStrict: Bool
    /// Core Data mode, per table: the columns whose value a row is written with even when it is
    /// wrong, because the writer fixes it (`RowRoute.CoreDataRules`): `Z_OPT` of an entity table
    /// (set to 1 when not an integer), and `Z_ENT` of a table of one entity (set to it). A record
    /// is not refused for them — else a leaf whose rows all lost their `Z_OPT` would be no
    /// table's, and Core Data mode writes no lost and found. A `Z_ENT` naming another table's
    /// entity still refuses it: that row is the other table's (two tables of the same shape,
    /// `ZOWNER` and `ZTAG`, are told apart by it alone).
    private let fixableColumns: [[Int]]
    /// Every entity number of every table (Core Data mode).
    private let allEntityNumbers: Set<Int64>

    init(tables: [TableDefinition], isStrict: Bool) {
        self.tables = tables
        affinities = tables.map { $0.columns.map { TableDefinition.affinity(of: $0.declaredType) } }
        self.isStrict = isStrict
        fixableColumns = tables.map { table in
            guard isStrict, let entities = table.entityNumbers else { return [] }
            let optimisticLock = table.columns.firstIndex { $0.name.uppercased() == "Z_OPT" }
            return [optimisticLock, entities.count == 1 && table.columns.count > 1 ? 1 : nil].compactMap { $0 }
        }
        allEntityNumbers = tables.reduce(into: []) { $0.formUnion($1.entityNumbers ?? []) }
    }

    /// The index in `tables` of the table the page's records belong to, or nil.
    /// - Parameters:
    ///   - preferred: the table other evidence names (the pointer map leads to its root): the
    ///     page is that table's when most records fit it, and no other table's either way — a
    ///     record that does not fit means the page or the schema is damaged, not that another
    ///     table's page hangs from this root.
    ///   - candidates: the tables the page may belong to (nil: all).
    func identify(_ shapes: [Shape], preferred: Int? = nil, among candidates: Set<Int>? = nil) -> Int? {
        guard !shapes.isEmpty else { return nil }
        let majority = shapes.count / 2 + 1
        if let preferred {
            return preferred < tables.count && tally(shapes, table: preferred, evidenced: true).fits >= majority ? preferred : nil
        }
        var best: (index: Int, fits: Int, score: Int)?
        var tied = false
        // SQLite's own tables (`sqlite_sequence`) claim no page by shape: a lost leaf of a user
        // table shaped (text, integer) must not become last-rowid entries.
        for (index, table) in tables.enumerated() where !table.isWithoutRowid && !table.isSQLiteInternal && candidates?.contains(index) != false {
            let result = tally(shapes, table: index)
            guard result.fits >= majority else { continue }
            if let current = best {
                if (result.fits, result.score) > (current.fits, current.score) {
                    best = (index, result.fits, result.score)
                    tied = false
                } else if (result.fits, result.score) == (current.fits, current.score) {
                    tied = true
                }
            } else {
                best = (index, result.fits, result.score)
            }
        }
        return tied ? nil : best?.index
    }

    private func tally(_ shapes: [Shape], table: Int, evidenced: Bool = false) -> (fits: Int, score: Int) {
        var fits = 0, score = 0
        for shape in shapes {
            if let value = self.score(shape, table: table, evidenced: evidenced) {
                fits += 1
                score += value
            }
        }
        return (fits, score)
    }

    /// How well one record fits the table at `index` in `tables`; nil when it cannot be one of
    /// its rows.
    /// - Parameter evidenced: the page is this table's by other evidence (its tree leads to it,
    ///   or the pointer map to its root): in plain mode any value then fits any column, as SQLite
    ///   allows — an app's `''` in an INTEGER column or `'N/A'` in a REAL one is its data, and a
    ///   review's undamaged store had such leaves sent to lost and found and called damaged. Only
    ///   a page no evidence places, or whose values no SQLite table holds (a number in a TEXT
    ///   column), is judged by how typical its values are.
    func score(_ shape: Shape, table index: Int, evidenced: Bool = false) -> Int? {
        let table = tables[index]
        let count = shape.classes.count
        guard count >= 1, count <= table.columns.count else { return nil }
        var score = count == table.columns.count ? 4 : 0
        var atypical = 0, valued = 0, impossible = 0
        let fixable = fixableColumns[index]
        for (column, storage) in shape.classes.enumerated() {
            if column == table.rowidColumn {
                guard storage == .null else { return nil }
                score += 3
                continue
            }
            if fixable.contains(column) {
                if storage == .integer { score += 2 }
                continue
            }
            let affinity = affinities[index][column]
            switch Self.fit(storage, affinity) {
            case .typical:
                score += 2
                valued += 1
            // BLOB columns (and columns with no declared type) expect nothing: they hold anything,
            // even in Core Data (history tombstones).
            case .possible:
                guard affinity != .blob else {
                    valued += 1
                    break
                }
                if isStrict { return nil }
                atypical += 1
                valued += 1
                // A number in a TEXT column: SQLite turns numbers into text there, so no app
                // stored one; the column's declared type (or the record) is damaged.
                if affinity == .text, storage == .integer || storage == .real { impossible += 1 }
            case .null: score += 1
            }
        }
        // SQLite accepts any value in any column, but apps mostly store what they declare: a
        // record whose values are often not what the columns declare is another table's.
        if atypical * 4 > valued, !evidenced || isStrict || impossible > 0 { return nil }
        if let entities = table.entityNumbers {
            if let entity = shape.secondInteger, entities.contains(entity) {
                score += 8
            } else if !fixable.contains(1) || shape.secondInteger.map(allEntityNumbers.contains) == true {
                return nil
            }
        }
        return score
    }

    private enum Fit { case typical, possible, null }

    /// Storage classes each affinity holds (what Core Data writes is "typical"; REAL columns hold
    /// integral values as integers on disk).
    private static func fit(_ storage: RecordColumn.StorageClass, _ affinity: TableDefinition.Affinity) -> Fit {
        switch (storage, affinity) {
        case (.null, _): return .null
        case (.integer, .integer), (.integer, .real), (.real, .real), (.integer, .numeric), (.real, .numeric),
            (.text, .numeric), (.text, .text), (.blob, .blob):
            return .typical
        default: return .possible
        }
    }
}
