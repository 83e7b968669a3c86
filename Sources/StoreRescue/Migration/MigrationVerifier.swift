/// Checks a written store before it is published: SQLite's own check, every link pointing at
/// an existing object of the right entity, every required value present, each root's `Z_MAX`
/// at or above its largest `Z_PK`, `match` recognising exactly the target version, and the rows
/// per entity the plan predicted. Any problem stops the publication.
public enum MigrationVerifier {
    /// What the checks found (part of the `migrate --json` contract).
    public struct Result: Sendable, Encodable, Equatable {
        /// `quick_check` or `integrity_check`.
        public var integrityCheck: String
        public var integrityOK: Bool
        /// Links naming no object of the right entity (must be 0).
        public var danglingLinks: Int64
        /// Required attributes and relationships without a value (must be 0).
        public var missingRequiredValues: Int64
        /// What `match` says the written store is.
        public var matchOutcome: String
        @NullEncoded public var matchVersion: String?
        /// Rows per entity in the written store.
        public var rowsByEntity: [String: Int64]
        /// Everything wrong, one line each (empty when the store is good).
        public var problems: [String]
    }

    static func verify(
        path: String, target: CatalogVersion, layout: StoreLayout, catalog: Catalog, predictedRows: [String: Int64]?, fullCheck: Bool
    ) throws -> Result {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        let model = target.model
        var problems: [String] = []
        let pragma = fullCheck ? "integrity_check" : "quick_check"
        let messages = try connection.rows("PRAGMA \(pragma)(20)", maximumRows: 20).compactMap { $0.first?.string }
        let integrityOK = messages == ["ok"]
        if !integrityOK { problems.append("\(pragma): " + messages.prefix(5).joined(separator: "; ")) }

        func kinds(_ entity: String) -> String {
            var names = [entity]
            var index = 0
            while index < names.count {
                names += model.entities.filter { $0.superentityName == names[index] }.map(\.name)
                index += 1
            }
            return names.compactMap { layout.entityNumber(of: $0) }.map(String.init).joined(separator: ", ")
        }
        func rowsOf(_ entity: String) -> String? {
            layout.table(ofEntity: entity, in: model).map { "SELECT Z_PK FROM \($0.name.quotedSQLIdentifier) WHERE Z_ENT IN (\(kinds(entity)))" }
        }

        // Links.
        var dangling: Int64 = 0
        var checked: Set<String> = []
        for (entity, relationships) in layout.relationshipStorage.sorted(by: { $0.key < $1.key }) {
            guard let description = model.entity(named: entity) else { continue }
            for (name, storage) in relationships.sorted(by: { $0.key < $1.key }) {
                guard case .relationship(let relationship)? = model.allProperties(of: description).last(where: { $0.name == name }),
                    let targets = rowsOf(relationship.destinationEntityName), let owners = rowsOf(entity),
                    let table = layout.table(ofEntity: entity, in: model)?.name
                else { continue }
                var queries: [(String, String)] = []
                switch storage {
                case .foreignKey(let column, let entityColumn, _):
                    guard checked.insert(table + "." + column).inserted else { continue }
                    let c = column.quotedSQLIdentifier
                    queries.append(("\(entity).\(name)", "SELECT count(*) FROM \(table.quotedSQLIdentifier) WHERE Z_ENT IN (\(kinds(entity))) AND \(c) IS NOT NULL AND \(c) NOT IN (\(targets))"))
                    if let entityColumn, let targetTable = layout.table(ofEntity: relationship.destinationEntityName, in: model)?.name {
                        let e = entityColumn.quotedSQLIdentifier
                        queries.append(("\(entity).\(name) (entity)", """
                            SELECT count(*) FROM \(table.quotedSQLIdentifier) s WHERE s.Z_ENT IN (\(kinds(entity))) AND s.\(c) IS NOT NULL \
                            AND s.\(e) IS NOT (SELECT t.Z_ENT FROM \(targetTable.quotedSQLIdentifier) t WHERE t.Z_PK = s.\(c))
                            """))
                    }
                case .joinTable(let join, let own, let other, _, _):
                    guard checked.insert(join).inserted else { continue }
                    queries.append(("\(entity).\(name)", """
                        SELECT count(*) FROM \(join.quotedSQLIdentifier) WHERE \(own.quotedSQLIdentifier) NOT IN (\(owners)) \
                        OR \(other.quotedSQLIdentifier) NOT IN (\(targets))
                        """))
                case .destinationColumn(let hidden, let column, _):
                    guard checked.insert(hidden + "." + column).inserted else { continue }
                    let c = column.quotedSQLIdentifier
                    queries.append(("\(entity).\(name)", "SELECT count(*) FROM \(hidden.quotedSQLIdentifier) WHERE \(c) IS NOT NULL AND \(c) NOT IN (\(owners))"))
                case .inverse:
                    continue
                }
                for (what, sql) in queries {
                    let count = try connection.scalar(sql)?.int64 ?? 0
                    if count > 0 {
                        dangling += count
                        problems.append("\(count) links of \(what) name no existing object of the right entity")
                    }
                }
            }
        }

        // Rows and required attributes: one scan per table (rows per Z_ENT, NULLs per column).
        var missing: Int64 = 0
        var rows: [String: Int64] = [:]
        for table in layout.tables where table.rootEntity != nil {
            guard let root = table.rootEntity, let rootNumber = layout.entityNumber(of: root) else { continue }
            var required: [(entity: String, ent: Int, property: String, column: String)] = []
            for entity in model.entities where !entity.isAbstract && layout.table(ofEntity: entity.name, in: model)?.name == table.name {
                guard let ent = layout.entityNumber(of: entity.name) else { continue }
                for case .attribute(let attribute) in ModelCorrespondence.persistentProperties(of: entity, in: model) where !attribute.isOptional {
                    if let column = layout.propertyColumns[entity.name]?[attribute.name] { required.append((entity.name, ent, attribute.name, column)) }
                }
            }
            let nullCounts = required.map { "sum(Z_ENT = \($0.ent) AND \($0.column.quotedSQLIdentifier) IS NULL)" }
            let scan = try connection.rows(
                "SELECT Z_ENT, count(*)\(nullCounts.map { ", " + $0 }.joined()) FROM \(table.name.quotedSQLIdentifier) GROUP BY Z_ENT",
                maximumRows: 100_000)
            var nulls = Array(repeating: Int64(0), count: required.count)
            for row in scan {
                if let ent = row[0].int64, let name = layout.entityNumbers.first(where: { Int64($0.ent) == ent })?.name {
                    rows[name] = row[1].int64 ?? 0
                } else {
                    problems.append("\(table.name) holds rows with Z_ENT \(row[0].int64.map(String.init) ?? "NULL"), no entity of its hierarchy")
                }
                for index in required.indices { nulls[index] += row[index + 2].int64 ?? 0 }
            }
            for (index, item) in required.enumerated() where nulls[index] > 0 {
                missing += nulls[index]
                problems.append("\(nulls[index]) \(item.entity) objects have no value for the required \(item.property)")
            }
            let largest = try connection.scalar("SELECT max(Z_PK) FROM \(table.name.quotedSQLIdentifier)")?.int64 ?? 0
            let counter = try connection.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(Int64(rootNumber))])?.int64 ?? -1
            if counter < largest { problems.append("Z_MAX of \(root) is \(counter), below its largest Z_PK \(largest)") }
        }
        // Required relationships: objects with no link at all.
        for entity in model.entities where !entity.isAbstract {
            guard let table = layout.table(ofEntity: entity.name, in: model)?.name, let ent = layout.entityNumber(of: entity.name),
                (rows[entity.name] ?? 0) > 0
            else { continue }
            for case .relationship(let relationship) in ModelCorrespondence.persistentProperties(of: entity, in: model) where !relationship.isOptional {
                guard let linked = linkedKeys(entity: entity.name, relationship: relationship, layout: layout, model: model) else { continue }
                let count = try connection.scalar("SELECT count(*) FROM \(table.quotedSQLIdentifier) WHERE Z_ENT = \(ent) AND Z_PK NOT IN (\(linked))")?.int64 ?? 0
                if count > 0 {
                    missing += count
                    problems.append("\(count) \(entity.name) objects have no value for the required \(relationship.name)")
                }
            }
        }
        for entity in model.entities where rows[entity.name] == nil { rows[entity.name] = 0 }
        if let predictedRows {
            for (entity, predicted) in predictedRows.sorted(by: { $0.key < $1.key }) where (rows[entity] ?? 0) != predicted {
                problems.append("\(entity) has \(rows[entity] ?? 0) rows; the plan predicted \(predicted)")
            }
        }

        // What match makes of it.
        let match = StoreMatcher.match(storePath: path, catalog: catalog)
        if match.outcome != .exact || match.version != target.name {
            problems.append("match says \(match.outcome.rawValue)\(match.version.map { " \($0)" } ?? ""), not exact \(target.name)")
        }
        return Result(
            integrityCheck: pragma, integrityOK: integrityOK, danglingLinks: dangling, missingRequiredValues: missing,
            matchOutcome: match.outcome.rawValue, matchVersion: match.version, rowsByEntity: rows, problems: problems)
    }

    /// `SELECT` of the keys of `entity` objects that have at least one link through `relationship`.
    static func linkedKeys(entity: String, relationship: RelationshipDescription, layout: StoreLayout, model: ManagedObjectModel) -> String? {
        guard let storage = layout.relationshipStorage[entity]?[relationship.name], let table = layout.table(ofEntity: entity, in: model)?.name else { return nil }
        switch storage {
        case .foreignKey(let column, _, _):
            return "SELECT Z_PK FROM \(table.quotedSQLIdentifier) WHERE \(column.quotedSQLIdentifier) IS NOT NULL"
        case .inverse:
            guard let inverse = relationship.inverseName, case .foreignKey(let column, _, _)? = layout.relationshipStorage[relationship.destinationEntityName]?[inverse],
                let targetTable = layout.table(ofEntity: relationship.destinationEntityName, in: model)?.name
            else { return nil }
            return "SELECT \(column.quotedSQLIdentifier) FROM \(targetTable.quotedSQLIdentifier) WHERE \(column.quotedSQLIdentifier) IS NOT NULL"
        case .joinTable(let join, let own, _, _, _):
            return "SELECT \(own.quotedSQLIdentifier) FROM \(join.quotedSQLIdentifier)"
        case .destinationColumn(let hidden, let column, _):
            return "SELECT \(column.quotedSQLIdentifier) FROM \(hidden.quotedSQLIdentifier) WHERE \(column.quotedSQLIdentifier) IS NOT NULL"
        }
    }
}
