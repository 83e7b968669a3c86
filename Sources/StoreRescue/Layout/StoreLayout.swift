/// The exact physical layout Core Data gives a model: tables, columns with their declared
/// types, indexes, and entity numbering. What `create` writes and what `match` compares a
/// store's physical schema against.
public struct StoreLayout: Sendable, Equatable, Codable {
    public struct Column: Sendable, Equatable, Hashable, Codable {
        public var name: String
        /// `INTEGER`, `FLOAT`, `VARCHAR`, `TIMESTAMP`, `BLOB`, `DECIMAL`.
        public var type: String
        public init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    public struct Table: Sendable, Equatable, Codable {
        public var name: String
        /// In Core Data's order (grouped by storage type); compare as a set.
        public var columns: [Column]
        /// Columns forming the primary key (`Z_PK`, or both sides of a join table).
        public var primaryKey: [String]
        /// The root entity whose hierarchy the table holds; nil for join tables.
        public var rootEntity: String?
        public init(name: String, columns: [Column], primaryKey: [String], rootEntity: String?) {
            self.name = name
            self.columns = columns
            self.primaryKey = primaryKey
            self.rootEntity = rootEntity
        }
    }

    public struct Index: Sendable, Equatable, Hashable, Codable {
        public var name: String
        public var table: String
        public var columns: [String]
        public var isUnique: Bool
        public init(name: String, table: String, columns: [String], isUnique: Bool) {
            self.name = name
            self.table = table
            self.columns = columns
            self.isUnique = isUnique
        }
    }

    /// One `Z_PRIMARYKEY` row (with `Z_MAX` 0 in a new store).
    public struct EntityNumber: Sendable, Equatable, Codable {
        public var ent: Int
        public var name: String
        public var superEnt: Int
        public init(ent: Int, name: String, superEnt: Int) {
            self.ent = ent
            self.name = name
            self.superEnt = superEnt
        }
    }

    /// Entity tables and join tables (not the bookkeeping tables).
    public var tables: [Table]
    public var indexes: [Index]
    public var entityNumbers: [EntityNumber]

    public init(tables: [Table], indexes: [Index], entityNumbers: [EntityNumber]) {
        self.tables = tables
        self.indexes = indexes
        self.entityNumbers = entityNumbers
    }

    public func table(named name: String) -> Table? {
        tables.first { $0.name == name }
    }
}
