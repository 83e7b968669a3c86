/// How the report names an app's own columns (`OwnColumn`): carried, or left out with the
/// values that went with them.
extension MigrationAnalysis {
    /// An app's own column carried to the target, with its values.
    public struct CarriedColumn: Sendable, Equatable, Encodable {
        /// In the store: `ZENTRY.ZAPPNOTE`.
        public var column: String
        /// At the target: `ZNOTE.ZAPPNOTE` (the rows' table there).
        public var to: String
        /// The declared type written, or nil: the store's (`storeType`) was not a plain type
        /// name, and the column is carried with none (its values are kept exactly).
        @NullEncoded public var declaredType: String?
        public var storeType: String
    }

    /// An app's own column that is not carried.
    public struct LeftOutColumn: Sendable, Equatable, Encodable {
        /// In the store: `ZENTRY.ZAPPNOTE`.
        public var column: String
        /// The hop that leaves it out (`V1 → V2`); the first hop for a generated column.
        public var hop: String
        /// Its non-NULL values on the rows that reach that hop.
        public var values: Int64
        /// True when those values are data the migration discards (counted in the hop's
        /// `discardedValues`); false for a generated column, which SQLite computes.
        public var discardsData: Bool
        public var reason: String
    }

    /// The name a discarded own column's values go by in a hop's `discardedValues`.
    static func discardedName(of column: String) -> String { "own column " + column }
}

extension VirtualVersion {
    /// Where this version's own columns came from and go: one entry per store column and table.
    func carriedOwnColumns() -> [MigrationAnalysis.CarriedColumn] {
        var result: [MigrationAnalysis.CarriedColumn] = []
        for source in rowSources where !source.ownColumns.isEmpty {
            guard let table = layout.table(ofEntity: source.entity, in: version.model) else { continue }
            for column in source.ownColumns {
                let entry = MigrationAnalysis.CarriedColumn(
                    column: column.qualifiedName, to: table.name + "." + column.name, declaredType: column.type, storeType: column.storeType)
                if !result.contains(entry) { result.append(entry) }
            }
        }
        return result
    }
}

extension [MigrationAnalysis.LeftOutColumn] {
    /// One entry per column, hop and reason, with the values of its row sources summed.
    func merged() -> [MigrationAnalysis.LeftOutColumn] {
        var result: [MigrationAnalysis.LeftOutColumn] = []
        for entry in self {
            if let index = result.firstIndex(where: { $0.column.hasSameBytes(as: entry.column) && $0.hop == entry.hop && $0.reason == entry.reason }) {
                result[index].values += entry.values
            } else {
                result.append(entry)
            }
        }
        return result
    }
}
