import SRSQLite

/// Runs a plan's hops over a store without writing: composes each version (`VirtualVersion`)
/// over the store and asks the data every question the plan leaves open, one scan per table
/// for all versions at once (aggregates with `FILTER`), plus a query per relationship check.
///
/// `match` uses it to predict 134110 and friends; `migrate --dry-run` prints all of it; the
/// migration itself refuses on the same answers — so the three can never disagree.
struct MigrationAnalyzer {
    let connection: SQLiteConnection
    /// The versions along the path, the first being the store's (over `baseSchema`).
    let states: [VirtualVersion]
    let mappings: [HopMapping]
    /// The Swift handlers of the plan's custom stages: like catalog steps, they run between
    /// versions, and a uniqueness check after them waits for them (`stepsBeforeCopy`).
    var handlers: [CustomStageHandlers] = []

    /// What to count: everything a dry run shows (`forecast`: also the links the writing will
    /// clear, which costs a scan per relationship), everything a migration reports and checks
    /// (`full`), or only what decides refusals (`match`).
    enum Depth { case forecast, full, refusalsOnly }

    /// One aggregate over one row source, answered by the batched scans.
    struct Request {
        var from: String
        var expression: String
        var key: String
    }

    func analyse(depth: Depth = .full) throws -> MigrationAnalysis {
        var requests: [Request] = []
        func count(_ source: RowSource, where extra: String? = nil, key: String) {
            let condition = extra.map { "(\(source.condition)) AND (\($0))" } ?? source.condition
            requests.append(Request(from: source.from, expression: "count(*) FILTER (WHERE \(condition))", key: key))
        }
        for (index, state) in states.enumerated() {
            for source in state.rowSources { count(source, key: "rows|\(index)|\(source.entity)") }
            if depth != .refusalsOnly {
                for (number, left) in state.leftOutOwnColumns.enumerated() {
                    requests.append(Request(
                        from: left.from, expression: "count(*) FILTER (WHERE (\(left.condition)) AND (\(left.column.expression)) IS NOT NULL)",
                        key: "own|\(index)|\(number)"))
                }
            }
        }
        for (index, mapping) in mappings.enumerated() {
            let before = states[index]
            for entity in mapping.entities {
                guard let sourceEntity = entity.source else { continue }
                for source in before.rowSources(of: sourceEntity) {
                    if depth != .refusalsOnly {
                        for removed in entity.removedAttributes {
                            let value = MigrationFunctions.keepingUnconverted(source.attributes[removed] ?? "NULL")
                            count(source, where: "(\(value)) IS NOT NULL", key: "removed|\(index)|\(sourceEntity).\(removed)")
                        }
                    }
                    for attribute in entity.attributes {
                        guard case .copy(let from, _) = attribute.value else { continue }
                        // A later hop reads the earlier hops' conversions, whose value may not convert:
                        // never stopping the count (a review's dry run failed there, exit 70, with
                        // SQLite's error and the statement). Such a value is the earlier hop's to
                        // report: it is not missing here, nor counted again as not converting.
                        let value = source.attributes[from] ?? "NULL"
                        if mapping.checks.contains(.rowsNeedValue(entity: entity.name, property: attribute.name, kind: "attribute", onlyNulls: true)) {
                            count(source, where: "(\(MigrationFunctions.keepingUnconverted(value))) IS NULL", key: "nulls|\(index)|\(entity.name).\(attribute.name)")
                        }
                        if mapping.checks.contains(.unconvertibleValues(entity: entity.name, attribute: attribute.name, sourceAttribute: from, type: attribute.type)) {
                            count(source, where: Self.doesNotConvert(MigrationFunctions.nonStopping(value), to: attribute.type),
                                  key: "unconvertible|\(index)|\(entity.name).\(attribute.name)")
                        }
                    }
                }
            }
        }
        // Values custom stages compute, in the same scans (`MigrationAnalyzer+ComputedValues`).
        let computed = mappings.indices.map { computedValues(ofHop: $0) }
        for (index, values) in computed.enumerated() { requests += computedValueRequests(values, hop: index) }
        // A removed attribute's values are counted through the earlier hops' expressions: one
        // SQLite stops on (`abs()` of the smallest integer) is that hop's computed value to
        // refuse (134140), not a failed analysis (review rv7: exit 70 "internal error").
        let (answers, failures) = try run(requests, isolating: { $0.key.hasPrefix(Self.computedKeyPrefix) || $0.key.hasPrefix("removed|") })
        func answer(_ key: String) -> Int64 { answers[key] ?? 0 }

        var analysis = MigrationAnalysis(rowsByVersion: [], discarded: [], linksToClear: [:], refusals: [], countsPrecedeCustomSteps: false)
        for (index, state) in states.enumerated() {
            var rows: [String: Int64] = [:]
            for entity in state.version.model.entities { rows[entity.name] = answer("rows|\(index)|\(entity.name)") }
            analysis.rowsByVersion.append(.init(version: state.version.name, rows: rows))
        }
        for (index, mapping) in mappings.enumerated() {
            let hop = "\(mapping.hop.from) → \(mapping.hop.to)"
            let before = states[index]
            if !mapping.hop.custom.willMigrate.isEmpty || !mapping.hop.custom.didMigrate.isEmpty { analysis.countsPrecedeCustomSteps = true }
            var discarded = MigrationAnalysis.Discarded(hop: hop, entityRows: [:], attributeValues: [:], relationshipLinks: [:])
            for removed in mapping.removedEntities {
                discarded.entityRows[removed.name] = answer("rows|\(index)|\(removed.name)")
            }
            for entity in mapping.entities {
                guard let sourceEntity = entity.source else { continue }
                for removed in entity.removedAttributes {
                    let values = answer("removed|\(index)|\(sourceEntity).\(removed)")
                    discarded.attributeValues["\(sourceEntity).\(removed)", default: 0] += values
                }
            }
            if depth != .refusalsOnly {
                for set in before.links where !survives(set, mapping, before: before) {
                    discarded.relationshipLinks[set.a.description] = try linkCount(set)
                }
            }
            if depth != .refusalsOnly {
                // An app's own columns left out on the way to this hop's destination (and, at the
                // first hop, the store's generated ones).
                for stateIndex in (index == 0 ? [0, 1] : [index + 1]) where stateIndex < states.count {
                    for (number, left) in states[stateIndex].leftOutOwnColumns.enumerated() {
                        let values = answer("own|\(stateIndex)|\(number)")
                        analysis.leftOutColumns.append(.init(
                            column: left.column.qualifiedName, hop: hop, values: values, discardsData: left.reason.discardsData,
                            reason: left.reason.summary))
                        if left.reason.discardsData {
                            discarded.attributeValues[MigrationAnalysis.discardedName(of: left.column.qualifiedName), default: 0] += values
                        }
                    }
                }
            }
            analysis.discarded.append(discarded)
            analysis.refusals += try storeVersionRefusals(ofHop: index)
            analysis.refusals += try refusals(for: mapping, index: index, answer: answer)
            analysis.stepsUnderUniqueness += stepsUnderUniqueness(ofHop: index)
            let steps = stepsBeforeCopy(ofHop: index)
            if !steps.isEmpty {
                for case .duplicates(let entity, let properties, _, _) in mapping.checks {
                    analysis.deferredUniquenessChecks.append(.init(
                        hopIndex: index, hop: hop, version: mapping.hop.to, entity: entity, properties: properties, steps: steps))
                }
            }
            analysis.deferredConversionChecks += try deferredConversionChecks(ofHop: index, answer: answer)
            // Computed values steps before the copy may change (what the expression reads): the
            // run checks them after the steps; otherwise refused now.
            let found = try computedValueRefusals(computed[index], hop: index, answer: answer, failures: failures)
            if !found.isEmpty, !steps.isEmpty {
                analysis.deferredComputedValueChecks.append(.init(
                    hopIndex: index, hop: hop, version: mapping.hop.to, refusalsBeforeSteps: found, steps: steps))
            } else {
                analysis.refusals += found
            }
        }
        if depth == .forecast, mappings.count > 0, let last = states.last { analysis.linksToClear = try linksToClear(in: last) }
        if depth != .refusalsOnly, mappings.count > 0, let last = states.last {
            analysis.carriedColumns = last.carriedOwnColumns()
            analysis.leftOutColumns = analysis.leftOutColumns.merged()
        }
        return analysis
    }

    /// The links writing `state` will clear, per relationship (`Entity.relationship`): those
    /// naming an object that is not of the relationship's kind there — discarded by a hop, moved
    /// out of the destination's hierarchy, or already missing in the store. The same places and
    /// the same tests as `VersionWriter`'s `insertJoinRows` and `clearDanglingLinks`, asked of
    /// the base instead of the written file.
    func linksToClear(in state: VirtualVersion) throws -> [String: Int64] {
        let layout = state.layout
        let firstKeys = try state.firstFreeKeys(using: connection)
        func resolved(_ sql: String) -> String { VirtualVersion.resolve(sql, firstKeys) }
        func keys(_ entity: String) -> String? { state.keys(ofKind: entity, firstKeys: firstKeys) }
        var result: [String: Int64] = [:]
        func add(_ end: LinkSet.End, _ sql: String) throws {
            let count = try connection.scalar(sql)?.int64 ?? 0
            if count > 0 { result[end.description, default: 0] += count }
        }
        for table in layout.tables where table.rootEntity == nil {
            guard let (end, _) = state.joinTableEnd(table.name), let (set, side) = state.linkSet(for: end), !set.isEmpty,
                let relationship = state.relationship(at: end), let this = keys(end.entity), let other = keys(relationship.destinationEntityName)
            else { continue }
            let (thisColumn, thatColumn, thisOrder, thatOrder) = side == .a ? ("a", "b", "na", "nb") : ("b", "a", "nb", "na")
            try add(end, """
                SELECT count(*) FROM (SELECT DISTINCT \(thisColumn) AS this, \(thatColumn) AS other, \(thisOrder), \(thatOrder) FROM (\(resolved(set.query))) \
                WHERE \(thisColumn) IS NOT NULL AND \(thatColumn) IS NOT NULL) WHERE this NOT IN (\(this)) OR other NOT IN (\(other))
                """)
        }
        for (entity, relationships) in layout.relationshipStorage.sorted(by: { $0.key < $1.key }) {
            for (name, storage) in relationships.sorted(by: { $0.key < $1.key }) {
                guard let end = state.declaringEnd(name, of: entity), end.entity == entity, let relationship = state.relationship(at: end),
                    let (set, side) = state.linkSet(for: end), !set.isEmpty,
                    let targets = keys(relationship.destinationEntityName), let owners = keys(entity)
                else { continue }
                let (own, partner) = side == .a ? ("a", "b") : ("b", "a")
                switch storage {
                case .foreignKey:
                    // The rows of the owner's kind whose to-one names no object of the target's kind.
                    try add(end, """
                        SELECT count(DISTINCT \(own)) FROM (\(resolved(set.query))) WHERE \(own) IN (\(owners)) \
                        AND \(partner) IS NOT NULL AND \(partner) NOT IN (\(targets))
                        """)
                    result[end.description, default: 0] += try state.linksOnRowsThatLeft(end, onOwnRows: true, firstKeys: firstKeys, using: connection)
                case .destinationColumn:
                    // The target's rows whose hidden column names no object of the owner's kind.
                    try add(end, """
                        SELECT count(DISTINCT \(partner)) FROM (\(resolved(set.query))) WHERE \(partner) IN (\(targets)) \
                        AND \(own) IS NOT NULL AND \(own) NOT IN (\(owners))
                        """)
                    result[end.description, default: 0] += try state.linksOnRowsThatLeft(end, onOwnRows: false, firstKeys: firstKeys, using: connection)
                case .inverse, .joinTable:
                    continue
                }
            }
        }
        return result.filter { $0.value > 0 }
    }

    /// True when a destination relationship takes this set's links (through either end).
    private func survives(_ set: LinkSet, _ mapping: HopMapping, before: VirtualVersion) -> Bool {
        var kept: Set<LinkSet.End> = []
        for entity in mapping.entities {
            guard let source = entity.source else { continue }
            for relationship in entity.relationships {
                guard let name = relationship.source else { continue }
                kept.insert(LinkSet.End(entity: declaring(name, of: source, in: before), relationship: name))
            }
        }
        return kept.contains(set.a) || set.b.map(kept.contains) == true
    }

    private func refusals(for mapping: HopMapping, index: Int, answer: (String) -> Int64) throws -> [MigrationRefusal] {
        let hop = "\(mapping.hop.from) → \(mapping.hop.to)"
        let before = states[index]
        var result: [MigrationRefusal] = []
        for check in mapping.checks {
            switch check {
            case .rowsNeedValue(let entity, let property, let kind, let onlyNulls):
                guard let source = mapping.entity(named: entity)?.source else { continue }
                let rows: Int64
                if !onlyNulls {
                    rows = answer("rows|\(index)|\(source)")
                } else if kind == "attribute" {
                    rows = answer("nulls|\(index)|\(entity).\(property)")
                } else {
                    rows = try rowsWithoutLinks(entity: source, relationship: mapping.entity(named: entity)?.relationships.first { $0.name == property }?.source, in: before)
                }
                guard rows > 0 else { continue }
                let what = onlyNulls ? "now required, and \(rows) \(entity) rows have no value for it" : "required and new, and \(rows) \(entity) rows exist"
                let stage = mapping.hop.kind == .custom ? "add to the custom stage \(hop)\(mapping.hop.stage.map { " (\($0))" } ?? "")" : "declare the stage \(hop) custom, with"
                result.append(MigrationRefusal(
                    code: .mandatoryValueMissing, hop: hop, entity: entity, property: property, rowCount: rows,
                    message: "\(entity).\(property) (\(kind)) is \(what) with no default",
                    remedy: kind == "attribute"
                        ? "give \(property) a default value in \(mapping.hop.to), make it optional, or \(stage) \"map\": {\"\(entity)\": {\"\(property)\": \"<expression over \(source)'s attributes>\"}}"
                        : "make \(property) optional, or \(stage) a \"create\" step that links it",
                    propertyKind: kind, destinationVersion: mapping.hop.to))
            case .unconvertibleValues(let entity, let attribute, let sourceAttribute, let type):
                let rows = answer("unconvertible|\(index)|\(entity).\(attribute)")
                guard rows > 0 else { continue }
                let sourceEntity = mapping.entity(named: entity)?.source ?? entity
                // Steps that run first may correct the values: the run checks after them
                // (`deferredConversionChecks`, `conversionRefusals`).
                guard stepsBeforeCopy(ofHop: index, changing: sourceAttribute, of: sourceEntity).isEmpty else { continue }
                result.append(try unconvertibleRefusal(
                    hop: mapping.hop, entity: entity, attribute: attribute, sourceEntity: sourceEntity, sourceAttribute: sourceAttribute, type: type,
                    rows: rows, in: before))
            case .duplicates(let entity, let properties, let valueChanges, let covered):
                // Steps that run first may remove the duplicates (seed 003): the run checks
                // after them (`deferredUniquenessChecks`, `uniquenessRefusals`).
                guard stepsBeforeCopy(ofHop: index).isEmpty else { continue }
                if let refusal = try duplicatesRefusal(
                    entity: entity, properties: properties, valueChanges: valueChanges, covered: covered, mapping: mapping, after: states[index + 1])
                {
                    result.append(refusal)
                }
            case .severalOwners(let entity, let relationship, let sourceEntity, let sourceRelationship):
                guard let (set, side) = before.linkSet(for: LinkSet.End(entity: declaring(sourceRelationship, of: sourceEntity, in: before), relationship: sourceRelationship)) else { continue }
                let (owner, owned) = side == .a ? ("a", "b") : ("b", "a")
                let shared = try connection.scalar(
                    "SELECT count(*) FROM (SELECT \(owned) FROM (\(set.query)) WHERE \(owned) IS NOT NULL AND \(owner) IS NOT NULL GROUP BY \(owned) HAVING count(DISTINCT \(owner)) > 1)")?.int64 ?? 0
                guard shared > 0 else { continue }
                let destination = mapping.entity(named: entity)?.relationships.first { $0.name == relationship }?.destinationEntity ?? "destination"
                result.append(MigrationRefusal(
                    code: .toManyHasSeveralLinks, hop: hop, entity: entity, property: relationship, rowCount: shared,
                    message: "\(entity).\(relationship) becomes a to-many with no inverse, which keeps one \(entity) per \(destination) object, and \(shared) objects are linked from more than one \(sourceEntity) through \(sourceRelationship)",
                    remedy: "keep an inverse (a many-to-many), or a willMigrate step that leaves each object one \(sourceEntity)"))
            case .severalLinks(let entity, let relationship, let sourceEntity, let sourceRelationship):
                guard let (set, side) = before.linkSet(for: LinkSet.End(entity: declaring(sourceRelationship, of: sourceEntity, in: before), relationship: sourceRelationship)) else { continue }
                let column = side == .a ? "a" : "b"
                let other = side == .a ? "b" : "a"
                let owners = try connection.scalar(
                    "SELECT count(*) FROM (SELECT \(column) FROM (\(set.query)) WHERE \(column) IS NOT NULL AND \(other) IS NOT NULL GROUP BY \(column) HAVING count(*) > 1)")?.int64 ?? 0
                guard owners > 0 else { continue }
                result.append(MigrationRefusal(
                    code: .toManyHasSeveralLinks, hop: hop, entity: entity, property: relationship, rowCount: owners,
                    message: "\(entity).\(relationship) becomes a to-one, and \(owners) \(sourceEntity) objects have more than one link through \(sourceRelationship)",
                    remedy: "a willMigrate step that keeps one link per object, or keep the relationship to-many"))
            }
        }
        result += try createdWithoutRequiredValues(mapping, before: before)
        return result
    }

    /// A create step that leaves a required attribute with no default unset, and makes objects:
    /// the run would stop at the first of them (`storerescue_missing`), so it is refused before,
    /// by the dry run and the run alike (a review's dry run said the migration could run).
    private func createdWithoutRequiredValues(_ mapping: HopMapping, before: VirtualVersion) throws -> [MigrationRefusal] {
        var result: [MigrationRefusal] = []
        for creation in mapping.creations {
            guard let entity = mapping.entity(named: creation.entity) else { continue }
            let unset = entity.attributes.filter { attribute in
                attribute.isRequired && attribute.defaultValue == nil && !creation.assignments.contains { $0.property == attribute.name }
            }
            guard !unset.isEmpty else { continue }
            var rows: Int64 = 0
            for origin in before.rowSources(ofKind: creation.forEach) {
                let condition = try VirtualVersion.condition(of: creation, over: origin)
                rows += try connection.scalar("SELECT count(*) FROM \(origin.from) \(RowSource.alias) WHERE \(condition)")?.int64 ?? 0
            }
            guard rows > 0 else { continue }
            for attribute in unset {
                result.append(MigrationRefusal(
                    code: .mandatoryValueMissing, hop: "\(mapping.hop.from) → \(mapping.hop.to)", entity: creation.entity, property: attribute.name,
                    rowCount: rows,
                    message: "\(creation.entity).\(attribute.name) (attribute) is required with no default, and the create step \(creation.step.jsonPath) "
                        + "does not set it: the \(rows) \(creation.entity) objects it makes would have no value",
                    remedy: "set \(attribute.name) in the create step (\"set\": {\"\(attribute.name)\": \"<expression over \(creation.forEach)'s attributes>\"}), "
                        + "give it a default value in \(mapping.hop.to), or make it optional",
                    propertyKind: "attribute", destinationVersion: mapping.hop.to))
            }
        }
        return result
    }

    /// The steps that run before hop `index` copies the data, which the analysis cannot foresee:
    /// `willMigrate` of that hop and of earlier ones, `didMigrate` of earlier ones (a hop's own
    /// `didMigrate` runs after its copy, as on the device), catalog steps and Swift handlers.
    ///
    /// - Parameter counts: whether a catalog step counts, given the index in `states` of the
    ///   version it runs on (every step, by default); a handler, which may do anything, always does.
    func stepsBeforeCopy(
        ofHop index: Int, counting counts: (CustomStageDefinition.DataStep, Int) -> Bool = { _, _ in true }
    ) -> [String] {
        var steps: [String] = []
        for (position, mapping) in mappings.prefix(index + 1).enumerated() {
            let hop = mapping.hop
            let stage = hop.stage ?? hop.summary
            let handler = handlers.first { $0.from == hop.from && $0.to == hop.to }
            if hop.custom.willMigrate.contains(where: { counts($0, position) }) { steps.append("the willMigrate steps of \(stage)") }
            if handler?.willMigrate != nil { steps.append("the willMigrate handler of \(hop.from) → \(hop.to)") }
            guard position < index else { continue }
            if hop.custom.didMigrate.contains(where: { counts($0, position + 1) }) { steps.append("the didMigrate steps of \(stage)") }
            if handler?.didMigrate != nil { steps.append("the didMigrate handler of \(hop.from) → \(hop.to)") }
        }
        return steps
    }

    /// The hop's custom steps that set values the version they run on keeps unique: catalog
    /// `update` steps setting a property in a constraint's columns, and Swift handlers (which
    /// may set any).
    func stepsUnderUniqueness(ofHop index: Int) -> [MigrationAnalysis.StepsUnderUniqueness] {
        let mapping = mappings[index]
        let hop = mapping.hop
        let stage = hop.stage ?? hop.summary
        let handler = handlers.first { $0.from == hop.from && $0.to == hop.to }
        let phases: [(String, [CustomStageDefinition.DataStep], Bool, VirtualVersion)] = [
            ("willMigrate", hop.custom.willMigrate, handler?.willMigrate != nil, states[index]),
            ("didMigrate", hop.custom.didMigrate, handler?.didMigrate != nil, states[index + 1]),
        ]
        var result: [MigrationAnalysis.StepsUnderUniqueness] = []
        for (phase, steps, hasHandler, state) in phases {
            let model = state.version.model
            let layout = state.layout
            // Table and column of every value the steps set.
            var written: Set<[String]> = []
            for step in steps {
                guard case .update(let assignments) = step.action, let table = layout.table(ofEntity: step.entity, in: model)?.name else { continue }
                for assignment in assignments {
                    if let column = layout.propertyColumns[step.entity]?[assignment.property] { written.insert([table, column]) }
                }
            }
            // One unique index per table and columns, named once, by the entity declaring it
            // highest (a constraint redeclared down a hierarchy was listed at every level).
            var byIndex: [[String]: (name: String, depth: Int)] = [:]
            for entity in model.entities {
                guard let table = layout.table(ofEntity: entity.name, in: model)?.name else { continue }
                let depth = model.ancestry(of: entity).count
                for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
                    let columns = constraint.compactMap { layout.propertyColumns[entity.name]?[$0] }
                    guard hasHandler || columns.contains(where: { written.contains([table, $0]) }) else { continue }
                    let key = [table] + columns.sorted()
                    guard depth < byIndex[key]?.depth ?? Int.max else { continue }
                    byIndex[key] = ("\(entity.name).\(constraint.joined(separator: " + "))", depth)
                }
            }
            let constrained = byIndex.values.map(\.name).sorted()
            guard !constrained.isEmpty else { continue }
            let what = [steps.isEmpty ? nil : "the \(phase) steps of \(stage)", hasHandler ? "the \(phase) handler of \(hop.from) → \(hop.to)" : nil]
            result.append(.init(
                hop: "\(hop.from) → \(hop.to)", version: state.version.name, steps: what.compactMap { $0 }.joined(separator: " and "),
                constrained: constrained))
        }
        return result
    }

    /// The uniqueness refusals of the single hop this analyzer spans (`states` before and after
    /// it, over a base on which every step before its copy has run): the check the analysis
    /// deferred, made by the run at the point Core Data would make it.
    func uniquenessRefusals() throws -> [MigrationRefusal] {
        guard let mapping = mappings.first, states.count == 2 else { return [] }
        var result: [MigrationRefusal] = []
        for case .duplicates(let entity, let properties, let valueChanges, let covered) in mapping.checks {
            if let refusal = try duplicatesRefusal(
                entity: entity, properties: properties, valueChanges: valueChanges, covered: covered, mapping: mapping, after: states[1])
            {
                result.append(refusal)
            }
        }
        return result
    }

    /// Objects that share values of `entity`'s constraint over `properties` at `after`, grouped
    /// by the very expressions the writer inserts (conversions, `map`, defaults): the unique
    /// index it creates would refuse them. The objects are those of every entity in `covered`,
    /// the ones whose values the index holds (a hierarchy shares one table, and the index is on
    /// its columns: a subentity's constraint over an inherited attribute holds its siblings'
    /// values too).
    ///
    /// Each row source's values are selected as the writer's `INSERT … SELECT` selects them —
    /// its own expressions and condition, the keys of created objects from `row_number()`,
    /// which SQLite allows only in a select list, never in `WHERE` or `GROUP BY` (a review's
    /// runs stopped there, exit 70) — and all of the objects, kept and created, are grouped
    /// together, as the written table's unique index sees them.
    /// The most SELECTs (a kept entity's rows — those of one hierarchy's entities kept in one
    /// table are one —, each `create` step's objects) one uniqueness check compares before the
    /// run; past it the written index decides.
    static let maximumComparedRowSources = 32
    /// The most row sources' conditions one SELECT of a uniqueness check joins with OR (kept far
    /// below SQLite's expression depth of 1,000).
    static let maximumMergedConditions = 100

    private func duplicatesRefusal(
        entity: String, properties: [String], valueChanges: [String], covered: [String: [String]], mapping: HopMapping, after: VirtualVersion
    ) throws -> MigrationRefusal? {
        guard let (duplicates, objects) = try sharedValues(entity: entity, properties: properties, covered: covered, at: after) else { return nil }
        let constrained = "\(entity).\(properties.joined(separator: " + "))"
        let remedy: String
        if valueChanges.isEmpty {
            remedy = "declare the stage custom with a willMigrate step that removes or renames the duplicates (seed 003)"
        } else if valueChanges == [UniqueIndexCheckBuilder.newlyTogether] {
            // The values are as they were; what changed is which objects one index holds.
            remedy = "keep \(properties.joined(separator: ", ")) and the constraint on each subentity as the source version has them, "
                + "or declare the stage custom with a willMigrate step that makes the values distinct (seed 003)"
        } else if valueChanges.first?.hasPrefix(UniqueIndexCheckBuilder.storeLacksPrefix) == true {
            // A willMigrate step would run on the store's version written out, with that index.
            remedy = "make the values distinct in the store before migrating it (the app, or SQL on a copy), or compute \(properties.joined(separator: ", ")) "
                + "with a custom stage's map that keeps them distinct; a willMigrate step cannot: it runs on a \(mapping.hop.from) store with that unique index"
        } else {
            remedy = "declare the stage custom with a willMigrate step that removes or renames the objects whose values become equal (seed 003), or keep the values as they are"
        }
        return MigrationRefusal(
            code: .uniquenessViolated, hop: "\(mapping.hop.from) → \(mapping.hop.to)", entity: entity, property: properties.joined(separator: ", "),
            rowCount: duplicates,
            message: valueChanges.isEmpty
                ? "\(mapping.hop.to) makes \(constrained) unique, and \(duplicates) values are shared by several \(objects)"
                : "\(mapping.hop.to) keeps \(constrained) unique and \(valueChanges.joined(separator: ", ")): then \(duplicates) values are shared by several \(objects)",
            remedy: remedy)
    }

    /// The store's own values that its version's constraints forbid, where the store lacks the
    /// unique index (`HopMapping.storeChecks`) and the run writes that version out before hop
    /// `index`'s steps: that index would stop the run there (review case c9).
    func storeVersionRefusals(ofHop index: Int) throws -> [MigrationRefusal] {
        let mapping = mappings[index]
        let steps = stepsBeforeCopy(ofHop: index)
        guard index == 0, !steps.isEmpty else { return [] }
        var result: [MigrationRefusal] = []
        for case .duplicates(let entity, let properties, let valueChanges, let covered) in mapping.storeChecks {
            guard let (duplicates, objects) = try sharedValues(entity: entity, properties: properties, covered: covered, at: states[0]) else { continue }
            let constrained = "\(entity).\(properties.joined(separator: " + "))"
            result.append(MigrationRefusal(
                code: .uniquenessViolated, hop: "\(mapping.hop.from) → \(mapping.hop.to)", entity: entity, property: properties.joined(separator: ", "),
                rowCount: duplicates,
                message: "\(mapping.hop.from) makes \(constrained) unique, and the store lacks its unique index \(valueChanges.joined(separator: ", ")): "
                    + "\(duplicates) values are shared by several \(objects), and the run writes \(mapping.hop.from), with that index, before \(steps.joined(separator: " and "))",
                remedy: "make the values distinct in the store before migrating it (the app, or SQL on a copy): a step cannot, as it runs on that \(mapping.hop.from) store"))
        }
        return result
    }

    /// How many values of `entity`'s constraint over `properties` are shared at `after`, and by
    /// whose objects, in words; nil when none is (or past `maximumComparedRowSources`).
    private func sharedValues(
        entity: String, properties: [String], covered: [String: [String]], at after: VirtualVersion
    ) throws -> (count: Int64, objects: String)? {
        let columns = properties.indices.map { "v\($0)" }
        let firstKeys = try after.firstFreeKeys(using: connection)
        // Row sources that read the same FROM item with the same value expressions — the
        // entities of one hierarchy, kept as they are, in one table — are one SELECT, their
        // conditions joined with OR and the entity told by the first that holds: one scan of
        // the table, not one per entity (a review's hierarchy of 32 subentities passed the
        // limit below one source per entity, and its dry run no longer checked anything).
        var sources: [(from: String, values: String, members: [(entity: String, condition: String)])] = []
        var sourceIndex: [String: Int] = [:]
        for (name, names) in covered.sorted(by: { $0.key < $1.key }) {
            for source in after.rowSources(of: name) {
                let values = zip(names, columns).map { property, column in
                    "\(storedValue(property, of: source, at: after, firstKeys: firstKeys)) AS \(column)"
                }.joined(separator: ", ")
                let key = source.from + "\u{0}" + values
                if let index = sourceIndex[key] {
                    sources[index].members.append((name, source.condition))
                } else {
                    sourceIndex[key] = sources.count
                    sources.append((source.from, values, [(name, source.condition)]))
                }
            }
        }
        var rows: [String] = []
        for group in sources {
            for start in stride(from: 0, to: group.members.count, by: Self.maximumMergedConditions) {
                let members = group.members[start..<min(start + Self.maximumMergedConditions, group.members.count)]
                let entity = members.count == 1
                    ? SQLLiteral.string(members[members.startIndex].entity)
                    : "CASE " + members.map { "WHEN (\($0.condition)) THEN \(SQLLiteral.string($0.entity))" }.joined(separator: " ") + " END"
                let condition = members.map { "(\($0.condition))" }.joined(separator: " OR ")
                rows.append("SELECT \(entity) AS e, \(group.values) FROM \(group.from) \(RowSource.alias) WHERE \(condition)")
            }
        }
        // Past `maximumComparedRowSources` (10,000 `create` steps in a hostile catalog), the
        // one query costs more than the run itself — 30 s and 1 GB where the migration took 7 s:
        // the written unique index decides instead, as it did before these checks (a conflict
        // then stops the run with exit 3, nothing written). MIGRATE.md says so.
        guard !rows.isEmpty, rows.count <= Self.maximumComparedRowSources else { return nil }
        // The shared values, and the entities whose objects share them (the message names those,
        // not every entity whose objects the index could hold).
        let list = columns.joined(separator: ", ")
        let groups = try connection.rows(VirtualVersion.resolve("""
            WITH w AS (SELECT e, \(list), count(*) OVER (PARTITION BY \(list)) AS n FROM (\(VirtualVersion.unionAll(rows))) \
            WHERE \(columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND "))) \
            SELECT (SELECT count(*) FROM (SELECT 1 FROM w WHERE n > 1 GROUP BY \(list))), (SELECT group_concat(DISTINCT e) FROM w WHERE n > 1)
            """, firstKeys), maximumRows: 1).first
        let duplicates = groups?.first?.int64 ?? 0
        guard duplicates > 0 else { return nil }
        let holders = (groups?.last?.string ?? "").split(separator: ",").map(String.init).sorted()
        let kind = Set(after.descendants(of: entity))
        let objects = holders.allSatisfy(kind.contains)
            ? "\(entity) objects"
            : "objects of \(holders.joined(separator: ", ")) (Core Data keeps the hierarchy in one table, \(after.layout.table(ofEntity: entity, in: after.version.model)?.name ?? "its table"), "
                + "and the constraint's unique index is on its columns: it holds every object that stores \(properties.joined(separator: ", ")) there)"
        return (duplicates, objects)
    }

    /// What the unique index sees of `property` on the objects of `source` at `after`: an
    /// attribute's value as the writer computes it (`comparedValue`), or a to-one's key as the
    /// writer leaves it — held on the row, or read from the relationship's links, and NULL where
    /// it names no object of the destination's kind (the writer clears those links). Review case
    /// c3: a constraint over a to-one compared NULL for every object, and the run stopped on the
    /// index ("UNIQUE constraint failed: ZDOG.ZOWNER").
    private func storedValue(_ property: String, of source: RowSource, at after: VirtualVersion, firstKeys: [Int: Int64]) -> String {
        if let attribute = source.attributes[property] { return comparedValue(attribute) }
        guard let end = after.declaringEnd(property, of: source.entity), let relationship = after.relationship(at: end), !relationship.isToMany,
            let (set, side) = after.linkSet(for: end), !set.isEmpty,
            let targets = after.keys(ofKind: relationship.destinationEntityName, firstKeys: firstKeys)
        else { return "NULL" }
        let key: String
        if let held = set.held[source.id], held.side == side {
            key = held.other
        } else {
            // A created object's key is a window function's, which a correlated query cannot use:
            // its links are written after its row, and the index then decides (as before).
            guard source.createdFrom == nil else { return "NULL" }
            let (this, other) = side == .a ? ("a", "b") : ("b", "a")
            key = "(SELECT \(other) FROM (\(set.query)) WHERE \(this) = \(source.pk) AND \(other) IS NOT NULL LIMIT 1)"
        }
        return "(CASE WHEN (\(key)) IN (\(targets)) THEN (\(key)) END)"
    }

    /// The value a uniqueness check compares for `sql`, the writer's: a value drawn at random
    /// (`uuid()`) is distinct by construction, so it is NULL here, which the check passes over —
    /// only where it is drawn: an object whose value comes from elsewhere
    /// (`coalesce(code, hex(uuid()))` for one with a code), or does not depend on the draw, is
    /// compared (a review's dry run skipped the whole index as soon as one entity's `map` drew a
    /// value, and the run then stopped on "UNIQUE constraint failed").
    ///
    /// A value that does not convert (or a required one left NULL) counts as NULL too, not as
    /// the writer's error: it is the conversion check's (134140) or the run's.
    private func comparedValue(_ sql: String) -> String {
        let value = MigrationFunctions.nonStopping(sql)
        guard sql.contains(MigrationFunctions.drawnMark) else { return value }
        let probes = (0..<MigrationFunctions.probeCount).map { MigrationFunctions.probing(value, probe: $0) }
        let same = probes.dropFirst().map { "(\(probes[0])) IS (\($0))" }.joined(separator: " AND ")
        return "(CASE WHEN \(same) THEN (\(probes[0])) END)"
    }

    /// The entity declaring `relationship` as `entity` sees it (itself or an ancestor).
    private func declaring(_ relationship: String, of entity: String, in state: VirtualVersion) -> String {
        let model = state.version.model
        guard let description = model.entity(named: entity) else { return entity }
        return model.ancestry(of: description).reversed().first { $0.relationships.contains { $0.name == relationship } }?.name ?? entity
    }

    private func rowsWithoutLinks(entity: String, relationship: String?, in state: VirtualVersion) throws -> Int64 {
        var total: Int64 = 0
        let linked: String?
        if let relationship, let (set, side) = state.linkSet(for: LinkSet.End(entity: declaring(relationship, of: entity, in: state), relationship: relationship)) {
            let column = side == .a ? "a" : "b"
            linked = "SELECT \(column) FROM (\(set.query)) WHERE \(column) IS NOT NULL"
        } else {
            linked = nil
        }
        for source in state.rowSources(of: entity) {
            let condition = linked.map { "(\(source.condition)) AND \(source.pk) NOT IN (\($0))" } ?? source.condition
            total += try connection.scalar("SELECT count(*) FROM \(source.from) \(RowSource.alias) WHERE \(condition)")?.int64 ?? 0
        }
        return total
    }

    private func linkCount(_ set: LinkSet) throws -> Int64 {
        guard !set.isEmpty else { return 0 }
        return try connection.scalar("SELECT count(*) FROM (\(set.query)) WHERE a IS NOT NULL AND b IS NOT NULL")?.int64 ?? 0
    }

    /// Answers every request, one statement per table (columns batched by 500).
    func run(_ requests: [Request]) throws -> [String: Int64] {
        try run(requests, isolating: { _ in false }).answers
    }

    /// `run`, where a request `isolating` picks may fail on its own: an expression of the
    /// catalog's that SQLite stops on (`abs()` of the smallest integer: "integer overflow")
    /// fails the batched scan, which is then made again request by request; such a request's
    /// error is returned in `failures` (by key, SQLite's message), the others' answers as ever.
    /// An error of any other request is thrown. (A review's dry run stopped there, exit 70, with
    /// SQLite's error and the statement.)
    /// An error an expression of the catalog's makes SQLite stop with: SQLITE_ERROR ("integer
    /// overflow"), or SQLITE_TOOBIG, a value past the connection's length bound
    /// (`MigrationEngine.maximumValueBytes`: "string or blob too big").
    static func isExpressionFailure(_ error: SQLiteError) -> Bool {
        error.primaryResultCode == SQLITE_ERROR || error.primaryResultCode == SQLITE_TOOBIG
    }

    func run(_ requests: [Request], isolating: (Request) -> Bool) throws -> (answers: [String: Int64], failures: [String: String]) {
        var answers: [String: Int64] = [:]
        var failures: [String: String] = [:]
        for (from, group) in Dictionary(grouping: requests, by: \.from) {
            var start = 0
            while start < group.count {
                let chunk = Array(group[start..<min(start + 500, group.count)])
                func scan(_ requests: [Request]) throws {
                    let sql = "SELECT \(requests.map(\.expression).joined(separator: ", ")) FROM \(from) \(RowSource.alias)"
                    if let row = try connection.rows(sql, maximumRows: 1).first {
                        for (request, value) in zip(requests, row) { answers[request.key, default: 0] += value.int64 ?? 0 }
                    }
                }
                do {
                    try scan(chunk)
                } catch let error as SQLiteError where Self.isExpressionFailure(error) && chunk.contains(where: isolating) {
                    for request in chunk {
                        do {
                            try scan([request])
                        } catch let error as SQLiteError where Self.isExpressionFailure(error) && isolating(request) {
                            failures[request.key] = error.message
                        }
                    }
                }
                start += 500
            }
        }
        return (answers, failures)
    }
}
