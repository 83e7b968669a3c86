import Foundation
import Testing
@testable import StoreRescue

/// The history tables are written exactly as the samples that have them: the SwiftData stores
/// and RMAdminStore (with `ZTOMBSTONE` columns), and knowledgeC 10.13's `ACHANGE`.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct PersistentHistoryLayoutTests {
    /// Stores whose history tables are the current form; the tombstone count each needs.
    static let currentHistoryStores: [String: Int] = [
        "stores/swiftdata_CartKitSwiftData_v1.sqlite": 0,
        "stores/swiftdata_ResourcesManager_a14090c_default.store": 0,
        "stores/swiftdata_ResourcesManager_wal/default.store": 0,
        // InstalledApp and RMCloudActivation preserve four attributes each in history.
        "stores/plaso_ios_RMAdminStore-Local.sqlite": 4,
    ]

    static func historyLayout(of store: SampleStoreSchema) throws -> StoreLayout.PersistentHistory {
        let model = try #require(store.model)
        let layout = try StoreLayoutBuilder.layout(for: model, options: StoreLayoutOptions(includesPersistentHistory: true))
        return try #require(layout.persistentHistory)
    }

    @Test(arguments: currentHistoryStores.keys.sorted())
    func historyTablesAndIndexesAreWrittenAsCoreDataDoes(relativePath: String) throws {
        let store = try SampleStoreSchema(relativePath)
        let history = try Self.historyLayout(of: store)
        let realTables = store.schema.tables.filter { $0.category == .history }
        #expect(realTables.count == 3)
        for table in history.tables {
            #expect(realTables.first { $0.name == table.name }?.sql == table.createStatement, "\(relativePath): \(table.name)")
        }
        let change = try #require(history.tables.first { $0.name == "ACHANGE" })
        #expect(change.columns.filter { $0.name.hasPrefix("ZTOMBSTONE") }.count == Self.currentHistoryStores[relativePath])
        let realIndexes = store.schema.indexes.filter { index in index.isExplicit && realTables.contains { $0.name == index.table } }
        #expect(Set(realIndexes.compactMap(\.sql)) == Set(history.indexes.map(\.createStatement)), "\(relativePath)")
        #expect(realIndexes.count == 8)
        // Core Data adds the history rows of Z_PRIMARYKEY with the first recorded transaction.
        let numbers = try store.schemaEntityNumbers(atLeast: 16001)
        let recorded = try store.historyTransactionCount()
        #expect(numbers == (recorded > 0 ? history.entityNumbers : []), "\(relativePath): \(recorded) transactions")
    }

    /// knowledgeC 10.13 (framework 851) has the older `ATRANSACTION` (no `*TS` columns) and no
    /// `ATRANSACTIONSTRING`; its `ACHANGE` is the current form, with three tombstones:
    /// AdditionChangeSet and DeletionChangeSet preserve three attributes each.
    @Test func tombstoneCountOnAnOlderStore() throws {
        let store = try SampleStoreSchema("stores/plaso_macos_knowledgec-10.13.db")
        let history = try Self.historyLayout(of: store)
        let change = try #require(history.tables.first { $0.name == "ACHANGE" })
        #expect(store.schema.table(named: "ACHANGE")?.sql == change.createStatement)
        #expect(change.columns.map(\.name).suffix(3) == ["ZTOMBSTONE0", "ZTOMBSTONE1", "ZTOMBSTONE2"])
        #expect(store.schema.table(named: "ATRANSACTIONSTRING") == nil)
    }

    @Test func noHistoryUnlessAskedFor() throws {
        let model = ManagedObjectModel(entities: [EntityDescription(name: "Item")])
        #expect(try StoreLayoutBuilder.layout(for: model).persistentHistory == nil)
        let layout = try StoreLayoutBuilder.layout(for: model, options: StoreLayoutOptions(includesPersistentHistory: true))
        #expect(layout.entityNumbers.map(\.ent) == [1])
        #expect(layout.persistentHistory?.entityNumbers.map(\.ent) == [16001, 16002, 16003])
        #expect(layout.persistentHistory?.entityNumbers.map(\.name) == ["CHANGE", "TRANSACTION", "TRANSACTIONSTRING"])
        let statements = layout.createStatements()
        let bookkeeping = try #require(statements.firstIndex(of: StoreLayout.bookkeepingStatements[0]))
        let history = try #require(statements.firstIndex { $0.hasPrefix("CREATE TABLE ACHANGE") })
        #expect(bookkeeping < history, "Core Data creates the history tables after the bookkeeping tables")
    }
}

extension SampleStoreSchema {
    /// Rows in `ATRANSACTION`.
    func historyTransactionCount() throws -> Int64 {
        let directory = try TemporaryDirectory()
        let store = try OpenedStore(path: try directory.copySample(relativePath))
        return try store.connection.scalar("SELECT count(*) FROM ATRANSACTION")?.int64 ?? -1
    }

    /// `Z_PRIMARYKEY` rows from `ent` up.
    func schemaEntityNumbers(atLeast ent: Int) throws -> [StoreLayout.EntityNumber] {
        let directory = try TemporaryDirectory()
        let store = try OpenedStore(path: try directory.copySample(relativePath))
        return try store.connection.rows(
            "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT >= ? ORDER BY Z_ENT", [.integer(Int64(ent))]
        ).map { StoreLayout.EntityNumber(ent: Int($0[0].int64 ?? -1), name: $0[1].string ?? "", superEnt: Int($0[2].int64 ?? -1)) }
    }
}
