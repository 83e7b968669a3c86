import Foundation

/// The tables, columns, indexes, triggers and views of a database, as SQLite reports them.
public struct PhysicalSchema: Sendable, Equatable, Codable {
    /// What a table is for, by Core Data's naming.
    public enum TableCategory: String, Sendable, Codable {
        /// `Z_METADATA`, `Z_PRIMARYKEY`, `Z_MODELCACHE`.
        case bookkeeping
        /// `Z<ENTITY>`: one inheritance hierarchy's rows.
        case entity
        /// `Z_<n><RELATIONSHIP>`: a many-to-many join table.
        case joinTable
        /// Persistent history: `ATRANSACTION`, `ACHANGE`, `ATRANSACTIONSTRING`.
        case history
        /// CloudKit mirroring: `ANSCK*`.
        case cloudKit
        /// SQLite's own (`sqlite_sequence`, `sqlite_stat1`, …).
        case sqliteInternal
        /// Anything Core Data does not write.
        case other
    }

    public struct Column: Sendable, Equatable, Codable {
        public var name: String
        /// The declared type (`INTEGER`, `VARCHAR`, `TIMESTAMP`, …), as written.
        public var type: String
        public var isNotNull: Bool
        public var isPrimaryKey: Bool
    }

    public struct Table: Sendable, Equatable, Codable {
        public var name: String
        public var category: TableCategory
        public var columns: [Column]
        @NullEncoded public var sql: String?
    }

    public struct Index: Sendable, Equatable, Codable {
        public var name: String
        public var table: String
        /// Column names in index order (`<expr>` for an expression element).
        public var columns: [String]
        public var isUnique: Bool
        /// False for indexes SQLite makes itself (`sqlite_autoindex_*`, primary keys).
        public var isExplicit: Bool
        @NullEncoded public var sql: String?
    }

    /// A trigger or a view: Core Data writes few; anything here is worth a look.
    public struct SchemaObject: Sendable, Equatable, Codable {
        public var name: String
        public var table: String
        @NullEncoded public var sql: String?
    }

    /// A generated column (`AS (…)`, `VIRTUAL` or `STORED`), which `pragma_table_info` leaves
    /// out of `Table.columns`: SQLite computes it; it holds no data of its own.
    public struct GeneratedColumn: Sendable, Equatable, Codable {
        public var table: String
        public var name: String
        public var type: String
    }

    public var tables: [Table]
    public var indexes: [Index]
    public var triggers: [SchemaObject]
    public var views: [SchemaObject]
    /// The generated columns of entity tables (Core Data writes none: an app's own, which the
    /// migrator reports as left out). Not part of the encoded schema.
    public var generatedColumns: [GeneratedColumn] = []

    private enum CodingKeys: String, CodingKey {
        case tables, indexes, triggers, views
    }

    /// The table SQLite would take for `name`: bytes compared, ASCII letters without case
    /// (`caseInsensitiveCompare` also folds `ſ` to `s`: a review's app table `ZPOſT` was read
    /// as Core Data's `ZPOST`).
    public func table(named name: String) -> Table? {
        let key = name.sqliteNameKey
        return tables.first { $0.name.sqliteNameKey == key }
    }

    /// The most schema objects read: a hostile file cannot make the reader allocate without bound.
    public static let maximumObjects = 100_000

    /// Reads the schema through `connection`. Every name taken from the file is bound as a
    /// parameter or quoted, never spliced into SQL.
    public static func read(from connection: SQLiteConnection) throws -> PhysicalSchema {
        let objects = try connection.rows(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name", maximumRows: maximumObjects)
        var schema = PhysicalSchema(tables: [], indexes: [], triggers: [], views: [])
        let columnStatement = try connection.prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)")
        let indexListStatement = try connection.prepare("SELECT name, \"unique\", origin FROM pragma_index_list(?)")
        let indexInfoStatement = try connection.prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
        let generatedStatement = try connection.prepare("SELECT name, type FROM pragma_table_xinfo(?) WHERE hidden IN (2, 3)")
        for object in objects {
            guard case .text(let type) = object[0], case .text(let name) = object[1] else { continue }
            let tableName = object[2].string ?? ""
            let sql = object[3].string
            switch type {
            case "table":
                columnStatement.reset()
                try columnStatement.bind([.text(name)])
                var columns: [Column] = []
                while try columnStatement.step() {
                    columns.append(Column(
                        name: columnStatement.column(0).string ?? "",
                        type: columnStatement.column(1).string ?? "",
                        isNotNull: columnStatement.column(2).int64 == 1,
                        isPrimaryKey: (columnStatement.column(3).int64 ?? 0) > 0))
                }
                let category = category(ofTable: name)
                schema.tables.append(Table(name: name, category: category, columns: columns, sql: sql))
                if category == .entity {
                    generatedStatement.reset()
                    try generatedStatement.bind([.text(name)])
                    while try generatedStatement.step() {
                        schema.generatedColumns.append(GeneratedColumn(
                            table: name, name: generatedStatement.column(0).string ?? "", type: generatedStatement.column(1).string ?? ""))
                    }
                }
            case "trigger": schema.triggers.append(SchemaObject(name: name, table: tableName, sql: sql))
            case "view": schema.views.append(SchemaObject(name: name, table: tableName, sql: sql))
            default: break
            }
        }
        for table in schema.tables {
            indexListStatement.reset()
            try indexListStatement.bind([.text(table.name)])
            while try indexListStatement.step() {
                guard let indexName = indexListStatement.column(0).string else { continue }
                let origin = indexListStatement.column(2).string ?? "c"
                indexInfoStatement.reset()
                try indexInfoStatement.bind([.text(indexName)])
                var columns: [String] = []
                while try indexInfoStatement.step() {
                    columns.append(indexInfoStatement.column(0).string ?? "<expr>")
                }
                let sql = objects.first { $0[0] == .text("index") && $0[1] == .text(indexName) }?[3].string
                schema.indexes.append(Index(
                    name: indexName, table: table.name, columns: columns,
                    isUnique: indexListStatement.column(1).int64 == 1, isExplicit: origin == "c", sql: sql))
            }
        }
        schema.indexes.sort { ($0.table, $0.name) < ($1.table, $1.name) }
        return schema
    }

    /// The category Core Data's naming gives a table.
    public static func category(ofTable name: String) -> TableCategory {
        // Names as SQLite compares them: bytes, ASCII letters folded. `uppercased()` also folds
        // `ı` and `ſ` (an app's `Z_PR\u{131}MARYKEY` was Core Data's bookkeeping table, and left
        // out of a migration without a word), and `hasPrefix` compares characters
        // (`sqlite_\u{301}x`'s `_` is another character).
        let key = name.sqliteNameKey
        func isNamed(_ other: String) -> Bool { key == other.sqliteNameKey }
        if ["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"].contains(where: isNamed) { return .bookkeeping }
        if name.hasASCIICaseInsensitiveBytePrefix("sqlite_") { return .sqliteInternal }
        if ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"].contains(where: isNamed) { return .history }
        if name.hasASCIICaseInsensitiveBytePrefix("ANSCK") { return .cloudKit }
        if name.hasASCIICaseInsensitiveBytePrefix("Z_") {
            return key.dropFirst(2).first.map { (48...57).contains($0) } == true ? .joinTable : .other
        }
        if name.hasASCIICaseInsensitiveBytePrefix("Z") { return .entity }
        return .other
    }
}
