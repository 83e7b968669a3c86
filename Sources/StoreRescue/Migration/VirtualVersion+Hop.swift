/// Applying a hop's mapping: the next version's rows and links as expressions over the same
/// base, so hops compose without writing anything.
extension VirtualVersion {
    /// A custom stage expression SQLite cannot use, or a `where` naming what is not there.
    struct ExpressionFailure: Error, Equatable {
        var jsonPath: String
        var entity: String
        var reason: String
    }

    /// The version `mapping.hop` leads to.
    ///
    /// - Parameter nextID: the next free row-source id (for objects a `create` adds).
    func applying(
        _ mapping: HopMapping, destination: CatalogVersion, layout destinationLayout: StoreLayout, nextID: inout Int
    ) throws(ExpressionFailure) -> VirtualVersion {
        let alias = RowSource.alias
        let bySource = Dictionary(mapping.entities.compactMap { entity in entity.source.map { ($0, entity) } }, uniquingKeysWith: { a, _ in a })
        var next = VirtualVersion(
            version: destination, layout: destinationLayout, baseSchema: baseSchema, rowSources: [], links: [],
            entityOfBaseNumber: entityOfBaseNumber.compactMapValues { bySource[$0]?.name },
            carriedMaximumKeys: [:], nondeterministicAttributes: [], ownIndexes: ownIndexes)
        for (name, maximum) in carriedMaximumKeys {
            if let destinationName = bySource[name]?.name { next.carriedMaximumKeys[destinationName] = maximum }
        }
        next.objectsMayHaveLeftTheirKind = objectsMayHaveLeftTheirKind || !mapping.removedEntities.isEmpty
            || Self.ancestryChanges(mapping, from: version.model, to: destination.model)

        // Rows: each source row source becomes one of its destination entity.
        for source in rowSources {
            guard let entity = bySource[source.entity] else { continue }
            var row = source
            row.entity = entity.name
            row.attributes = [:]
            for attribute in entity.attributes {
                let (sql, random) = try value(of: attribute, entity: entity.name, from: source)
                row.attributes[attribute.name] = sql
                if random { next.nondeterministicAttributes.insert("\(entity.name).\(attribute.name)") }
            }
            next.rowSources.append(row)
        }
        next.leaveOutOwnColumnsTakenByLayout()

        // Objects a custom stage creates: one per object of `forEach` (at the hop's source).
        var createdLinks: [(end: LinkSet.End, row: RowSource, target: RowSource)] = []
        for creation in mapping.creations {
            guard let entity = mapping.entity(named: creation.entity) else { continue }
            for origin in rowSources(ofKind: creation.forEach) {
                let translator = ExpressionTranslator(scope: origin.attributes)
                let condition = try Self.condition(of: creation, over: origin)
                let id = nextID
                nextID += 1
                var row = RowSource(
                    id: id, entity: creation.entity, baseTable: origin.baseTable, from: origin.from, condition: condition,
                    pk: "(\(Self.firstKeyToken(id)) + row_number() OVER (ORDER BY \(origin.pk)))", opt: "1", baseEntityNumber: nil,
                    attributes: [:], createdFrom: creation.forEach)
                for attribute in entity.attributes {
                    if let assignment = creation.assignments.last(where: { $0.property == attribute.name }) {
                        let translated: (sql: String, isNondeterministic: Bool)
                        do {
                            translated = try translator.translateReporting(assignment.expression)
                        } catch {
                            throw ExpressionFailure(jsonPath: assignment.jsonPath, entity: creation.forEach, reason: error.reason)
                        }
                        let converted = MigrationFunctions.converting(
                            translated.sql, to: attribute.type, entity: creation.entity, attribute: attribute.name, pk: row.pk)
                        row.attributes[attribute.name] = attribute.isRequired
                            ? MigrationFunctions.requiring(converted, entity: creation.entity, attribute: attribute.name, pk: row.pk) : converted
                    } else if let defaultValue = attribute.defaultValue {
                        row.attributes[attribute.name] = SQLLiteral.value(defaultValue)
                    } else if attribute.isRequired {
                        row.attributes[attribute.name] = MigrationFunctions.requiring(
                            "NULL", entity: creation.entity, attribute: attribute.name, pk: row.pk)
                    }
                }
                next.rowSources.append(row)
                for link in creation.links {
                    guard let end = destinationEnd(of: link, entity: creation.entity, model: destination.model) else { continue }
                    createdLinks.append((end, row, origin))
                }
            }
        }

        // Links: each destination relationship takes the links of the source relationship it maps from.
        let surviving = Set(next.rowSources.map(\.id))
        let removedAny = !mapping.removedEntities.isEmpty
        for entity in destination.model.entities {
            for declared in entity.relationships where !declared.isTransient {
                if destination.model.ancestry(of: entity).dropFirst().contains(where: { $0.relationships.contains { $0.name == declared.name } }) { continue }
                let end = LinkSet.End(entity: entity.name, relationship: declared.name)
                guard next.linkSet(for: end) == nil else { continue }
                let inverse = Self.inverseEnd(of: declared, in: destination.model)
                var set = LinkSet(a: end, b: inverse, query: LinkSet.emptyQuery, held: [:], mayDangle: false, isEmpty: true)
                if let (sourceSet, flipped) = sourceLinks(for: end, inverse: inverse, mapping: mapping) {
                    let oriented = flipped ? sourceSet.swapped : sourceSet
                    let sourceA = flipped ? sourceSet.b.flatMap(relationship(at:)) : relationship(at: sourceSet.a)
                    let sourceB = flipped ? relationship(at: sourceSet.a) : sourceSet.b.flatMap(relationship(at:))
                    let inverseRelationship = inverse.flatMap(next.relationship(at:))
                    let keepA = declared.isOrdered && (sourceA?.isOrdered ?? false)
                    let keepB = (inverseRelationship?.isOrdered ?? false) && (sourceB?.isOrdered ?? false)
                    set.query = "SELECT a, b, \(keepA ? "na" : "NULL") AS na, \(keepB ? "nb" : "NULL") AS nb FROM (\(oriented.query))"
                    set.needsOrderA = declared.isOrdered && (!keepA || oriented.needsOrderA)
                    set.needsOrderB = (inverseRelationship?.isOrdered ?? false) && (!keepB || oriented.needsOrderB)
                    for (id, held) in oriented.held where surviving.contains(id) {
                        var kept = held
                        if (held.side == .a && !keepB) || (held.side == .b && !keepA) { kept.order = nil }
                        set.held[id] = kept
                    }
                    set.mayDangle = oriented.mayDangle || removedAny
                    // Declared on another entity now, or leading to another: objects that held
                    // or were named by these links may not be of the new ends' kinds.
                    if bySource[oriented.a.entity]?.name != end.entity
                        || relationship(at: oriented.a).flatMap({ bySource[$0.destinationEntityName]?.name }) != declared.destinationEntityName
                    {
                        next.objectsMayHaveLeftTheirKind = true
                    }
                    set.isEmpty = oriented.isEmpty
                } else {
                    set.needsOrderA = declared.isOrdered
                    set.needsOrderB = inverse.flatMap(next.relationship(at:))?.isOrdered ?? false
                }
                next.links.append(set)
            }
        }
        // …plus the links of created objects to their source objects' counterparts.
        for created in createdLinks {
            guard let (set, side) = next.linkSet(for: created.end), let index = next.links.firstIndex(where: { $0.a == set.a }) else { continue }
            let newKey = created.row.pk, target = created.target.pk
            let pair = side == .a ? "\(newKey) AS a, \(target) AS b" : "\(target) AS a, \(newKey) AS b"
            next.links[index].isEmpty = false
            next.links[index].query += " UNION ALL SELECT \(pair), NULL AS na, NULL AS nb FROM \(created.row.from) \(alias) WHERE \(created.row.condition)"
            next.links[index].held[created.row.id] = LinkSet.Held(
                side: side, other: target, order: nil, otherEntity: created.target.baseEntityNumber.map(String.init))
            if side == .a { next.links[index].needsOrderB = next.links[index].needsOrderB || (set.b.flatMap(next.relationship(at:))?.isOrdered ?? false) }
        }
        return next
    }

    /// True when an entity's ancestors (named as at the source) differ after the hop: it moved
    /// into, out of or across a hierarchy.
    private static func ancestryChanges(_ mapping: HopMapping, from source: ManagedObjectModel, to destination: ManagedObjectModel) -> Bool {
        let sourceName = Dictionary(mapping.entities.compactMap { entity in entity.source.map { (entity.name, $0) } }, uniquingKeysWith: { a, _ in a })
        return mapping.entities.contains { entity in
            guard let name = entity.source, let before = source.entity(named: name), let after = destination.entity(named: entity.name) else { return false }
            return source.ancestry(of: before).map(\.name) != destination.ancestry(of: after).map { sourceName[$0.name] ?? "new " + $0.name }
        }
    }

    /// Which rows of `origin` (a row source of the step's `forEach` entity) a create step makes
    /// an object for: the writer's and the analysis's count of them alike.
    static func condition(of creation: Creation, over origin: RowSource) throws(ExpressionFailure) -> String {
        guard let filter = creation.step.condition else { return origin.condition }
        do {
            return origin.condition + " AND (" + (try ExpressionTranslator(scope: origin.attributes).translate(filter)) + ")"
        } catch {
            throw ExpressionFailure(jsonPath: creation.step.jsonPath + ".where", entity: creation.forEach, reason: error.reason)
        }
    }

    /// `{{first-key:7}}`: replaced by the first free `Z_PK` of the new objects' table when written.
    static func firstKeyToken(_ id: Int) -> String { "{{first-key:\(id)}}" }

    /// The SQL of a destination attribute for rows of `source`.
    private func value(of attribute: AttributeMapping, entity: String, from source: RowSource) throws(ExpressionFailure) -> (String, Bool) {
        var sql: String
        var isRandom = false
        switch attribute.value {
        case .copy(let from, let typeChange):
            sql = source.attributes[from] ?? "NULL"
            isRandom = nondeterministicAttributes.contains("\(source.entity).\(from)")
            if typeChange != .none {
                sql = MigrationFunctions.converting(sql, to: attribute.type, entity: entity, attribute: attribute.name, pk: source.pk)
            }
        case .expression(let expression, let jsonPath):
            let translated: (sql: String, isNondeterministic: Bool)
            do {
                translated = try ExpressionTranslator(scope: source.attributes).translateReporting(expression)
            } catch {
                throw ExpressionFailure(jsonPath: jsonPath, entity: source.entity, reason: error.reason)
            }
            isRandom = translated.isNondeterministic
            sql = MigrationFunctions.converting(translated.sql, to: attribute.type, entity: entity, attribute: attribute.name, pk: source.pk)
        case .defaultValue(let value):
            sql = SQLLiteral.value(value)
        case .null, .missing:
            sql = "NULL"
        }
        if let replacement = attribute.nullReplacement, sql != "NULL" {
            sql = "COALESCE(\(sql), \(SQLLiteral.value(replacement)))"
        } else if let replacement = attribute.nullReplacement {
            sql = SQLLiteral.value(replacement)
        } else if attribute.isRequired, case .expression = attribute.value {
            sql = MigrationFunctions.requiring(sql, entity: entity, attribute: attribute.name, pk: source.pk)
        }
        return (sql, isRandom)
    }

    /// The source link set a destination relationship (or its inverse) takes its links from,
    /// and whether it is seen from the other side.
    private func sourceLinks(for end: LinkSet.End, inverse: LinkSet.End?, mapping: HopMapping) -> (LinkSet, flipped: Bool)? {
        for (candidate, isInverse) in [(end, false), (inverse, true)] {
            guard let candidate, let sourceEnd = sourceEnd(of: candidate, mapping: mapping),
                let (set, side) = linkSet(for: sourceEnd)
            else { continue }
            let flipped = (side == .b) != isInverse
            if flipped, set.b == nil { continue }
            return (set, flipped)
        }
        return nil
    }

    /// The source relationship end a destination end maps from.
    private func sourceEnd(of end: LinkSet.End, mapping: HopMapping) -> LinkSet.End? {
        guard let entity = mapping.entity(named: end.entity), let sourceEntity = entity.source,
            let relationship = entity.relationships.first(where: { $0.name == end.relationship }), let sourceName = relationship.source,
            let sourceDescription = version.model.entity(named: sourceEntity)
        else { return nil }
        for ancestor in version.model.ancestry(of: sourceDescription).reversed() where ancestor.relationships.contains(where: { $0.name == sourceName }) {
            return LinkSet.End(entity: ancestor.name, relationship: sourceName)
        }
        return nil
    }

    /// The end (declaring entity) of relationship `name` as `entity` sees it.
    private func destinationEnd(of name: String, entity: String, model: ManagedObjectModel) -> LinkSet.End? {
        guard let description = model.entity(named: entity) else { return nil }
        for ancestor in model.ancestry(of: description).reversed() where ancestor.relationships.contains(where: { $0.name == name }) {
            return LinkSet.End(entity: ancestor.name, relationship: name)
        }
        return nil
    }
}
