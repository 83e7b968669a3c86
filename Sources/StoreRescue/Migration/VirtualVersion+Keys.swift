import Foundation

/// Keys and link places of a version, shared by the writer (which writes them) and the
/// analyzer (which predicts from them what the writer will clear): both must name the same
/// objects, or a dry run would promise what the migration does not do.
extension VirtualVersion {
    /// The value of each `{{first-key:N}}` token: new objects take keys after every key their
    /// table already uses and after the root's `Z_MAX`. Reads only the base.
    func firstFreeKeys(using connection: SQLiteConnection) throws -> [Int: Int64] {
        let model = version.model
        let alias = RowSource.alias
        var result: [Int: Int64] = [:]
        let created = rowSources.filter { $0.createdFrom != nil }
        guard !created.isEmpty else { return [:] }
        var next: [String: Int64] = [:]
        for source in created {
            guard let table = layout.table(ofEntity: source.entity, in: model), let root = table.rootEntity else { continue }
            if next[table.name] == nil {
                var largest = carriedMaximumKeys[root] ?? 0
                for existing in rowSources where existing.createdFrom == nil && layout.table(ofEntity: existing.entity, in: model)?.name == table.name {
                    let maximum = try connection.scalar("SELECT max(\(existing.pk)) FROM \(existing.from) \(alias) WHERE \(existing.condition)")?.int64 ?? 0
                    largest = max(largest, maximum)
                }
                next[table.name] = largest
            }
            result[source.id] = next[table.name] ?? 0
            let count = try connection.scalar("SELECT count(*) FROM \(source.from) \(alias) WHERE \(Self.resolve(source.condition, result))")?.int64 ?? 0
            next[table.name, default: 0] += count
        }
        return result
    }

    /// `sql` with every first-key token replaced by its value (a token without one is kept).
    /// One pass over `sql`: a catalog's 10,000 `create` steps give 10,000 tokens and statements.
    static func resolve(_ sql: String, _ firstKeys: [Int: Int64]) -> String {
        let opening = "{{first-key:"
        guard sql.contains(opening) else { return sql }
        var result = ""
        var rest = sql[...]
        while let start = rest.range(of: opening) {
            result += rest[..<start.lowerBound]
            if let end = rest.range(of: "}}", range: start.upperBound..<rest.endIndex),
                let id = Int(rest[start.upperBound..<end.lowerBound]), let key = firstKeys[id]
            {
                result += String(key)
                rest = rest[end.upperBound...]
            } else {
                result += rest[start]
                rest = rest[start.upperBound...]
            }
        }
        return result + rest
    }

    /// The end (declaring entity) of relationship `name` as `entity` sees it.
    func declaringEnd(_ name: String, of entity: String) -> LinkSet.End? {
        let model = version.model
        guard let description = model.entity(named: entity) else { return nil }
        for ancestor in model.ancestry(of: description).reversed() where ancestor.relationships.contains(where: { $0.name == name }) {
            return LinkSet.End(entity: ancestor.name, relationship: name)
        }
        return nil
    }

    /// The end a join table is written for (its declaring entity's), and how it is kept.
    func joinTableEnd(_ table: String) -> (end: LinkSet.End, storage: StoreLayout.RelationshipStorage)? {
        for (entity, relationships) in layout.relationshipStorage.sorted(by: { $0.key < $1.key }) {
            for (name, storage) in relationships.sorted(by: { $0.key < $1.key }) {
                guard case .joinTable(let tableName, _, _, _, _) = storage, tableName == table,
                    let end = declaringEnd(name, of: entity), end.entity == entity
                else { continue }
                return (end, storage)
            }
        }
        return nil
    }

    /// The `Z_PK`s the written table holds for objects of `entity`'s kind, as a `SELECT` over
    /// the base (nil: the entity has no table).
    func keys(ofKind entity: String, firstKeys: [Int: Int64]) -> String? {
        guard layout.table(ofEntity: entity, in: version.model) != nil else { return nil }
        let selects = rowSources(ofKind: entity).map { "SELECT \($0.pk) FROM \($0.from) \(RowSource.alias) WHERE \($0.condition)" }
        return Self.resolve(selects.isEmpty ? "SELECT NULL WHERE 0" : Self.unionAll(selects), firstKeys)
    }

    /// `selects` joined by `UNION ALL`, nested so that no compound has more than `limit` terms:
    /// SQLite refuses a compound of more than 500 (`SQLITE_MAX_COMPOUND_SELECT`), and a catalog
    /// of 10,000 `create` steps gives an entity that many row sources (the hostile inputs'
    /// check stopped with "too many terms in compound SELECT"). The columns are the first
    /// select's, as in one compound.
    static func unionAll(_ selects: [String], limit: Int = 400) -> String {
        precondition(limit >= 2, "a compound of two terms at least")
        guard selects.count > limit else { return selects.joined(separator: " UNION ALL ") }
        let groups = stride(from: 0, to: selects.count, by: limit).map { start in
            "SELECT * FROM (" + selects[start..<min(start + limit, selects.count)].joined(separator: " UNION ALL ") + ")"
        }
        return unionAll(groups, limit: limit)
    }

    /// Links of the relationship at `end` kept on rows (a to-one's column, a hidden column on
    /// the destination's rows) whose object is not of the holding kind here: it left the
    /// hierarchy, so the link has no column to go to. Counted, as the links a join table loses.
    func linksOnRowsThatLeft(_ end: LinkSet.End, onOwnRows: Bool, firstKeys: [Int: Int64], using connection: SQLiteConnection) throws -> Int64 {
        guard objectsMayHaveLeftTheirKind, let (set, side) = linkSet(for: end), !set.isEmpty, let relationship = relationship(at: end) else { return 0 }
        let endColumn = side == .a ? "a" : "b", otherColumn = side == .a ? "b" : "a"
        let (holder, partner) = onOwnRows ? (endColumn, otherColumn) : (otherColumn, endColumn)
        guard let holders = keys(ofKind: onOwnRows ? end.entity : relationship.destinationEntityName, firstKeys: firstKeys) else { return 0 }
        return try connection.scalar("""
            SELECT count(DISTINCT \(holder)) FROM (\(Self.resolve(set.query, firstKeys))) WHERE \(holder) IS NOT NULL \
            AND \(partner) IS NOT NULL AND \(holder) NOT IN (\(holders))
            """)?.int64 ?? 0
    }
}
