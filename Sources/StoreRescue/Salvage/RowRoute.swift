/// Where the rows of one recovered table go: the output table, and for each of its columns where
/// the value comes from. Built once per table; applied to every row.
struct RowRoute: Sendable {
    /// The source of one bound value.
    enum ValueSource: Sendable, Equatable {
        /// Column `index` of the record; `fallback` when the record is shorter (a column added
        /// later) — and NULL when its bytes were lost to a broken overflow chain.
        case record(index: Int, fallback: SQLiteValue)
        /// The row's rowid (the cell's key).
        case rowid
        /// The page the row was found on, and its table's root page (lost-and-found tables).
        case pageNumber
        case rootPage
        /// The table a deleted row most likely came from (deleted-and-found tables).
        case likelyTable
        case constant(SQLiteValue)
        /// The record's bytes as read, as a blob: a row of more values than a table may have
        /// columns (lost and found).
        case wholeRecord
    }

    /// Rules a Core Data row must follow to go in (nil in plain mode, where anything SQLite
    /// accepted before is accepted again).
    struct CoreDataRules: Sendable {
        /// For each value in `sources`: the storage classes its declared type allows, as a mask of
        /// `StorageClass.bit`s (checked for every value of every row).
        var allowedClasses: [UInt8]
        /// The `Z_ENT` value position in `sources` and the entity numbers allowed there; when the
        /// table holds a single entity, a missing or wrong `Z_ENT` is set to it instead.
        var entityPosition: Int?
        var entityNumbers: Set<Int64>
        var soleEntity: Int64?
        /// `Z_OPT`: set to 1 when it is not an integer.
        var optimisticLockPosition: Int?
    }

    /// The output table's index in the writer.
    let target: Int
    let sources: [ValueSource]
    let rules: CoreDataRules?
    /// Core Data mode: the values `SalvageRowWriter.fits` checks — for each source that reads a
    /// record value, its column and the storage classes allowed there (`Z_ENT` and `Z_OPT` left
    /// out: they are fixed, not refused) — worked out once here, not for every row.
    let checkedColumns: [(column: Int, allowed: UInt8)]

    init(target: Int, sources: [ValueSource], rules: CoreDataRules?) {
        self.target = target
        self.sources = sources
        self.rules = rules
        checkedColumns = rules.map { rules in
            sources.enumerated().compactMap { offset, source in
                guard case .record(let column, _) = source, offset != rules.entityPosition, offset != rules.optimisticLockPosition else { return nil }
                return (column, rules.allowedClasses[offset])
            }
        } ?? []
    }
}
