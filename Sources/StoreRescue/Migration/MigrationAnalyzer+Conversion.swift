/// Type changes whose stored values do not all convert (134140): refused up front, unless steps
/// that run before the hop's copy may correct the values — a `willMigrate` step doing exactly what
/// the refusal's remedy advises was refused for the values as they were before it (review case
/// t18). Then the run checks the values those steps leave, before it writes the destination.
extension MigrationAnalyzer {
    /// The SQL condition true for a value (an expression) that does not convert to `type`.
    static func doesNotConvert(_ value: String, to type: AttributeType) -> String {
        "(\(value)) IS NOT NULL AND \(MigrationFunctions.fits)(\(value), \(type.rawValue)) = 0"
    }

    /// The type changes of hop `index` whose values do not all convert as the store is and that
    /// steps before the copy may change (the refusal `refusals(for:)` leaves out), with those steps.
    func deferredConversionChecks(ofHop index: Int, answer: (String) -> Int64) throws -> [MigrationAnalysis.DeferredConversionCheck] {
        let mapping = mappings[index]
        var result: [MigrationAnalysis.DeferredConversionCheck] = []
        for case .unconvertibleValues(let entity, let attribute, let sourceAttribute, let type) in mapping.checks {
            let rows = answer("unconvertible|\(index)|\(entity).\(attribute)")
            let sourceEntity = mapping.entity(named: entity)?.source ?? entity
            let steps = stepsBeforeCopy(ofHop: index, changing: sourceAttribute, of: sourceEntity)
            guard rows > 0, !steps.isEmpty else { continue }
            result.append(.init(
                hopIndex: index, hop: "\(mapping.hop.from) → \(mapping.hop.to)", version: mapping.hop.to, entity: entity, attribute: attribute,
                sourceEntity: sourceEntity, sourceAttribute: sourceAttribute, type: type, rowsBeforeSteps: rows,
                exampleBeforeSteps: try exampleUnconvertible(entity: sourceEntity, attribute: sourceAttribute, type: type, in: states[index]),
                steps: steps))
        }
        return result
    }

    /// The conversion refusals of the single hop this analyzer spans (`states` before and after
    /// it, over a base on which every step before its copy has run), for the checks the analysis
    /// deferred: the same count and wording, said to be made after `steps`.
    func conversionRefusals(_ checks: [MigrationAnalysis.DeferredConversionCheck]) throws -> [MigrationRefusal] {
        guard let mapping = mappings.first, let before = states.first else { return [] }
        var result: [MigrationRefusal] = []
        for check in checks {
            var rows: Int64 = 0
            for source in before.rowSources(of: check.sourceEntity) {
                let condition = Self.doesNotConvert(MigrationFunctions.nonStopping(source.attributes[check.sourceAttribute] ?? "NULL"), to: check.type)
                rows += try connection.scalar("SELECT count(*) FROM \(source.from) \(RowSource.alias) WHERE (\(source.condition)) AND \(condition)")?.int64 ?? 0
            }
            guard rows > 0 else { continue }
            result.append(try unconvertibleRefusal(
                hop: mapping.hop, entity: check.entity, attribute: check.attribute, sourceEntity: check.sourceEntity,
                sourceAttribute: check.sourceAttribute, type: check.type, rows: rows, in: before, afterSteps: check.stepsText))
        }
        return result
    }

    /// 134140 for `rows` values of `sourceEntity.sourceAttribute` at `before` that do not convert to
    /// `type`, one named; `afterSteps` when the run counted them after those steps ran.
    func unconvertibleRefusal(
        hop: MigrationHop, entity: String, attribute: String, sourceEntity: String, sourceAttribute: String, type: AttributeType, rows: Int64,
        in before: VirtualVersion, afterSteps: String? = nil
    ) throws -> MigrationRefusal {
        let example = try exampleUnconvertible(entity: sourceEntity, attribute: sourceAttribute, type: type, in: before)
        return MigrationRefusal(
            code: .typeChangeNotInferable, hop: "\(hop.from) → \(hop.to)", entity: entity, property: attribute, rowCount: rows,
            message: "\(entity).\(attribute) becomes \(type.modelFileName), and \(rows) stored values do not convert\(example.map { " (for example \($0))" } ?? "")"
                + (afterSteps.map { " (checked after \($0) ran)" } ?? ""),
            remedy: afterSteps.map { "correct \($0) so that every value of \(attribute) converts, or a custom stage that computes \(attribute) (\"map\")" }
                ?? "a custom stage that computes \(attribute) (\"map\"), or a willMigrate step that corrects the values first")
    }

    /// The steps before hop `index`'s copy that may change `attribute` of `entity` (named as at the
    /// hop's source): an `update` setting its column, a `delete` whose cascades reach its table, any
    /// handler. Followed back through the hops that copy it (renamed or not); before a hop that
    /// computes it or makes its entity, every step counts (it may change what the value comes from).
    func stepsBeforeCopy(ofHop index: Int, changing attribute: String, of entity: String) -> [String] {
        var names: [(entity: String, attribute: String)?] = Array(repeating: nil, count: index + 1)
        names[index] = (entity, attribute)
        var position = index - 1
        while position >= 0, let (entity, attribute) = names[position + 1], let mapped = mappings[position].entity(named: entity),
            let source = mapped.source, case .copy(let from, _)? = mapped.attributes.first(where: { $0.name == attribute })?.value
        {
            names[position] = (source, from)
            position -= 1
        }
        return stepsBeforeCopy(ofHop: index) { step, state in
            guard let (entity, attribute) = names[state] else { return true }
            return Self.step(step, mayChange: attribute, of: entity, in: states[state])
        }
    }

    /// Whether a catalog step running on `state` may change the stored `attribute` of `entity`'s
    /// objects: compared by table and column, as the step writes them (an update of a sibling
    /// sharing the column counts; a delete counts when its cascades reach the table).
    static func step(_ step: CustomStageDefinition.DataStep, mayChange attribute: String, of entity: String, in state: VirtualVersion) -> Bool {
        let model = state.version.model
        let layout = state.layout
        guard let table = layout.table(ofEntity: entity, in: model)?.name, let column = layout.propertyColumns[entity]?[attribute] else { return true }
        switch step.action {
        case .update(let assignments):
            guard layout.table(ofEntity: step.entity, in: model)?.name == table else { return false }
            return assignments.contains { layout.propertyColumns[step.entity]?[$0.property] == column }
        case .delete:
            guard let start = layout.table(ofEntity: step.entity, in: model)?.name else { return true }
            var reached: Set<String> = [start]
            var grew = true
            while grew {
                grew = false
                for owner in model.entities {
                    guard let own = layout.table(ofEntity: owner.name, in: model)?.name, reached.contains(own) else { continue }
                    for relationship in owner.relationships where relationship.deleteRule == .cascade {
                        if let next = layout.table(ofEntity: relationship.destinationEntityName, in: model)?.name, reached.insert(next).inserted { grew = true }
                    }
                }
            }
            return reached.contains(table)
        }
    }

    /// One value of `entity.attribute` at `state` that does not convert to `type`, in words.
    func exampleUnconvertible(entity: String, attribute: String, type: AttributeType, in state: VirtualVersion) throws -> String? {
        for source in state.rowSources(of: entity) {
            guard let value = source.attributes[attribute].map(MigrationFunctions.nonStopping) else { continue }
            let sql = """
                SELECT \(value), \(source.pk) FROM \(source.from) \(RowSource.alias) \
                WHERE (\(source.condition)) AND \(Self.doesNotConvert(value, to: type)) LIMIT 1
                """
            if let row = try connection.rows(sql, maximumRows: 1).first {
                return "\(MigrationFunctions.describe(row[0])) in the object with Z_PK \(row[1].int64.map(String.init) ?? "?")"
            }
        }
        return nil
    }
}
