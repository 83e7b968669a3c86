/// A column an app added itself to a Core Data entity table: no version of the model maps it
/// (not `Z_PK`/`Z_ENT`/`Z_OPT`, no attribute, relationship or ordering column of an entity in
/// that table). Core Data ignores it; the migrator carries it to the table its rows go to, with
/// its values, because nothing the store holds is dropped without a word
/// (`Docs/MIGRATE.md#an-apps-own-columns`).
///
/// Only the column's name (always quoted) and a declared type that is a plain type name are
/// taken from the store: constraints, `DEFAULT`, `COLLATE` and generated-column clauses are
/// never run as SQL; the column is carried as a nullable column of that type.
struct OwnColumn: Equatable {
    /// The name in the store, byte for byte.
    var name: String
    /// The declared type to write (`TEXT`, `VARCHAR(255)`), or nil for none: the store's was
    /// not a plain type name (`storeType` keeps it, for the report).
    var type: String?
    var storeType: String
    /// The base table it is read from (the store's, for the report).
    var baseTable: String
    /// The value on a row, over alias `r`.
    var expression: String

    /// `ZENTRY.ZAPPNOTE`.
    var qualifiedName: String { baseTable + "." + name }

    /// Whether two column names are one column to SQLite: the same bytes, ASCII letters
    /// compared without case (`String.sqliteNameKey`, as for table names).
    static func isSameName(_ a: String, _ b: String) -> Bool {
        a.sqliteNameKey == b.sqliteNameKey
    }

    /// The longest declared type carried.
    static let maximumTypeLength = 64

    /// `type` when it is a plain type name: letters, digits, spaces and underscores, then at
    /// most one parenthesised list of numbers (`DECIMAL(10, 2)`), at most 64 bytes; else nil.
    static func plainType(_ type: String) -> String? {
        let bytes = Array(type.utf8)
        guard bytes.count <= maximumTypeLength else { return nil }
        func isWordByte(_ byte: UInt8) -> Bool {
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 32 || byte == 95
        }
        var index = 0
        while index < bytes.count, isWordByte(bytes[index]) { index += 1 }
        if index == bytes.count { return type }
        guard bytes[index] == UInt8(ascii: "("), bytes.last == UInt8(ascii: ")") else { return nil }
        let inside = bytes[(index + 1)..<(bytes.count - 1)]
        let allowed: Set<UInt8> = Set("0123456789 ,+-".utf8)
        guard inside.allSatisfy({ allowed.contains($0) }), inside.contains(where: { (48...57).contains($0) }) else { return nil }
        return type
    }
}

/// An app's own column that is not carried, and why. Its non-NULL values (on the rows that
/// reach the hop) are counted and reported as discarded, or — a generated column, which holds
/// no data of its own — reported as left out.
struct LeftOutOwnColumn: Equatable {
    enum Reason: Equatable {
        /// The destination's layout uses the name itself (`table` at `version`).
        case nameTaken(table: String, version: String)
        /// A generated (computed) column: SQLite computes it, it holds no data.
        case generated
        /// A column of a many-to-many join table: the migration writes the relationship's links
        /// as pairs of keys (and orders), with no place for it.
        case joinTable(table: String)

        var summary: String {
            switch self {
            case .nameTaken(let table, let version): return "\(version) lays out a column of that name in \(table)"
            case .generated: return "a generated column: SQLite computes it from the row, it holds no data of its own"
            case .joinTable(let table):
                return "a column of the join table \(table): the migration writes a many-to-many relationship's links as pairs of keys, with no place for it"
            }
        }

        /// Whether its values are data the migration discards (a generated column's are not).
        var discardsData: Bool {
            if case .generated = self { return false }
            return true
        }
    }

    var column: OwnColumn
    var reason: Reason
    /// The rows it was on: the row source's FROM item and condition (over alias `r`).
    var from: String
    var condition: String
}

extension VirtualVersion {
    /// The own columns of `table` in the base, as `read` reads them, given the columns the
    /// base version's layout has there. Generated columns come back as left out.
    static func ownColumns(
        of table: StoreLayout.Table, physical: PhysicalSchema
    ) -> (carried: [OwnColumn], generated: [OwnColumn]) {
        guard let stored = physical.table(named: table.name) else { return ([], []) }
        func isLaidOut(_ name: String) -> Bool { table.columns.contains { OwnColumn.isSameName($0.name, name) } }
        let carried = stored.columns.filter { !isLaidOut($0.name) }.map { column in
            OwnColumn(
                name: column.name, type: OwnColumn.plainType(column.type), storeType: column.type, baseTable: stored.name,
                expression: SQLLiteral.column(column.name, of: RowSource.alias))
        }
        let generated = physical.generatedColumns.filter { $0.table.hasSameBytes(as: stored.name) && !isLaidOut($0.name) }.map { column in
            OwnColumn(
                name: column.name, type: nil, storeType: column.type, baseTable: stored.name,
                expression: SQLLiteral.column(column.name, of: RowSource.alias))
        }
        return (carried, generated)
    }

    /// Own columns whose name the layout of the table the rows now go to uses itself: taken
    /// off the row sources, and recorded as left out at this version.
    mutating func leaveOutOwnColumnsTakenByLayout() {
        for index in rowSources.indices where !rowSources[index].ownColumns.isEmpty {
            guard let table = layout.table(ofEntity: rowSources[index].entity, in: version.model) else { continue }
            let source = rowSources[index]
            var kept: [OwnColumn] = []
            for column in source.ownColumns {
                if table.columns.contains(where: { OwnColumn.isSameName($0.name, column.name) }) {
                    leftOutOwnColumns.append(LeftOutOwnColumn(
                        column: column, reason: .nameTaken(table: table.name, version: version.name), from: source.from, condition: source.condition))
                } else {
                    kept.append(column)
                }
            }
            rowSources[index].ownColumns = kept
        }
    }

    /// The own columns each table of this version holds: for each, every row source's that
    /// writes rows there, one column per name (the first declared type).
    func ownColumnsByTable() -> [String: [OwnColumn]] {
        var result: [String: [OwnColumn]] = [:]
        for source in rowSources where !source.ownColumns.isEmpty {
            guard let table = layout.table(ofEntity: source.entity, in: version.model) else { continue }
            for column in source.ownColumns where !(result[table.name] ?? []).contains(where: { OwnColumn.isSameName($0.name, column.name) }) {
                result[table.name, default: []].append(column)
            }
        }
        return result
    }
}
