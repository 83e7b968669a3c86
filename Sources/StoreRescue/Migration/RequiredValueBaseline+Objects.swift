/// Objects, not counts: a gap of the written store is the store's own only where every object
/// that lacks the value now already lacked it before the migration.
///
/// An object keeps its `Z_PK` through every hop: rows are copied with their key whether the
/// entity is renamed, renumbered or moved to another table (hierarchies never merge, so keys
/// stay unique), and so are the versions written for custom steps. Objects the migration
/// creates (`create`, `MigrationContext.insert`) take keys above every key of their table and
/// above its counter. So the object of the written store with a given `Z_PK` and entity is the
/// source object with that `Z_PK` of the entity it maps from, or a new one; no hop renumbers
/// keys, so no gap needs the counts to be compared instead. (One key can come back: where a
/// step deleted the object with a table's largest key and a later hop gives that table a new
/// root, whose counter starts at its largest key, an object created after takes the deleted
/// one's key and passes for it — as it would by count.)
///
/// The comparison runs in SQLite, the store as read attached read-only to the written store's
/// connection: each object lacking a value now is looked up by its key, and no set of keys is
/// gathered in memory.
extension RequiredValueBaseline {
    /// The schema the store as read is attached under.
    static let schema = "source"

    /// Attaches the store as read to `connection` (the written store's) as `source`, read-only
    /// (the original immutably, as the migration read it).
    ///
    /// - Throws: `MigrationError.readFailed` when SQLite cannot open it.
    func attach(to connection: SQLiteConnection) throws {
        let uri = SQLiteConnection.readOnlyURI(path: path, immutable: isImmutable)
        do {
            try connection.execute("ATTACH DATABASE \(SQLLiteral.string(uri)) AS \(Self.schema)")
        } catch let error as SQLiteError {
            throw MigrationError.readFailed(path: path, reason: error.message + " (SQLite code \(error.resultCode))")
        }
    }

    /// Objects of the written store without a value they did not lack before the migration.
    struct NewlyLacking: Sendable, Equatable {
        /// Objects without the value now that had one before, or did not exist.
        var objects: Int64
        /// Of those, the objects that did not exist before (the migration created them).
        var created: Int64
    }

    /// Of the written store's objects without a value for `gap` (its census's, named as the
    /// target names it), those that did not lack it before the migration: neither in
    /// `carried`'s source gaps (the same `Z_PK`, of the entity they map from) nor, when
    /// `carried` is nil, anywhere.
    ///
    /// - Parameters:
    ///   - connection: the written store (schema `main`), with the store as read attached by
    ///     `attach(to:)` when `carried` is given.
    ///   - model: the target version's model, and `layout` its layout.
    func objectsNewlyLacking(
        _ gap: RequiredValueCensus.Gap, carried: CarriedGap?, connection: SQLiteConnection, model: ManagedObjectModel, layout: StoreLayout
    ) throws -> NewlyLacking {
        guard let carried else { return NewlyLacking(objects: gap.objects, created: 0) }
        guard let table = layout.table(ofEntity: gap.entity, in: model)?.name, let entityNumber = layout.entityNumber(of: gap.entity),
            let lacksNow = RequiredValueCensus.lackingCondition(
                entity: gap.entity, property: gap.property, kind: gap.kind, alias: "a", schema: "main", layout: layout, model: model,
                isStored: RequiredValueCensus.storedIn(nil), mustReachAnObject: false)
        else {
            // The census found the gap through the same layout: unreachable, and then no object is excused.
            return NewlyLacking(objects: gap.objects, created: 0)
        }
        let isStored = RequiredValueCensus.storedIn(physical)
        var lackedBefore: [String] = []
        var existedBefore: [String] = []
        for (index, source) in carried.sources.enumerated() {
            let alias = "b\(index)"
            guard let sourceTable = self.layout.table(ofEntity: source.entity, in: version.model)?.name,
                let sourceNumber = self.layout.entityNumber(of: source.entity),
                let lacked = RequiredValueCensus.lackingCondition(
                    entity: source.entity, property: source.property, kind: source.kind, alias: alias, schema: Self.schema,
                    layout: self.layout, model: version.model, isStored: isStored, mustReachAnObject: true)
            else { continue }
            let sameObject = """
                SELECT 1 FROM \(SQLLiteral.table(sourceTable, in: Self.schema)) \(alias) \
                WHERE \(alias).Z_PK = a.Z_PK AND \(alias).Z_ENT = \(sourceNumber)
                """
            lackedBefore.append("NOT EXISTS (\(sameObject) AND \(lacked))")
            existedBefore.append("NOT EXISTS (\(sameObject))")
        }
        let isNew = existedBefore.isEmpty ? "1" : existedBefore.joined(separator: " AND ")
        let sql = """
            SELECT count(*), coalesce(sum(\(isNew)), 0) FROM \(SQLLiteral.table(table, in: "main")) a \
            WHERE a.Z_ENT = \(entityNumber) AND \(lacksNow)\(lackedBefore.map { " AND " + $0 }.joined())
            """
        let row = try connection.rows(sql, maximumRows: 1).first
        return NewlyLacking(objects: row?[0].int64 ?? 0, created: row?[1].int64 ?? 0)
    }
}
