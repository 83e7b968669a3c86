import Foundation
import Testing
@testable import StoreRescue

/// A sample store read the way the tool reads any store (`OpenedStore` on a private copy):
/// its physical schema, its `Z_PRIMARYKEY` rows and its own model (from `Z_MODELCACHE`).
struct SampleStoreSchema {
    let relativePath: String
    let schema: PhysicalSchema
    /// `Z_PRIMARYKEY` rows below the history range, by `Z_ENT`.
    let entityNumbers: [StoreLayout.EntityNumber]
    /// The decoded model cache; nil when the store has none.
    let model: ManagedObjectModel?
    private let store: OpenedStore
    /// The copy's folder, kept while the store is open.
    private let directory: TemporaryDirectory?

    /// The first value of a query on the store.
    func scalar(_ sql: String) throws -> SQLiteValue? {
        try store.connection.scalar(sql)
    }

    /// Samples with a model cache: the ones a layout can be built for.
    static var storesWithModelCache: [String] {
        Samples.allStores.filter {
            !SampleStoreEvidence.storesWithoutModelCacheTable.contains($0) && !SampleStoreEvidence.storesWithNullModelCache.contains($0)
        }
    }

    /// Reads a private copy of a sample store.
    init(_ relativePath: String) throws {
        let directory = try TemporaryDirectory()
        try self.init(store: try OpenedStore(path: try directory.copySample(relativePath)), name: relativePath, directory: directory)
    }

    /// Reads a store a test made.
    init(absolutePath: String) throws {
        try self.init(store: try OpenedStore(path: absolutePath), name: absolutePath, directory: nil)
    }

    private init(store: OpenedStore, name: String, directory: TemporaryDirectory?) throws {
        self.relativePath = name
        self.store = store
        self.directory = directory
        schema = try PhysicalSchema.read(from: store.connection)
        entityNumbers = try store.connection.rows(
            "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT"
        ).map { row in
            StoreLayout.EntityNumber(ent: Int(row[0].int64 ?? -1), name: row[1].string ?? "", superEnt: Int(row[2].int64 ?? -1))
        }
        let hasModelCache = schema.table(named: "Z_MODELCACHE") != nil
        if hasModelCache, let blob = try store.connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE")?.data {
            model = try ModelArchiveDecoder.decodeModelCache(compressed: blob)
        } else {
            model = nil
        }
    }

    /// Entity and join tables (history, bookkeeping and anything else aside).
    var modelTables: [PhysicalSchema.Table] {
        schema.tables.filter { $0.category == .entity || $0.category == .joinTable }
    }

    /// Explicit indexes on entity and join tables.
    var modelIndexes: [PhysicalSchema.Index] {
        let names = Set(modelTables.map(\.name))
        return schema.indexes.filter { $0.isExplicit && names.contains($0.table) }
    }
}

/// What differs between a layout and a store's schema, each difference one readable line.
struct LayoutDifferences {
    var tables: [String] = []
    var columns: [String] = []
    var numbering: [String] = []
    var indexes: [String] = []
    var columnOrder: [String] = []
    var tableSQL: [String] = []
    var indexSQL: [String] = []

    init(layout: StoreLayout, store: SampleStoreSchema) {
        let real = Dictionary(uniqueKeysWithValues: store.modelTables.map { ($0.name, $0) })
        let mine = Dictionary(uniqueKeysWithValues: layout.tables.map { ($0.name, $0) })
        for name in Set(real.keys).subtracting(mine.keys).sorted() { tables.append("store has table \(name), layout does not") }
        for name in Set(mine.keys).subtracting(real.keys).sorted() { tables.append("layout has table \(name), store does not") }
        for (name, table) in mine.sorted(by: { $0.key < $1.key }) {
            guard let realTable = real[name] else { continue }
            let realColumns = realTable.columns.map { "\($0.name) \($0.type)" }
            let myColumns = table.columns.map { "\($0.name) \($0.type)" }
            let missing = Set(realColumns).subtracting(myColumns).sorted()
            let extra = Set(myColumns).subtracting(realColumns).sorted()
            if !missing.isEmpty { columns.append("\(name): store has \(missing.joined(separator: ", "))") }
            if !extra.isEmpty { columns.append("\(name): layout has \(extra.joined(separator: ", "))") }
            if missing.isEmpty, extra.isEmpty, realColumns != myColumns { columnOrder.append("\(name): columns in another order") }
            if let sql = realTable.sql, sql != table.createStatement { tableSQL.append("\(name):\n  store:  \(sql)\n  layout: \(table.createStatement)") }
        }
        let realNumbers = store.entityNumbers.map { "\($0.ent) \($0.name) \($0.superEnt)" }
        let myNumbers = layout.entityNumbers.map { "\($0.ent) \($0.name) \($0.superEnt)" }
        if realNumbers != myNumbers { numbering.append("store \(realNumbers) vs layout \(myNumbers)") }

        func key(_ name: String, _ table: String, _ columns: [String], _ unique: Bool) -> String {
            "\(unique ? "UNIQUE " : "")\(name) ON \(table) (\(columns.joined(separator: ", ")))"
        }
        let realIndexes = Set(store.modelIndexes.map { key($0.name, $0.table, $0.columns, $0.isUnique) })
        let myIndexes = Set(layout.indexes.map { key($0.name, $0.table, $0.columns, $0.isUnique) })
        for index in realIndexes.subtracting(myIndexes).sorted() { indexes.append("store has \(index)") }
        for index in myIndexes.subtracting(realIndexes).sorted() { indexes.append("layout has \(index)") }
        let realIndexSQL = Dictionary(store.modelIndexes.map { ($0.name, $0.sql ?? "") }, uniquingKeysWith: { first, _ in first })
        for index in layout.indexes {
            if let sql = realIndexSQL[index.name], sql != index.createStatement {
                indexSQL.append("\(index.name):\n  store:  \(sql)\n  layout: \(index.createStatement)")
            }
        }
    }

    /// Tables, columns (names and types, as sets) and numbering agree.
    var structureMatches: Bool { tables.isEmpty && columns.isEmpty && numbering.isEmpty }
    var indexesMatch: Bool { indexes.isEmpty }
    var report: String {
        (tables + columns + numbering + indexes + columnOrder + tableSQL + indexSQL).joined(separator: "\n")
    }
}
