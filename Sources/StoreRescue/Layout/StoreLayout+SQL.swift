/// The SQL Core Data writes for a layout, character for character as it appears in
/// `sqlite_schema` of a store it created (spacing included: `CREATE TABLE ZITEM ( Z_PK INTEGER
/// PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )`).
///
/// Core Data writes identifiers unquoted. The builder only accepts names that are plain
/// identifiers, so the canonical text is safe to run; a name that is not (from a layout built by
/// hand) is written quoted, which keeps the statement safe at the cost of the canonical text.
extension StoreLayout {
    /// The bookkeeping tables, as Core Data creates them (after the entity tables and indexes).
    public static let bookkeepingStatements = [
        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
        "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
        "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)",
    ]

    /// Every `CREATE` statement of a new store, in the order Core Data runs them: entity and join
    /// tables, their indexes, the bookkeeping tables, then the history tables and indexes.
    public func createStatements(includingBookkeeping: Bool = true) -> [String] {
        var statements = tables.map(\.createStatement) + indexes.map(\.createStatement)
        if includingBookkeeping { statements += Self.bookkeepingStatements }
        if let persistentHistory {
            statements += persistentHistory.tables.map(\.createStatement) + persistentHistory.indexes.map(\.createStatement)
        }
        return statements
    }

    /// `name` as written in SQL: bare when it is a plain identifier, quoted otherwise.
    static func sqlName(_ name: String) -> String {
        NumberedModel.isPlainIdentifier(name) ? name : name.quotedSQLIdentifier
    }
}

extension StoreLayout.Table {
    /// `CREATE TABLE <name> ( <column> <type>[ PRIMARY KEY], …[, PRIMARY KEY (<a>, <b>)] )`.
    public var createStatement: String {
        var parts = columns.map { column in
            var part = StoreLayout.sqlName(column.name) + " " + column.type
            if primaryKey == [column.name] { part += " PRIMARY KEY" }
            return part
        }
        if primaryKey.count > 1 {
            parts.append("PRIMARY KEY (" + primaryKey.map(StoreLayout.sqlName).joined(separator: ", ") + ")")
        }
        return "CREATE TABLE \(StoreLayout.sqlName(name)) ( \(parts.joined(separator: ", ")) )"
    }
}

extension StoreLayout.Index {
    /// `CREATE [UNIQUE ]INDEX <name> ON <table> (<column>[ COLLATE BINARY ASC|DESC], …)`.
    public var createStatement: String {
        let elements = columns.enumerated().map { offset, column in
            let order = offset < columnOrders.count ? columnOrders[offset] : .unspecified
            let name = StoreLayout.sqlName(column)
            switch order {
            case .unspecified: return name
            case .ascending: return name + " COLLATE BINARY ASC"
            case .descending: return name + " COLLATE BINARY DESC"
            }
        }
        let unique = isUnique ? "UNIQUE " : ""
        return "CREATE \(unique)INDEX \(StoreLayout.sqlName(name)) ON \(StoreLayout.sqlName(table)) (\(elements.joined(separator: ", ")))"
    }
}
