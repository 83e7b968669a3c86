/// Computes the exact physical layout Core Data gives a model: entity numbers, one table per
/// inheritance hierarchy, columns with their declared types and Core Data's names and order,
/// join tables, and every index. Every rule is checked against the real stores in the samples;
/// `Docs/LAYOUT.md` lists each rule with its evidence.
///
/// ```swift
/// let layout = try StoreLayoutBuilder.layout(for: model)
/// print(layout.createStatements().joined(separator: ";\n"))
/// ```
public enum StoreLayoutBuilder {
    /// The layout of `model` without persistent history.
    ///
    /// - Throws: `LayoutError` for a model that cannot be laid out (duplicate or non-identifier
    ///   names, an unknown superentity, destination or inverse, an inheritance cycle, two roots
    ///   whose tables would clash, an attribute type with no column).
    public static func layout(for model: ManagedObjectModel) throws -> StoreLayout {
        try layout(for: model, options: StoreLayoutOptions())
    }

    /// The layout of `model`, with persistent history when `options` ask for it.
    ///
    /// - Throws: `LayoutError`, as `layout(for:)`.
    public static func layout(for model: ManagedObjectModel, options: StoreLayoutOptions) throws -> StoreLayout {
        let numbered = try NumberedModel(model)
        let joinTables = try JoinTablePlanner.plan(numbered)
        var tables: [StoreLayout.Table] = []
        var indexes: [StoreLayout.Index] = []
        var propertyColumns: [String: [String: String]] = [:]
        var declaredStorage: [String: [String: StoreLayout.RelationshipStorage]] = [:]
        let joinTablesByRoot = Dictionary(grouping: joinTables) { numbered.root(of: $0.ownerEntity) }
        for entity in numbered.entities where entity.superentityName == nil {
            let table = try HierarchyTableBuilder(model: numbered, root: entity).build()
            tables.append(table.table)
            propertyColumns.merge(table.columnsByEntity) { first, _ in first }
            declaredStorage.merge(table.relationshipStorage) { first, second in first.merging(second) { mine, _ in mine } }
            let owned = joinTablesByRoot[entity.name] ?? []
            tables.append(contentsOf: owned.map(\.table))
            indexes.append(contentsOf: table.foreignKeyIndexes)
            indexes.append(contentsOf: owned.map(\.index))
            if let entIndex = table.entityColumnIndex { indexes.append(entIndex) }
            indexes.append(contentsOf: try EntityIndexBuilder(model: numbered, columns: table.columnsByEntity).indexes(forHierarchyOf: entity))
        }
        for joinTable in joinTables {
            for side in joinTable.sides { declaredStorage[side.entity, default: [:]][side.relationship] = side.storage }
        }
        indexes = try uniqueIndexes(indexes)
        try checkTableNames(tables)
        try checkColumnCounts(tables: tables, indexes: indexes)
        var history: StoreLayout.PersistentHistory?
        if options.includesPersistentHistory {
            history = PersistentHistoryLayout.layout(tombstoneCount: PersistentHistoryLayout.tombstoneCount(for: numbered))
        }
        return StoreLayout(
            tables: tables, indexes: indexes, entityNumbers: entityNumbers(numbered), persistentHistory: history,
            propertyColumns: propertyColumns, relationshipStorage: inheritedStorage(declaredStorage, model: numbered))
    }

    /// Each entity's relationship storage with its ancestors' added (a subentity's rows keep the
    /// links of the relationships it inherits in the same places).
    static func inheritedStorage(
        _ declared: [String: [String: StoreLayout.RelationshipStorage]], model: NumberedModel
    ) -> [String: [String: StoreLayout.RelationshipStorage]] {
        var result: [String: [String: StoreLayout.RelationshipStorage]] = [:]
        for entity in model.entities {
            var storage: [String: StoreLayout.RelationshipStorage] = [:]
            for ancestor in model.lineage(of: entity.name) {
                storage.merge(declared[ancestor.name] ?? [:]) { _, nearer in nearer }
            }
            result[entity.name] = storage
        }
        return result
    }

    /// The `Z_PRIMARYKEY` rows Core Data writes for `model` (with `Z_MAX` 0): entities numbered
    /// depth-first, pre-order, roots and each entity's subentities in case-insensitive name order.
    ///
    /// - Throws: `LayoutError` for duplicate or non-identifier names, an unknown superentity or an
    ///   inheritance cycle.
    public static func entityNumbers(for model: ManagedObjectModel) throws -> [StoreLayout.EntityNumber] {
        entityNumbers(try NumberedModel(model))
    }

    /// True when Core Data numbers an entity named `lhs` before a sibling named `rhs`: names
    /// compared with ASCII letters folded to lower case, ties broken by the exact names.
    public static func precedesInNumbering(_ lhs: String, _ rhs: String) -> Bool {
        NumberedModel.precedesInNumbering(lhs, rhs)
    }

    /// Drops repeats of an index (same name, same definition: an indexed property and the fetch
    /// index the model compiler derived from it); two different indexes whose names SQLite would
    /// take as one (names are case-insensitive) are an error.
    static func uniqueIndexes(_ indexes: [StoreLayout.Index]) throws -> [StoreLayout.Index] {
        var seen: [String: StoreLayout.Index] = [:]
        var result: [StoreLayout.Index] = []
        for index in indexes {
            let key = index.name.uppercased()
            if let earlier = seen[key] {
                guard earlier == index else { throw LayoutError.indexNameClash(name: index.name, otherName: earlier.name) }
                continue
            }
            seen[key] = index
            result.append(index)
        }
        return result
    }

    /// SQLite takes table names case-insensitively: an entity named like a join table (`_2TAGS`,
    /// stored in `Z_2TAGS`) would collide with it. (Entity tables start with `Z`, history tables
    /// with `A`: those never collide.)
    static func checkTableNames(_ tables: [StoreLayout.Table]) throws {
        var seen: [String: StoreLayout.Table] = [:]
        for table in tables {
            if let root = table.rootEntity, bookkeepingTables.contains(table.name.uppercased()) {
                throw LayoutError.reservedTableName(entity: root, table: table.name)
            }
            if let earlier = seen.updateValue(table, forKey: table.name.uppercased()) {
                func describe(_ table: StoreLayout.Table) -> String {
                    table.rootEntity.map { "entity \"\($0)\"" } ?? "join table \(table.name)"
                }
                throw LayoutError.tableNameClash(table: table.name, entities: [describe(earlier), describe(table)])
            }
        }
    }

    /// The tables every store has besides the model's (`StoreCreator` writes them).
    static let bookkeepingTables = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    /// SQLite's limit on the columns of a table or index (`SQLITE_MAX_COLUMN`'s default, which
    /// Core Data's SQLite keeps): a layout over it could be created by neither this tool nor Core Data.
    public static let maximumColumns = 2000

    static func checkColumnCounts(tables: [StoreLayout.Table], indexes: [StoreLayout.Index]) throws {
        let roots = Dictionary(tables.compactMap { table in table.rootEntity.map { (table.name, $0) } }) { first, _ in first }
        for table in tables where table.columns.count > maximumColumns {
            throw LayoutError.tooManyColumns(entity: table.rootEntity ?? table.name, table: table.name,
                                             count: table.columns.count, limit: maximumColumns)
        }
        for index in indexes where index.columns.count > maximumColumns {
            throw LayoutError.tooManyColumns(entity: roots[index.table] ?? index.table, table: "index \(index.name)",
                                             count: index.columns.count, limit: maximumColumns)
        }
    }

    static func entityNumbers(_ model: NumberedModel) -> [StoreLayout.EntityNumber] {
        model.entities.map { entity in
            StoreLayout.EntityNumber(
                ent: model.number(of: entity.name), name: entity.name,
                superEnt: entity.superentityName.map(model.number(of:)) ?? 0)
        }
    }
}
