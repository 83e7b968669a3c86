/// Runs a custom stage's `update` and `delete` steps, and the Swift handlers' operations, on a
/// store the migrator wrote at one version (never on the original): names are the model's,
/// turned into that version's columns; a delete applies the relationships' delete rules as
/// `context.delete` would (cascade follows links, deny refuses, every link to a deleted object
/// is cleared).
struct DataStepRunner {
    let connection: SQLiteConnection
    let version: CatalogVersion
    let layout: StoreLayout
    /// The schema the store is under in `connection`.
    let schema: String

    var model: ManagedObjectModel { version.model }

    struct Failure: Error {
        var jsonPath: String
        var reason: String
    }

    /// Rows changed by each step, in order. A step that makes objects share values the version
    /// keeps unique stops there, named (a review's run said only "UNIQUE constraint failed", and
    /// advised adding the very kind of step that broke it).
    func run(_ steps: [CustomStageDefinition.DataStep]) throws -> [Int64] {
        try steps.map { step in
            do {
                switch step.action {
                case .update(let assignments):
                    return try update(step.entity, assignments: assignments, condition: step.condition, jsonPath: step.jsonPath)
                case .delete:
                    return try delete(step.entity, condition: step.condition, jsonPath: step.jsonPath)
                }
            } catch let error as SQLiteError where error.primaryResultCode == 19 {
                throw Failure(jsonPath: step.jsonPath, reason: brokenUniqueness(error))
            }
        }
    }

    /// A unique index's violation in the model's words: `it makes Item objects share values of
    /// Item.code, which V1 keeps unique (UNIQUE constraint failed: ZITEM.ZCODE)`. The constraint
    /// is the one whose table and columns the message names (a review's run named another
    /// entity's constraint over a column of the same name), declared highest in the hierarchy.
    func brokenUniqueness(_ error: SQLiteError) -> String {
        // "UNIQUE constraint failed: ZITEM.ZA, ZITEM.ZB"
        let failed = error.message.split(separator: ":").last?.split(separator: ",") ?? []
        let named = Set(failed.map { $0.filter { $0 != " " }.split(separator: ".", maxSplits: 1).map(String.init) })
        var constrained: (name: String, depth: Int)?
        for entity in model.entities {
            guard let table = layout.table(ofEntity: entity.name, in: model)?.name else { continue }
            let depth = model.ancestry(of: entity).count
            for constraint in entity.uniquenessConstraints {
                let columns = Set(constraint.compactMap { layout.propertyColumns[entity.name]?[$0] }.map { [table, $0] })
                guard columns == named, depth < constrained?.depth ?? Int.max else { continue }
                constrained = ("\(entity.name).\(constraint.joined(separator: " + "))", depth)
            }
        }
        return "it makes objects share values\(constrained.map { " of \($0.name)" } ?? ""), which \(version.name) keeps unique (\(error.message))"
    }

    // MARK: - Names

    /// `table`, the `Z_ENT`s of `entity`'s kind, and its attributes' and to-one relationships'
    /// columns as bare names (valid in UPDATE and DELETE statements).
    func target(_ entity: String, jsonPath: String) throws -> (table: String, numbers: String, scope: [String: String]) {
        guard let description = model.entity(named: entity), let table = layout.table(ofEntity: entity, in: model) else {
            throw Failure(jsonPath: jsonPath, reason: "\(version.name) has no entity \(entity)")
        }
        var kinds = [entity]
        var index = 0
        while index < kinds.count {
            kinds += model.entities.filter { $0.superentityName == kinds[index] }.map(\.name)
            index += 1
        }
        let numbers = kinds.compactMap { layout.entityNumber(of: $0) }.map(String.init).joined(separator: ", ")
        var scope: [String: String] = [:]
        for property in ModelCorrespondence.persistentProperties(of: description, in: model) {
            if let column = layout.propertyColumns[entity]?[property.name] { scope[property.name] = column.quotedSQLIdentifier }
        }
        return (table.name, numbers, scope)
    }

    func translate(_ expression: String, scope: [String: String], jsonPath: String) throws -> String {
        do {
            return try ExpressionTranslator(scope: scope).translate(expression)
        } catch {
            throw Failure(jsonPath: jsonPath, reason: error.reason)
        }
    }

    // MARK: - Update

    func update(_ entity: String, assignments: [CustomStageDefinition.Assignment], condition: String?, jsonPath: String) throws -> Int64 {
        try connection.execute(try updateStatement(entity, assignments: assignments, condition: condition, jsonPath: jsonPath))
        return connection.changes
    }

    /// The `UPDATE` an update step runs.
    private func updateStatement(
        _ entity: String, assignments: [CustomStageDefinition.Assignment], condition: String?, jsonPath: String
    ) throws -> String {
        let (table, numbers, scope) = try target(entity, jsonPath: jsonPath)
        guard let description = model.entity(named: entity) else { throw Failure(jsonPath: jsonPath, reason: "\(version.name) has no entity \(entity)") }
        var sets: [String] = []
        for assignment in assignments {
            guard case .attribute(let attribute)? = model.allProperties(of: description).last(where: { $0.name == assignment.property }),
                let column = layout.propertyColumns[entity]?[assignment.property]
            else { throw Failure(jsonPath: assignment.jsonPath, reason: "\(entity) has no attribute \(assignment.property) in \(version.name)") }
            let value = try translate(assignment.expression, scope: scope, jsonPath: assignment.jsonPath)
            let converted = MigrationFunctions.converting(value, to: attribute.type, entity: entity, attribute: attribute.name, pk: "Z_PK")
            sets.append("\(column.quotedSQLIdentifier) = " + (attribute.isOptional
                ? converted : MigrationFunctions.requiring(converted, entity: entity, attribute: attribute.name, pk: "Z_PK")))
        }
        let filter = try condition.map { " AND (" + (try translate($0, scope: scope, jsonPath: jsonPath + ".where")) + ")" } ?? ""
        return "UPDATE \(SQLLiteral.table(table, in: schema)) SET \(sets.joined(separator: ", ")) WHERE Z_ENT IN (\(numbers))\(filter)"
    }

    // MARK: - Checking before anything runs

    /// The first step whose names or expressions fail, found without running anything: each
    /// step's statement (an update's `UPDATE`, a delete's selection) is compiled against
    /// `connection`, which holds `layout`'s tables (empty: a scratch database is enough). A
    /// review's `"where": "nosuch=1"` and `"set": {"name": "count(*)"}` passed the dry run and
    /// failed the real run, after `upgrade`'s backup.
    func check(_ steps: [CustomStageDefinition.DataStep]) -> Failure? {
        for step in steps {
            do {
                let sql: String
                switch step.action {
                case .update(let assignments):
                    sql = try updateStatement(step.entity, assignments: assignments, condition: step.condition, jsonPath: step.jsonPath)
                case .delete:
                    let (table, numbers, scope) = try target(step.entity, jsonPath: step.jsonPath)
                    let filter = try step.condition.map { " AND (" + (try translate($0, scope: scope, jsonPath: step.jsonPath + ".where")) + ")" } ?? ""
                    sql = "SELECT Z_PK FROM \(SQLLiteral.table(table, in: schema)) WHERE Z_ENT IN (\(numbers))\(filter)"
                }
                _ = try connection.prepare(sql)
            } catch let failure as Failure {
                return failure
            } catch let error as SQLiteError {
                return Failure(jsonPath: step.jsonPath, reason: "SQLite rejects the step: \(error.message)")
            } catch {
                return Failure(jsonPath: step.jsonPath, reason: "\(error)")
            }
        }
        return nil
    }

    // MARK: - Delete

    /// Deletes the objects of `entity`'s kind matching `condition`, and what their delete rules
    /// take with them; returns the objects deleted (cascades included).
    func delete(_ entity: String, condition: String?, jsonPath: String) throws -> Int64 {
        let (table, numbers, scope) = try target(entity, jsonPath: jsonPath)
        let filter = try condition.map { " AND (" + (try translate($0, scope: scope, jsonPath: jsonPath + ".where")) + ")" } ?? ""
        try connection.execute("CREATE TEMP TABLE IF NOT EXISTS storerescue_deleted (tbl TEXT, pk INTEGER, ent INTEGER, PRIMARY KEY (tbl, pk))")
        try connection.execute("DELETE FROM temp.storerescue_deleted")
        try connection.execute("""
            INSERT OR IGNORE INTO temp.storerescue_deleted SELECT \(SQLLiteral.string(table)), Z_PK, Z_ENT \
            FROM \(SQLLiteral.table(table, in: schema)) WHERE Z_ENT IN (\(numbers))\(filter)
            """)
        try cascade(jsonPath: jsonPath)
        let deleted = try connection.scalar("SELECT count(*) FROM temp.storerescue_deleted")?.int64 ?? 0
        try clearLinksToDeleted()
        for table in layout.tables where table.rootEntity != nil {
            try connection.execute("""
                DELETE FROM \(SQLLiteral.table(table.name, in: schema)) WHERE Z_PK IN \
                (SELECT pk FROM temp.storerescue_deleted WHERE tbl = \(SQLLiteral.string(table.name)))
                """)
        }
        return deleted
    }

    /// Every link from a deleted object: (relationship end, delete rule, SELECT of linked keys).
    private func outgoing() -> [(entity: String, relationship: RelationshipDescription, targetTable: String, linked: String)] {
        var result: [(String, RelationshipDescription, String, String)] = []
        for entity in model.entities {
            guard let table = layout.table(ofEntity: entity.name, in: model) else { continue }
            for relationship in entity.relationships where !relationship.isTransient {
                guard let storage = layout.relationshipStorage[entity.name]?[relationship.name],
                    let targetTable = layout.table(ofEntity: relationship.destinationEntityName, in: model)?.name,
                    let own = layout.entityNumber(of: entity.name)
                else { continue }
                let deletedOwners = "SELECT pk FROM temp.storerescue_deleted WHERE tbl = \(SQLLiteral.string(table.name)) AND ent = \(own)"
                let linked: String
                switch storage {
                case .foreignKey(let column, _, _):
                    linked = "SELECT \(column.quotedSQLIdentifier) FROM \(SQLLiteral.table(table.name, in: schema)) WHERE Z_PK IN (\(deletedOwners)) AND \(column.quotedSQLIdentifier) IS NOT NULL"
                case .inverse:
                    guard let inverseName = relationship.inverseName,
                        case .foreignKey(let column, _, _)? = inverseStorage(relationship: relationship, inverse: inverseName)
                    else { continue }
                    linked = "SELECT Z_PK FROM \(SQLLiteral.table(targetTable, in: schema)) WHERE \(column.quotedSQLIdentifier) IN (\(deletedOwners))"
                case .joinTable(let join, let ownColumn, let otherColumn, _, _):
                    linked = "SELECT \(otherColumn.quotedSQLIdentifier) FROM \(SQLLiteral.table(join, in: schema)) WHERE \(ownColumn.quotedSQLIdentifier) IN (\(deletedOwners))"
                case .destinationColumn(let hidden, let column, _):
                    linked = "SELECT Z_PK FROM \(SQLLiteral.table(hidden, in: schema)) WHERE \(column.quotedSQLIdentifier) IN (\(deletedOwners))"
                }
                result.append((entity.name, relationship, targetTable, linked))
            }
        }
        return result
    }

    private func inverseStorage(relationship: RelationshipDescription, inverse: String) -> StoreLayout.RelationshipStorage? {
        layout.relationshipStorage[relationship.destinationEntityName]?[inverse]
    }

    /// Adds what cascade rules take along, until nothing more is added; refuses when a deny
    /// rule has links.
    private func cascade(jsonPath: String) throws {
        let links = outgoing()
        while true {
            var added: Int64 = 0
            for link in links {
                switch link.relationship.deleteRule {
                case .cascade:
                    try connection.execute("""
                        INSERT OR IGNORE INTO temp.storerescue_deleted SELECT \(SQLLiteral.string(link.targetTable)), t.Z_PK, t.Z_ENT \
                        FROM \(SQLLiteral.table(link.targetTable, in: schema)) t WHERE t.Z_PK IN (\(link.linked))
                        """)
                    added += connection.changes
                case .deny:
                    let count = try connection.scalar("SELECT count(*) FROM (\(link.linked))")?.int64 ?? 0
                    if count > 0 {
                        throw Failure(
                            jsonPath: jsonPath,
                            reason: "deleting these \(link.entity) objects is denied: \(count) of them still have \(link.relationship.name) (delete rule deny)")
                    }
                case .nullify, .noAction:
                    continue
                }
            }
            if added == 0 { return }
        }
    }

    /// Clears every to-one and hidden column, and removes every join row, that names a deleted
    /// object: whatever the rule, a store never keeps a link to an object that is gone.
    private func clearLinksToDeleted() throws {
        for (entity, relationships) in layout.relationshipStorage {
            for (name, storage) in relationships {
                guard let description = model.entity(named: entity), let relationship = description.relationships.first(where: { $0.name == name }),
                    let table = layout.table(ofEntity: entity, in: model)?.name,
                    let targetTable = layout.table(ofEntity: relationship.destinationEntityName, in: model)?.name
                else { continue }
                let deletedTargets = "SELECT pk FROM temp.storerescue_deleted WHERE tbl = \(SQLLiteral.string(targetTable))"
                let deletedOwners = "SELECT pk FROM temp.storerescue_deleted WHERE tbl = \(SQLLiteral.string(table))"
                switch storage {
                case .foreignKey(let column, let entityColumn, let orderColumn):
                    let clears = ([column] + [entityColumn, orderColumn].compactMap { $0 }).map { "\($0.quotedSQLIdentifier) = NULL" }
                    try connection.execute("UPDATE \(SQLLiteral.table(table, in: schema)) SET \(clears.joined(separator: ", ")) WHERE \(column.quotedSQLIdentifier) IN (\(deletedTargets))")
                case .joinTable(let join, let own, let other, _, _):
                    try connection.execute("DELETE FROM \(SQLLiteral.table(join, in: schema)) WHERE \(own.quotedSQLIdentifier) IN (\(deletedOwners)) OR \(other.quotedSQLIdentifier) IN (\(deletedTargets))")
                case .destinationColumn(let hidden, let column, let orderColumn):
                    let clears = ([column] + [orderColumn].compactMap { $0 }).map { "\($0.quotedSQLIdentifier) = NULL" }
                    try connection.execute("UPDATE \(SQLLiteral.table(hidden, in: schema)) SET \(clears.joined(separator: ", ")) WHERE \(column.quotedSQLIdentifier) IN (\(deletedOwners))")
                case .inverse:
                    continue
                }
            }
        }
    }
}
