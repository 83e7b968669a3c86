import Foundation

/// Evidence from the rows themselves, read only where the schema cannot decide. Tables and
/// columns come from the version's layout (so suffixed columns such as `ZSETTINGS1` are found),
/// and only those the store really has are queried.
enum DataEvidence {
    /// The `Z_ENT` numbers of `entity` and all its subentities in this store.
    static func entityNumbers(of entity: String, in model: ManagedObjectModel, readout: StoreReadout) -> [Int64] {
        var names: Set<String> = [entity]
        var frontier = [entity]
        while let next = frontier.popLast() {
            for sub in model.subentities(of: next) where names.insert(sub.name).inserted { frontier.append(sub.name) }
        }
        return readout.primaryKeys.filter { names.contains($0.name) }.map(\.ent)
    }

    /// The store's table holding `entity`'s rows, as `layout` places it.
    static func table(of entity: EntityDescription, in model: ManagedObjectModel, layout: StoreLayout, readout: StoreReadout) -> PhysicalSchema.Table? {
        let root = model.ancestry(of: entity).last ?? entity
        guard let planned = layout.tables.first(where: { $0.rootEntity == root.name }) else { return nil }
        return readout.schema?.table(named: planned.name)
    }

    /// Rows of `entity` (and its subentities) in the store; nil when it has no table or number.
    static func rowCount(
        of entity: EntityDescription, in model: ManagedObjectModel, layout: StoreLayout, readout: StoreReadout,
        connection: SQLiteConnection
    ) -> Int64? {
        let numbers = entityNumbers(of: entity.name, in: model, readout: readout)
        guard !numbers.isEmpty, let table = table(of: entity, in: model, layout: layout, readout: readout) else { return nil }
        return try? connection.scalar(
            "SELECT count(*) FROM \(table.name.quotedSQLIdentifier) WHERE Z_ENT IN (\(placeholders(numbers.count)))",
            numbers.map(SQLiteValue.integer))?.int64
    }

    /// For each attribute `version` requires (not optional, not transient), rows that hold NULL in its column.
    static func nullsInRequiredColumns(
        version: CatalogVersion, layout: StoreLayout, readout: StoreReadout, connection: SQLiteConnection
    ) -> [Difference] {
        var result: [Difference] = []
        let model = version.model
        for entity in model.entities {
            guard let table = table(of: entity, in: model, layout: layout, readout: readout) else { continue }
            let numbers = entityNumbers(of: entity.name, in: model, readout: readout)
            guard !numbers.isEmpty else { continue }
            let storeColumns = Set(table.columns.map(\.name.sqliteNameKey))
            let columns = layout.propertyColumns[entity.name] ?? [:]
            for attribute in entity.attributes where !attribute.isOptional && !attribute.isTransient {
                guard let column = columns[attribute.name], storeColumns.contains(column.sqliteNameKey) else { continue }
                let count = (try? connection.scalar(
                    "SELECT count(*) FROM \(table.name.quotedSQLIdentifier) WHERE Z_ENT IN (\(placeholders(numbers.count))) AND \(column.quotedSQLIdentifier) IS NULL",
                    numbers.map(SQLiteValue.integer)))??.int64 ?? 0
                if count > 0 {
                    result.append(Difference(
                        kind: .nullsInRequiredColumn, impact: .blocking, entity: entity.name, table: table.name, column: column,
                        detail: "\(count) \(entity.name) rows have no value for \(attribute.name), which \(version.name) requires"))
                }
            }
        }
        return result
    }

    private static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}
