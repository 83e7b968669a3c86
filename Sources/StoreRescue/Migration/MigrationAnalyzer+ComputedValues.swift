/// Values a custom stage computes — a `map` expression, a `create` step's `set` — that the writer
/// would stop on: a value that does not convert to the attribute's type (`storerescue_convert`),
/// or NULL for a required attribute (`storerescue_missing`). Counted in the analysis's scans of
/// each table (two `FILTER` aggregates per computed attribute, no pass of their own) and refused
/// before anything is written, naming the expression, the objects and an example (review cases
/// t20, t23: the dry run said the migration could run, and the run stopped on the first object,
/// exit 3). When steps run before the hop's copy they may change what the expressions read: the
/// run checks after them (`MigrationEngine`), as it does a conversion.
extension MigrationAnalyzer {
    /// One computed attribute of one hop, and the row sources (at the hop's source) it is computed over.
    struct ComputedValue {
        struct Source {
            var from: String
            var condition: String
            /// The expression translated over the source's row, never stopping (`nonStopping`).
            var value: String
            var pk: String
        }

        /// `stages[0].map.Item.code`, `stages[0].create[0].set.name`.
        var jsonPath: String
        var entity: String
        var attribute: String
        var type: AttributeType
        /// Whether the writer stops on NULL (`MigrationFunctions.requiring`).
        var stopsOnNull: Bool
        /// For a `create` step: the `forEach` entity whose objects each make one.
        var createdFrom: String?
        var sources: [Source]
    }

    /// The hop's computed attributes, as `VirtualVersion.applying` writes them.
    func computedValues(ofHop index: Int) -> [ComputedValue] {
        let mapping = mappings[index]
        let before = states[index]
        func translated(_ expression: String, over source: RowSource) -> String? {
            (try? ExpressionTranslator(scope: source.attributes).translateReporting(expression)).map { MigrationFunctions.nonStopping($0.sql) }
        }
        var result: [ComputedValue] = []
        for entity in mapping.entities {
            guard let sourceEntity = entity.source else { continue }
            for attribute in entity.attributes {
                guard case .expression(let expression, let jsonPath) = attribute.value else { continue }
                let sources = before.rowSources(of: sourceEntity).compactMap { source in
                    translated(expression, over: source).map { ComputedValue.Source(from: source.from, condition: source.condition, value: $0, pk: source.pk) }
                }
                result.append(ComputedValue(
                    jsonPath: jsonPath.isEmpty ? "\(mapping.hop.stage ?? mapping.hop.summary).map.\(entity.name).\(attribute.name)" : jsonPath, entity: entity.name, attribute: attribute.name, type: attribute.type,
                    stopsOnNull: attribute.isRequired && attribute.nullReplacement == nil, createdFrom: nil, sources: sources))
            }
        }
        for creation in mapping.creations {
            guard let entity = mapping.entity(named: creation.entity) else { continue }
            for attribute in entity.attributes {
                guard let assignment = creation.assignments.last(where: { $0.property == attribute.name }) else { continue }
                let sources = before.rowSources(ofKind: creation.forEach).compactMap { origin -> ComputedValue.Source? in
                    guard let condition = try? VirtualVersion.condition(of: creation, over: origin), let value = translated(assignment.expression, over: origin)
                    else { return nil }
                    return ComputedValue.Source(from: origin.from, condition: condition, value: value, pk: origin.pk)
                }
                result.append(ComputedValue(
                    jsonPath: assignment.jsonPath.isEmpty ? "\(creation.step.jsonPath).set.\(attribute.name)" : assignment.jsonPath,
                    entity: creation.entity, attribute: attribute.name, type: attribute.type, stopsOnNull: attribute.isRequired,
                    createdFrom: creation.forEach, sources: sources))
            }
        }
        return result
    }

    /// The condition true where the writer stops on `value` (`null`: for being NULL).
    private static func stops(_ value: String, _ computed: ComputedValue, null: Bool) -> String {
        null ? "(\(value)) IS NULL" : doesNotConvert(value, to: computed.type)
    }

    static let computedKeyPrefix = "computed"

    private static func key(_ null: Bool, hop: Int, _ position: Int) -> String { "\(computedKeyPrefix)\(null ? "null" : "bad")|\(hop)|\(position)" }

    /// The aggregates that count the objects each computed value stops on, for the batched scans.
    func computedValueRequests(_ values: [ComputedValue], hop: Int) -> [Request] {
        var requests: [Request] = []
        for (position, computed) in values.enumerated() {
            for null in computed.stopsOnNull ? [false, true] : [false] {
                for source in computed.sources {
                    requests.append(Request(
                        from: source.from, expression: "count(*) FILTER (WHERE (\(source.condition)) AND \(Self.stops(source.value, computed, null: null)))",
                        key: Self.key(null, hop: hop, position)))
                }
            }
        }
        return requests
    }

    /// The refusals of hop `hop`'s computed values, from the counts (`answer`); `afterSteps` when
    /// the run counted them after those steps ran.
    func computedValueRefusals(
        _ values: [ComputedValue], hop: Int, answer: (String) -> Int64, failures: [String: String] = [:], afterSteps: String? = nil
    ) throws -> [MigrationRefusal] {
        let mapping = mappings[hop]
        var result: [MigrationRefusal] = []
        for (position, computed) in values.enumerated() {
            // An expression SQLite stops on for some object ("integer overflow"): the writer would
            // stop on it too. Refused as the catalog's, once, naming it and SQLite's reason.
            if let failure = failures[Self.key(false, hop: hop, position)] ?? failures[Self.key(true, hop: hop, position)] {
                let correct = afterSteps.map { "correct \($0) or \(computed.jsonPath)" } ?? "correct \(computed.jsonPath)"
                result.append(MigrationRefusal(
                    code: .invalidCustomStage, hop: "\(mapping.hop.from) → \(mapping.hop.to)", entity: computed.entity,
                    property: computed.attribute, rowCount: nil,
                    message: "\(computed.jsonPath): SQLite stops computing it for some \(computed.entity) objects (\(failure))"
                        + (afterSteps.map { " (checked after \($0) ran)" } ?? ""),
                    remedy: "\(correct) so that SQLite can compute it for every object",
                    propertyKind: "attribute", destinationVersion: mapping.hop.to))
                continue
            }
            for null in computed.stopsOnNull ? [false, true] : [false] {
                let rows = answer(Self.key(null, hop: hop, position))
                guard rows > 0 else { continue }
                var example: String?
                for source in computed.sources where example == nil {
                    let sql = "SELECT \(source.value), \(source.pk) FROM \(source.from) \(RowSource.alias) WHERE (\(source.condition)) AND \(Self.stops(source.value, computed, null: null)) LIMIT 1"
                    if let row = try connection.rows(sql, maximumRows: 1).first {
                        let pk = row[1].int64.map(String.init) ?? "?"
                        let object = computed.createdFrom.map { "the one made from the \($0) with Z_PK \(pk)" } ?? "the object with Z_PK \(pk)"
                        example = null ? object : "\(MigrationFunctions.describe(row[0])) in \(object)"
                    }
                }
                let type = computed.type.modelFileName
                let article = type.first.map { "AEIOU".contains($0) } == true ? "an" : "a"
                let problem = null
                    ? "no value (NULL), and \(computed.entity).\(computed.attribute) is required at \(mapping.hop.to)"
                    : "a value that is not \(article) \(type)"
                let correct = afterSteps.map { "correct \($0) or \(computed.jsonPath)" } ?? "correct \(computed.jsonPath)"
                result.append(MigrationRefusal(
                    // The catalog's fault either way (`isCatalogsFault`): `upgrade` never falls back to a
                    // clean store for it, as it did not when the writer stopped on the value.
                    code: .invalidCustomStage, hop: "\(mapping.hop.from) → \(mapping.hop.to)", entity: computed.entity,
                    property: computed.attribute, rowCount: rows,
                    message: "\(computed.jsonPath) gives \(rows) \(computed.entity) objects \(problem)\(example.map { " (for example \($0))" } ?? "")"
                        + (afterSteps.map { " (checked after \($0) ran)" } ?? ""),
                    remedy: null
                        ? "\(correct) so that it gives a value for every object (coalesce(…, <a value>)), or make \(computed.attribute) optional in \(mapping.hop.to)"
                        : "\(correct) so that it gives \(article) \(type) (or NULL) for every object, for example with a CASE for the values that do not convert",
                    propertyKind: "attribute", destinationVersion: mapping.hop.to))
            }
        }
        return result
    }

    /// The computed-value refusals of the single hop this analyzer spans (`states` before and
    /// after it, over a base on which every step before its copy has run): the check the
    /// analysis deferred, counted afresh, said to be made after `steps`.
    func computedValueRefusals(afterSteps steps: String) throws -> [MigrationRefusal] {
        guard mappings.count == 1, states.count == 2 else { return [] }
        let values = computedValues(ofHop: 0)
        let (answers, failures) = try run(computedValueRequests(values, hop: 0), isolating: { _ in true })
        return try computedValueRefusals(values, hop: 0, answer: { answers[$0] ?? 0 }, failures: failures, afterSteps: steps)
    }
}
