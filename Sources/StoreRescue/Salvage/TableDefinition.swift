import Foundation

/// A table as salvage needs it: the columns a record of it holds, in record order, with the
/// declared type of each, which column (if any) is the rowid, and the values columns added later
/// take in older, shorter records.
struct TableDefinition: Sendable, Equatable {
    struct Column: Sendable, Equatable {
        var name: String
        /// As declared (`INTEGER`, `VARCHAR(255)`, …; empty when none).
        var declaredType: String
        /// The value of this column in a record written before the column was added
        /// (`ALTER TABLE … ADD COLUMN … DEFAULT`): a literal default, else NULL.
        var defaultValue: SQLiteValue
    }

    var name: String
    /// Stored columns in record order (virtual generated columns are not stored).
    var columns: [Column]
    /// The `INTEGER PRIMARY KEY` column: its value is the rowid and the record holds NULL for it.
    var rowidColumn: Int?
    var isWithoutRowid: Bool
    /// A `WITHOUT ROWID` table's record layout: record value `i` is column `recordColumns[i]`
    /// (the primary key's columns first, then the others in table order, as SQLite's index
    /// b-tree holds them); and its primary key's columns, in key order. Nil otherwise.
    var recordColumns: [Int]?
    var primaryKeyColumns: [Int]?
    /// The root page from `sqlite_schema`; nil for a table known only from a catalog layout.
    var rootPage: UInt32?
    /// Core Data entity tables: the `Z_ENT` values its rows may hold (`Z_ENT` is column 1).
    var entityNumbers: Set<Int64>?
    /// The rowid column was declared `AUTOINCREMENT` (SQLite never hands out a rowid twice and
    /// keeps the last in `sqlite_sequence`).
    var isAutoincrement = false
    /// Made from a catalog version's layout (`init(layoutTable:)`), not read from the damaged
    /// schema: the store's own columns for it are unknown, and its rows are read as the
    /// version's.
    var isDefinedByLayout = false

    /// SQLite's own table that keeps `AUTOINCREMENT` tables' last rowids.
    static let sequenceTableName = "sqlite_sequence"

    /// `sqlite_sequence` as SQLite creates it (`CREATE TABLE sqlite_sequence(name,seq)`), at
    /// `rootPage` (nil: its schema row is lost). Its statement is not parsed: SQLite refuses to
    /// create a table of that name.
    static func sequenceTable(rootPage: UInt32?) -> TableDefinition {
        TableDefinition(
            name: sequenceTableName,
            columns: [Column(name: "name", declaredType: "", defaultValue: .null), Column(name: "seq", declaredType: "", defaultValue: .null)],
            rowidColumn: nil, isWithoutRowid: false, rootPage: rootPage)
    }

    /// One of SQLite's own tables (`sqlite_sequence`, `sqlite_stat1`, …).
    var isSQLiteInternal: Bool { name.hasASCIICaseInsensitiveBytePrefix("sqlite_") }

    /// The definition of a Core Data table as a version's layout gives it (no schema to read it
    /// from): `Z_PK` is the rowid of entity tables.
    init(layoutTable table: StoreLayout.Table, entityNumbers: Set<Int64>?) {
        name = table.name
        columns = table.columns.map { Column(name: $0.name, declaredType: $0.type, defaultValue: .null) }
        rowidColumn = table.primaryKey.count == 1 ? table.columns.firstIndex { $0.name == table.primaryKey[0] } : nil
        isWithoutRowid = false
        rootPage = nil
        self.entityNumbers = entityNumbers
        isDefinedByLayout = true
    }

    init(name: String, columns: [Column], rowidColumn: Int?, isWithoutRowid: Bool, rootPage: UInt32?, entityNumbers: Set<Int64>? = nil) {
        self.name = name
        self.columns = columns
        self.rowidColumn = rowidColumn
        self.isWithoutRowid = isWithoutRowid
        self.rootPage = rootPage
        self.entityNumbers = entityNumbers
    }

    /// The column's type affinity (SQLite §3.1 "Determination Of Column Affinity").
    static func affinity(of declaredType: String) -> Affinity {
        let type = declaredType.uppercased()
        if type.contains("INT") { return .integer }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return .text }
        if type.isEmpty || type.contains("BLOB") { return .blob }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return .real }
        return .numeric
    }

    enum Affinity: Sendable {
        case integer, text, blob, real, numeric
    }
}
