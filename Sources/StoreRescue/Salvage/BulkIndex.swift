import Foundation

/// One index of a table a bulk load fills (`SalvageBulkLoad`): its name, root page, whether it is
/// UNIQUE, and its key columns — what building its tree ourselves (`IndexKeySorter`,
/// `IndexTreeBuilder`) needs, read from the new database's schema before any row goes in.
struct BulkIndex: Equatable {
    struct Column: Equatable {
        /// The table column (`pragma_index_xinfo.cid`).
        var tableColumn: Int
        var descending: Bool
        var affinity: TableDefinition.Affinity
    }

    var name: String
    var rootPage: UInt32
    var isUnique: Bool
    var columns: [Column]

    /// Key columns an index record of ours may hold: a header byte per column stays one byte
    /// and the record stays far below the smallest page's local payload limit.
    static let maximumOwnColumns = 8

    /// Whether salvage may write this index's tree itself (when every key value is one it can
    /// order: see `IndexKeySorter`). Not for REAL-affinity columns, whose stored integers SQLite
    /// turns into reals before it writes an index record: those are left to `REINDEX`.
    var isBuiltPageByPage: Bool {
        !columns.isEmpty && columns.count <= Self.maximumOwnColumns && rootPage >= 2
            && !columns.contains { $0.affinity == .real || $0.tableColumn < 0 }
    }

    /// Two indexes with the same key columns hold the same entries: one set of sorted keys
    /// writes both trees.
    func hasSameKeys(as other: BulkIndex) -> Bool { columns == other.columns }

    /// The indexes of `table` in the new database, in creation order; nil when one is not a
    /// whole index on plain columns in the BINARY collation (which a bulk load cannot leave to
    /// be filled afterwards: partial, on expressions, or with another collation).
    static func read(table: String, connection: SQLiteConnection) throws -> [BulkIndex]? {
        var indexes: [BulkIndex] = []
        let list = try connection.rows("""
            SELECT l.name, l."unique", l.partial, s.rootpage FROM pragma_index_list(?) AS l \
            LEFT JOIN sqlite_schema AS s ON s.type = 'index' AND s.name = l.name ORDER BY s.rowid
            """, [.text(table)])
        let declared = Dictionary(
            try connection.rows("SELECT cid, type FROM pragma_table_info(?)", [.text(table)]).compactMap { row in
                row[0].int64.map { (Int($0), row[1].string ?? "") }
            }, uniquingKeysWith: { first, _ in first })
        for row in list {
            guard let name = row[0].string, row[2].int64 == 0, let root = row[3].int64, root >= 2, root <= Int64(UInt32.max) else { return nil }
            var columns: [Column] = []
            for key in try connection.rows("SELECT cid, desc, coll FROM pragma_index_xinfo(?) WHERE key ORDER BY seqno", [.text(name)]) {
                guard let cid = key[0].int64, cid >= 0, key[2].string == "BINARY" else { return nil }
                columns.append(Column(
                    tableColumn: Int(cid), descending: key[1].int64 == 1,
                    affinity: TableDefinition.affinity(of: declared[Int(cid)] ?? "")))
            }
            indexes.append(BulkIndex(name: name, rootPage: UInt32(root), isUnique: row[1].int64 == 1, columns: columns))
        }
        return indexes
    }
}
