/// Builds a hop's `HopMapping` from the two versions' models and layouts: Core Data's inferred
/// mapping rules (`migration-semantics.md` §2), a custom stage's `map` and `create` on top, and
/// every refusal the models alone can decide. What only the data can decide is left as
/// `DataCheck`s for the analyzer.
enum HopMappingBuilder {
    /// - Parameter storeUniqueIndexes: for the hop that reads the store itself, the unique
    ///   indexes the store has (`UniqueIndexCheckBuilder.enforcedUniqueIndexes`): a constraint is
    ///   trusted to hold only under one of them.
    static func mapping(
        for hop: MigrationHop, source: CatalogVersion, sourceLayout: StoreLayout, destination: CatalogVersion,
        destinationLayout: StoreLayout, storeUniqueIndexes: Set<[String]>? = nil
    ) -> HopMapping {
        var builder = Builder(
            hop: hop, source: source.model, sourceLayout: sourceLayout, destination: destination.model,
            destinationLayout: destinationLayout)
        builder.storeUniqueIndexes = storeUniqueIndexes
        return builder.build()
    }

    private struct Builder {
        let hop: MigrationHop
        let source: ManagedObjectModel
        let sourceLayout: StoreLayout
        let destination: ManagedObjectModel
        let destinationLayout: StoreLayout
        let correspondence: ModelCorrespondence
        var refusals: [MigrationRefusal] = []
        var checks: [DataCheck] = []
        var storeUniqueIndexes: Set<[String]>?
        let hopName: String

        init(hop: MigrationHop, source: ManagedObjectModel, sourceLayout: StoreLayout, destination: ManagedObjectModel, destinationLayout: StoreLayout) {
            self.hop = hop
            self.source = source
            self.sourceLayout = sourceLayout
            self.destination = destination
            self.destinationLayout = destinationLayout
            correspondence = ModelCorrespondence(source: source, destination: destination)
            hopName = "\(hop.from) → \(hop.to)"
        }

        mutating func refuse(_ code: MigrationRefusal.Code, entity: String?, property: String? = nil, _ message: String, remedy: String) {
            refusals.append(MigrationRefusal(
                code: code, hop: hopName, entity: entity, property: property, rowCount: nil, message: message, remedy: remedy))
        }

        mutating func build() -> HopMapping {
            let creations = resolveCreations()
            var entities: [EntityMapping] = []
            for number in destinationLayout.entityNumbers {
                guard let entity = destination.entity(named: number.name) else { continue }
                entities.append(mapEntity(entity, number: number.ent, creations: creations))
            }
            for (split, from) in correspondence.splitEntities.sorted(by: { $0.key < $1.key }) {
                refuse(
                    .structureNotInferable, entity: split,
                    "\(split) names \(from) as its renaming identifier, but another entity already takes \(from)'s objects: Core Data cannot split an entity in two",
                    remedy: "give \(split) its own renaming identifier, or move the objects in a custom stage (create)")
            }
            checkHierarchyMerges(entities)
            checks += UniqueIndexCheckBuilder.checks(
                source: source, sourceLayout: sourceLayout, destination: destination, destinationLayout: destinationLayout,
                correspondence: correspondence, entities: entities, creations: creations, sourceVersion: hop.from,
                storeUniqueIndexes: storeUniqueIndexes)
            validateMaps()
            validateDataSteps()
            let removed = correspondence.removedSourceEntities.map { entity in
                RemovedEntity(
                    name: entity.name, table: sourceLayout.table(ofEntity: entity.name, in: source)?.name,
                    number: sourceLayout.entityNumber(of: entity.name))
            }
            var mapping = HopMapping(
                hop: hop, entities: entities, removedEntities: removed, creations: creations, refusals: refusals, checks: checks)
            if let storeUniqueIndexes {
                mapping.storeChecks = UniqueIndexCheckBuilder.unenforcedInStore(
                    source: source, sourceLayout: sourceLayout, storeUniqueIndexes: storeUniqueIndexes)
            }
            return mapping
        }

        // MARK: Entities

        mutating func mapEntity(_ entity: EntityDescription, number: Int, creations: [Creation]) -> EntityMapping {
            let sourceEntity = correspondence.sourceEntity(of: entity.name)
            let propertySources = sourceEntity.map { correspondence.propertySources(of: entity, from: $0) } ?? [:]
            let assignments = hop.custom.mapAssignments(for: entity.name)
            let properties = ModelCorrespondence.persistentProperties(of: entity, in: destination)
            let attributeNames = Set(properties.compactMap { if case .attribute(let a) = $0 { return a.name } else { return nil } })
            for assignment in assignments where !attributeNames.contains(assignment.property) {
                refuse(
                    .invalidCustomStage, entity: entity.name, property: assignment.property,
                    "\(assignment.jsonPath): \(entity.name) at \(hop.to) has no attribute \(assignment.property) (map sets attributes: \(attributeNames.sorted().joined(separator: ", ")))",
                    remedy: "name an attribute of \(entity.name) as \(hop.to) declares it; link new objects with create")
            }
            var attributes: [AttributeMapping] = []
            var relationships: [RelationshipMapping] = []
            var used: Set<String> = []
            for property in properties {
                switch property {
                case .attribute(let attribute):
                    let assignment = assignments.last { $0.property == attribute.name }
                    var origin: AttributeDescription?
                    if case .attribute(let found)? = propertySources[attribute.name] { origin = found }
                    if let origin { used.insert(origin.name) }
                    attributes.append(mapAttribute(attribute, of: entity, from: origin, sourceEntity: sourceEntity, assignment: assignment))
                case .relationship(let relationship):
                    var origin: RelationshipDescription?
                    if case .relationship(let found)? = propertySources[relationship.name] { origin = found }
                    if let origin { used.insert(origin.name) }
                    relationships.append(mapRelationship(relationship, of: entity, from: origin, sourceEntity: sourceEntity, creations: creations))
                }
            }
            var removedAttributes: [String] = []
            var removedRelationships: [String] = []
            if let sourceEntity {
                for property in ModelCorrespondence.persistentProperties(of: sourceEntity, in: source) where !used.contains(property.name) {
                    switch property {
                    case .attribute: removedAttributes.append(property.name)
                    case .relationship: removedRelationships.append(property.name)
                    }
                }
            }
            var likely: [LikelyRename] = []
            if let sourceEntity {
                let sourceAttributes = ModelCorrespondence.persistentProperties(of: sourceEntity, in: source)
                for added in attributes where added.change == .added {
                    let declared = destination.allProperties(of: entity).first { $0.name == added.name }
                    guard (declared?.renamingIdentifierValue ?? added.name) == added.name else { continue }
                    for case .attribute(let removed) in sourceAttributes where removedAttributes.contains(removed.name) && removed.type == added.type {
                        likely.append(LikelyRename(removed: removed.name, added: added.name, type: added.type))
                    }
                }
            }
            return EntityMapping(
                name: entity.name, source: sourceEntity?.name, isAbstract: entity.isAbstract,
                sourceNumber: sourceEntity.flatMap { sourceLayout.entityNumber(of: $0.name) }, destinationNumber: number,
                sourceTable: sourceEntity.flatMap { sourceLayout.table(ofEntity: $0.name, in: source)?.name },
                destinationTable: destinationLayout.table(ofEntity: entity.name, in: destination)?.name ?? "",
                attributes: attributes, relationships: relationships, removedAttributes: removedAttributes,
                removedRelationships: removedRelationships, likelyRenames: likely)
        }

        // MARK: Attributes

        mutating func mapAttribute(
            _ attribute: AttributeDescription, of entity: EntityDescription, from origin: AttributeDescription?,
            sourceEntity: EntityDescription?, assignment: CustomStageDefinition.Assignment?
        ) -> AttributeMapping {
            var defaultValue: SQLiteValue?
            do {
                defaultValue = try StorageValue.defaultValue(of: attribute)
            } catch {
                refuse(
                    .invalidCustomStage, entity: entity.name, property: attribute.name,
                    "the default value \"\(error.value)\" of \(entity.name).\(attribute.name) in \(hop.to) is not a \(attribute.type.modelFileName)",
                    remedy: "correct the default value in the model")
            }
            let isRequired = !attribute.isOptional
            var mapping = AttributeMapping(
                name: attribute.name, type: attribute.type, isRequired: isRequired, value: .null,
                nullReplacement: isRequired ? defaultValue : nil, defaultValue: defaultValue, change: .kept)
            if let assignment {
                mapping.value = .expression(assignment.expression, jsonPath: assignment.jsonPath)
                mapping.change = .mapped(jsonPath: assignment.jsonPath)
                return mapping
            }
            guard let origin, let sourceEntity else {
                mapping.change = .added
                if let defaultValue {
                    mapping.value = .defaultValue(defaultValue)
                } else if isRequired {
                    mapping.value = .missing
                    if sourceEntity != nil {
                        checks.append(.rowsNeedValue(entity: entity.name, property: attribute.name, kind: "attribute", onlyNulls: false))
                    }
                }
                return mapping
            }
            let typeChange = TypeChange.between(origin.type, attribute.type)
            mapping.value = .copy(from: origin.name, typeChange: typeChange)
            if origin.name != attribute.name {
                mapping.change = .renamed(from: origin.name)
            } else if origin.type != attribute.type {
                mapping.change = .typeChanged(from: origin.type, to: attribute.type)
            } else if origin.isOptional && isRequired {
                mapping.change = .becameRequired
            } else if !origin.isOptional && !isRequired {
                mapping.change = .becameOptional
            }
            switch typeChange {
            case .impossible:
                refuse(
                    .typeChangeNotInferable, entity: entity.name, property: attribute.name,
                    "\(entity.name).\(attribute.name) changes type from \(origin.type.modelFileName) to \(attribute.type.modelFileName), which no stored value converts to",
                    remedy: "a custom stage that computes \(attribute.name) (map), or keep the type")
            case .convertIfEveryValueFits:
                checks.append(.unconvertibleValues(entity: entity.name, attribute: attribute.name, sourceAttribute: origin.name, type: attribute.type))
            case .none, .convertEveryValue:
                break
            }
            if isRequired, origin.isOptional, defaultValue == nil {
                checks.append(.rowsNeedValue(entity: entity.name, property: attribute.name, kind: "attribute", onlyNulls: true))
            }
            _ = sourceEntity
            return mapping
        }

        // MARK: Relationships

        mutating func mapRelationship(
            _ relationship: RelationshipDescription, of entity: EntityDescription, from origin: RelationshipDescription?,
            sourceEntity: EntityDescription?, creations: [Creation]
        ) -> RelationshipMapping {
            let filledByCreate = creations.contains { creation in
                creation.links.contains { link in
                    (creation.entity == entity.name && link == relationship.name)
                        || (isKind(creation.entity, of: relationship.destinationEntityName) && relationship.inverseName == link
                            && isKind(correspondingDestination(of: creation.forEach) ?? "", of: entity.name))
                }
            }
            var mapping = RelationshipMapping(
                name: relationship.name, source: origin?.name, destinationEntity: relationship.destinationEntityName,
                isToMany: relationship.isToMany, isOrdered: relationship.isOrdered, isRequired: !relationship.isOptional,
                change: .kept, narrowsToOne: false, isFilledByCreate: filledByCreate)
            guard let origin, let sourceEntity else {
                mapping.change = .added
                if mapping.isRequired, sourceEntity != nil, !filledByCreate {
                    checks.append(.rowsNeedValue(entity: entity.name, property: relationship.name, kind: "relationship", onlyNulls: false))
                }
                return mapping
            }
            if origin.name != relationship.name { mapping.change = .renamed(from: origin.name) }
            if origin.isToMany && !relationship.isToMany {
                mapping.narrowsToOne = true
                mapping.change = .cardinalityChanged("to-many → to-one")
                checks.append(.severalLinks(
                    entity: entity.name, relationship: relationship.name, sourceEntity: sourceEntity.name, sourceRelationship: origin.name))
            } else if !origin.isToMany && relationship.isToMany {
                mapping.change = .cardinalityChanged("to-one → to-many")
            } else if origin.isOrdered != relationship.isOrdered {
                mapping.change = .orderingChanged(relationship.isOrdered ? "now ordered" : "no longer ordered")
            }
            // A to-many with no inverse keeps one owner per destination object (a hidden column):
            // unless the source already did (no inverse, or a to-one inverse), the data decides.
            if relationship.isToMany, relationship.inverseName == nil,
                !(origin.isToMany && (origin.inverseName == nil || source.entity(named: origin.destinationEntityName)
                    .flatMap { destination in source.allProperties(of: destination).first { $0.name == origin.inverseName } }
                    .map { if case .relationship(let inverse) = $0 { return !inverse.isToMany } else { return false } } == true))
            {
                checks.append(.severalOwners(
                    entity: entity.name, relationship: relationship.name, sourceEntity: sourceEntity.name, sourceRelationship: origin.name))
            }
            // The destination must take every object the source relationship could point at.
            let oldTarget = origin.destinationEntityName
            let newTargetSource = correspondence.entitySources[relationship.destinationEntityName]
            if let newTargetSource {
                let oldTargetEntity = source.entity(named: oldTarget)
                let covers = oldTargetEntity.map { source.ancestry(of: $0).map(\.name).contains(newTargetSource) } ?? false
                if !covers {
                    refuse(
                        .structureNotInferable, entity: entity.name, property: relationship.name,
                        "\(entity.name).\(relationship.name) pointed at \(oldTarget) and now points at \(relationship.destinationEntityName), which does not take every \(oldTarget)",
                        remedy: "a custom stage that re-links the objects, or keep the destination")
                }
            } else if let counterpart = correspondingDestination(of: oldTarget), isKind(counterpart, of: relationship.destinationEntityName) {
                // A new entity (an abstract parent) has no objects of its own, but it takes
                // those of its subentities: when the old destination's objects become one of
                // them, the relationship is widened, as Core Data infers (a review's Dog renamed
                // Hound under a new Base was refused here).
            } else {
                refuse(
                    .structureNotInferable, entity: entity.name, property: relationship.name,
                    "\(entity.name).\(relationship.name) now points at \(relationship.destinationEntityName), a new entity with no objects, while it pointed at \(oldTarget)",
                    remedy: "rename the destination with a renaming identifier, or re-link in a custom stage")
            }
            if mapping.isRequired, origin.isOptional, !filledByCreate {
                checks.append(.rowsNeedValue(entity: entity.name, property: relationship.name, kind: "relationship", onlyNulls: true))
            }
            return mapping
        }

        /// True when `entity` is `ancestor` or one of its subentities (destination model).
        func isKind(_ entity: String, of ancestor: String) -> Bool {
            guard let description = destination.entity(named: entity) else { return false }
            return destination.ancestry(of: description).contains { $0.name == ancestor }
        }

        /// The destination entity that takes the objects of source entity `name`.
        func correspondingDestination(of name: String) -> String? {
            correspondence.entitySources.first { $0.value == name }?.key
        }

        // MARK: Hierarchies

        /// Core Data cannot merge hierarchies: entities from different source tables may not
        /// end up in one destination table (`migration-semantics.md` §2, rule 7).
        mutating func checkHierarchyMerges(_ entities: [EntityMapping]) {
            for (table, members) in Dictionary(grouping: entities.filter { $0.sourceTable != nil }, by: \.destinationTable) {
                let sourceTables = Set(members.compactMap(\.sourceTable))
                guard sourceTables.count > 1 else { continue }
                refuse(
                    .structureNotInferable, entity: members.map(\.name).sorted().first,
                    "\(members.map(\.name).sorted().joined(separator: ", ")) come from separate hierarchies (\(sourceTables.sorted().joined(separator: ", "))) and would share \(table): Core Data cannot merge hierarchies",
                    remedy: "keep the entities apart, or move the objects in a custom stage (create)")
            }
        }

        // MARK: Custom steps

        mutating func resolveCreations() -> [Creation] {
            var result: [Creation] = []
            for step in hop.custom.create {
                guard let entity = destination.entity(named: step.entity), !entity.isAbstract else {
                    refuse(
                        .invalidCustomStage, entity: step.entity,
                        "\(step.jsonPath).entity: \(hop.to) has no concrete entity \(step.entity)",
                        remedy: "name an entity of \(hop.to) that is not abstract")
                    continue
                }
                guard source.entity(named: step.forEach) != nil else {
                    refuse(
                        .invalidCustomStage, entity: step.forEach,
                        "\(step.jsonPath).forEach: \(hop.from) has no entity \(step.forEach)", remedy: "name an entity of \(hop.from)")
                    continue
                }
                let properties = ModelCorrespondence.persistentProperties(of: entity, in: destination)
                for assignment in step.assignments where !properties.contains(where: { if case .attribute(let a) = $0 { return a.name == assignment.property } else { return false } }) {
                    refuse(
                        .invalidCustomStage, entity: step.entity, property: assignment.property,
                        "\(assignment.jsonPath): \(step.entity) has no attribute \(assignment.property) in \(hop.to)",
                        remedy: "name an attribute of \(step.entity)")
                }
                let counterpart = correspondingDestination(of: step.forEach)
                for link in step.linksToSource {
                    guard case .relationship(let relationship)? = properties.first(where: { $0.name == link }) else {
                        refuse(
                            .invalidCustomStage, entity: step.entity, property: link,
                            "\(step.jsonPath).link: \(step.entity) has no relationship \(link) in \(hop.to)", remedy: "name a relationship of \(step.entity)")
                        continue
                    }
                    guard let counterpart, isKind(counterpart, of: relationship.destinationEntityName) else {
                        refuse(
                            .invalidCustomStage, entity: step.entity, property: link,
                            "\(step.jsonPath).link: \(step.entity).\(link) points at \(relationship.destinationEntity), but the objects of \(step.forEach) become \(counterpart ?? "nothing") in \(hop.to)",
                            remedy: "link through a relationship whose destination takes the migrated \(step.forEach) objects")
                        continue
                    }
                }
                result.append(Creation(step: step, entity: step.entity, forEach: step.forEach, assignments: step.assignments, links: step.linksToSource))
            }
            return result
        }

        /// `willMigrate` names entities and attributes of `from`, `didMigrate` of `to`.
        /// A `map` for an entity the destination does not have (a misspelt name), or one with no
        /// objects from the source (a new entity: `create` makes those), would set nothing: it
        /// was ignored, expressions unchecked, and the attributes it meant stayed NULL.
        mutating func validateMaps() {
            for entityMap in hop.custom.map {
                guard let mapped = destination.entity(named: entityMap.entity) else {
                    let names = destination.entities.map(\.name).sorted()
                    refuse(
                        .invalidCustomStage, entity: entityMap.entity,
                        "\(entityMap.jsonPath): \(hop.to) has no entity \(entityMap.entity)",
                        remedy: "name an entity of \(hop.to) (names are case-sensitive): \(names.prefix(20).joined(separator: ", "))\(names.count > 20 ? ", …" : "")")
                    continue
                }
                if mapped.isAbstract {
                    // Its objects are its subentities', each mapped under its own name: a map of
                    // the abstract entity set nothing (a review's nick stayed NULL).
                    let concrete = destination.entities.filter { entity in
                        !entity.isAbstract && destination.ancestry(of: entity).contains { $0.name == mapped.name }
                    }.map(\.name).sorted()
                    refuse(
                        .invalidCustomStage, entity: entityMap.entity,
                        "\(entityMap.jsonPath): \(entityMap.entity) is abstract in \(hop.to): it has no objects of its own to map",
                        remedy: "map each of its concrete subentities under its own name: \(concrete.joined(separator: ", "))")
                    continue
                }
                if correspondence.sourceEntity(of: entityMap.entity) == nil {
                    refuse(
                        .invalidCustomStage, entity: entityMap.entity,
                        "\(entityMap.jsonPath): \(entityMap.entity) is new in \(hop.to): it has no objects from \(hop.from) to map",
                        remedy: "make its objects with a create step (\"create\": [{\"entity\": \"\(entityMap.entity)\", \"forEach\": …, \"set\": {…}}])")
                }
            }
        }

        mutating func validateDataSteps() {
            for (steps, model, version) in [(hop.custom.willMigrate, source, hop.from), (hop.custom.didMigrate, destination, hop.to)] {
                for step in steps {
                    guard let entity = model.entity(named: step.entity) else {
                        refuse(
                            .invalidCustomStage, entity: step.entity, "\(step.jsonPath): \(version) has no entity \(step.entity)",
                            remedy: "name an entity of \(version) (willMigrate runs at the stage's from version, didMigrate at its to version)")
                        continue
                    }
                    guard case .update(let assignments) = step.action else { continue }
                    let attributes = Set(ModelCorrespondence.persistentProperties(of: entity, in: model).compactMap { property -> String? in
                        if case .attribute(let attribute) = property { return attribute.name }
                        return nil
                    })
                    for assignment in assignments where !attributes.contains(assignment.property) {
                        refuse(
                            .invalidCustomStage, entity: step.entity, property: assignment.property,
                            "\(assignment.jsonPath): \(step.entity) has no attribute \(assignment.property) in \(version)",
                            remedy: "name an attribute of \(step.entity) as \(version) declares it")
                    }
                }
            }
        }
    }
}

extension RelationshipDescription {
    /// The destination entity's name (for messages).
    var destinationEntity: String { destinationEntityName }
}
