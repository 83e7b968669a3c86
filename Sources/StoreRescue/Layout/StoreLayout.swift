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
        /// How one column of an index is written in its `CREATE INDEX` statement.
        public enum ColumnOrder: String, Sendable, Hashable, Codable {
            /// The bare column (`ZOWNER`): the keys Core Data adds itself (foreign keys, `Z_ENT`,
            /// join tables).
            case unspecified
            /// `ZNAME COLLATE BINARY ASC`: fetch indexes, indexed properties, uniqueness constraints.
            case ascending
            /// `ZNAME COLLATE BINARY DESC`: a descending fetch index element.
            case descending
        }

        public var name: String
        public var table: String
        public var columns: [String]
        public var isUnique: Bool
        /// One entry per column; empty means every column is `.unspecified`. Compare indexes
        /// with a store's by name, table, columns and uniqueness: SQLite reports no order.
        public var columnOrders: [ColumnOrder]

        public init(name: String, table: String, columns: [String], isUnique: Bool, columnOrders: [ColumnOrder] = []) {
            self.name = name
            self.table = table
            self.columns = columns
            self.isUnique = isUnique
            self.columnOrders = columnOrders
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

    /// The persistent history tables Core Data adds when history tracking is on (always, in
    /// SwiftData stores): `ACHANGE`, `ATRANSACTION`, `ATRANSACTIONSTRING`, their indexes, and
    /// entity numbers 16001–16003. Kept apart from `tables`, because a store's history tables
    /// depend on an option, not on the model, and comparisons usually leave them aside.
    public struct PersistentHistory: Sendable, Equatable, Codable {
        public var tables: [Table]
        public var indexes: [Index]
        /// The numbers Core Data gives the history entities (16001 `CHANGE`, 16002 `TRANSACTION`,
        /// 16003 `TRANSACTIONSTRING`). Core Data adds their `Z_PRIMARYKEY` rows when it first
        /// records history: a store whose history is still empty has none (ResourcesManager
        /// a14090c), so a new store gets none either.
        public var entityNumbers: [EntityNumber]
        public init(tables: [Table], indexes: [Index], entityNumbers: [EntityNumber]) {
            self.tables = tables
            self.indexes = indexes
            self.entityNumbers = entityNumbers
        }
    }

    /// How one relationship is kept in the tables: what a migration reads links from and
    /// writes them to.
    public enum RelationshipStorage: Sendable, Equatable, Hashable, Codable {
        /// A column of the entity's own table holds the destination's `Z_PK` (a to-one).
        /// `entityColumn` (`Z<n>_REL`) holds the destination's `Z_ENT` when the destination
        /// entity has subentities; `inverseOrderColumn` (`Z_FOK_REL`) holds this object's
        /// position in the destination's ordered inverse.
        case foreignKey(column: String, entityColumn: String?, inverseOrderColumn: String?)
        /// Nothing of its own: the inverse to-one's column holds the link (a to-many whose
        /// inverse is a to-one).
        case inverse
        /// A row of a join table per link (many-to-many). `ownColumn` holds this entity's
        /// `Z_PK`, `otherColumn` the destination's; `orderColumn` the destination's position in
        /// this (ordered) relationship, `inverseOrderColumn` this object's position in the inverse.
        case joinTable(table: String, ownColumn: String, otherColumn: String, orderColumn: String?, inverseOrderColumn: String?)
        /// A hidden column of the destination's table holds this object's `Z_PK` (a to-many with
        /// no inverse); `orderColumn` the destination's position when ordered.
        case destinationColumn(table: String, column: String, orderColumn: String?)
    }

    /// Entity tables and join tables (not the bookkeeping tables), in Core Data's creation
    /// order: each hierarchy's table in entity-number order, followed by the join tables its
    /// entities own.
    public var tables: [Table]
    /// In Core Data's creation order.
    public var indexes: [Index]
    public var entityNumbers: [EntityNumber]
    /// Present when the layout was built with persistent history.
    public var persistentHistory: PersistentHistory?
    /// Entity name → property name → the column of the entity's table that holds it, for every
    /// stored attribute and to-one relationship, inherited ones included. Sibling entities may
    /// hold same-named properties in different columns (`ZPASSCODE`, `ZPASSCODE1`).
    public var propertyColumns: [String: [String: String]]
    /// Entity name → relationship name → how it is stored, for every persistent relationship,
    /// inherited ones included.
    public var relationshipStorage: [String: [String: RelationshipStorage]]

    public init(
        tables: [Table], indexes: [Index], entityNumbers: [EntityNumber], persistentHistory: PersistentHistory? = nil,
        propertyColumns: [String: [String: String]] = [:], relationshipStorage: [String: [String: RelationshipStorage]] = [:]
    ) {
        self.tables = tables
        self.indexes = indexes
        self.entityNumbers = entityNumbers
        self.persistentHistory = persistentHistory
        self.propertyColumns = propertyColumns
        self.relationshipStorage = relationshipStorage
    }

    /// The table holding the rows of `entity`'s hierarchy.
    public func table(ofEntity entity: String, in model: ManagedObjectModel) -> Table? {
        guard let description = model.entity(named: entity) else { return nil }
        let root = model.ancestry(of: description).last?.name ?? entity
        return tables.first { $0.rootEntity == root }
    }

    /// `Z_ENT` of the entity named `name`.
    public func entityNumber(of name: String) -> Int? {
        entityNumbers.first { $0.name == name }?.ent
    }

    public func table(named name: String) -> Table? {
        tables.first { $0.name == name }
    }
}
