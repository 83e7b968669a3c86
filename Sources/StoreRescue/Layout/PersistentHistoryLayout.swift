/// The persistent history tables exactly as current Core Data and SwiftData write them (copied
/// from `swiftdata_CartKitSwiftData_v1.sqlite`, framework 1523, and identical in the
/// ResourcesManager stores, framework 1345, and RMAdminStore, framework 1044).
///
/// `ACHANGE` gets one `ZTOMBSTONE<i> BLOB` column per attribute preserved in history on deletion,
/// as many as the entity with the most such attributes has (RMAdminStore: `ZTOMBSTONE0`…`3`,
/// InstalledApp and RMCloudActivation preserving four each; the SwiftData samples: none).
enum PersistentHistoryLayout {
    /// `Z_ENT` of the first history entity (`CHANGE`); `TRANSACTION` and `TRANSACTIONSTRING`
    /// follow. Model entities are numbered below it.
    static let firstEntityNumber = 16001

    static func layout(tombstoneCount: Int) -> StoreLayout.PersistentHistory {
        func column(_ name: String, _ type: String) -> StoreLayout.Column { StoreLayout.Column(name: name, type: type) }
        let fixed = [column("Z_PK", "INTEGER"), column("Z_ENT", "INTEGER"), column("Z_OPT", "INTEGER")]
        let change = StoreLayout.Table(
            name: "ACHANGE",
            columns: fixed + [
                column("ZCHANGETYPE", "INTEGER"), column("ZENTITY", "INTEGER"), column("ZENTITYPK", "INTEGER"),
                column("ZTRANSACTIONID", "INTEGER"), column("ZCOLUMNS", "BLOB"),
            ] + (0..<max(0, tombstoneCount)).map { column("ZTOMBSTONE\($0)", "BLOB") },
            primaryKey: ["Z_PK"], rootEntity: nil)
        let transaction = StoreLayout.Table(
            name: "ATRANSACTION",
            columns: fixed + [
                column("ZAUTHORTS", "INTEGER"), column("ZBUNDLEIDTS", "INTEGER"), column("ZCONTEXTNAMETS", "INTEGER"),
                column("ZPROCESSIDTS", "INTEGER"), column("ZTIMESTAMP", "FLOAT"), column("ZAUTHOR", "VARCHAR"),
                column("ZBUNDLEID", "VARCHAR"), column("ZCONTEXTNAME", "VARCHAR"), column("ZPROCESSID", "VARCHAR"),
                column("ZQUERYGEN", "BLOB"),
            ],
            primaryKey: ["Z_PK"], rootEntity: nil)
        let strings = StoreLayout.Table(
            name: "ATRANSACTIONSTRING", columns: fixed + [column("ZNAME", "VARCHAR")], primaryKey: ["Z_PK"], rootEntity: nil)
        func foreignKey(_ table: String, _ column: String) -> StoreLayout.Index {
            StoreLayout.Index(name: "\(table)_\(column)_INDEX", table: table, columns: [column], isUnique: false)
        }
        let indexes = [
            foreignKey("ACHANGE", "ZTRANSACTIONID"),
            foreignKey("ATRANSACTION", "ZAUTHORTS"),
            foreignKey("ATRANSACTION", "ZBUNDLEIDTS"),
            foreignKey("ATRANSACTION", "ZCONTEXTNAMETS"),
            foreignKey("ATRANSACTION", "ZPROCESSIDTS"),
            StoreLayout.Index(
                name: "Z_TRANSACTION_TransactionAuthorIndex", table: "ATRANSACTION", columns: ["ZAUTHOR"], isUnique: false,
                columnOrders: [.ascending]),
            StoreLayout.Index(
                name: "Z_TRANSACTION_TransactionTimestampIndex", table: "ATRANSACTION", columns: ["ZTIMESTAMP"],
                isUnique: false, columnOrders: [.ascending]),
            StoreLayout.Index(
                name: "Z_TRANSACTIONSTRING_UNIQUE_NAME", table: "ATRANSACTIONSTRING", columns: ["ZNAME"], isUnique: true,
                columnOrders: [.ascending]),
        ]
        let numbers = ["CHANGE", "TRANSACTION", "TRANSACTIONSTRING"].enumerated().map { offset, name in
            StoreLayout.EntityNumber(ent: firstEntityNumber + offset, name: name, superEnt: 0)
        }
        return StoreLayout.PersistentHistory(tables: [change, transaction, strings], indexes: indexes, entityNumbers: numbers)
    }

    /// The most attributes preserved in history on deletion that one entity has, inherited ones
    /// included (a redeclaration counted once).
    static func tombstoneCount(for model: NumberedModel) -> Int {
        model.entities.map { entity in
            var preserved: [String: Bool] = [:]
            for ancestor in model.lineage(of: entity.name) {
                for attribute in ancestor.attributes { preserved[attribute.name] = attribute.preservesValueInHistoryOnDeletion }
            }
            return preserved.values.filter { $0 }.count
        }.max() ?? 0
    }
}
