/// What Xcode's model compiler checks and adds when it turns a model definition (an
/// `.xcdatamodel`, or an inline definition in a catalog file) into the compiled form that `.mom`
/// files and store model caches hold, so models from every source compare alike.
///
/// Checks (`firstIssue(in:)`): unique entity and property names, known parent entities and no
/// inheritance cycles, known destination entities and inverse relationships, uniqueness
/// constraints and fetch indexes that name existing properties, no persistent `Undefined`
/// attribute.
///
/// Additions (`compiled(_:)`), as observed in model caches (format notes §3, §5):
/// - every entity and property has a renaming identifier: its own name unless one was given;
/// - a property that is the only element of a fetch index is marked indexed (`NSIsIndexed`);
/// - every indexed property gets a fetch index named after itself (one element, ascending)
///   unless the entity already has an index of that name; these come first, by property name,
///   then the declared ones (`SyncMetadata_V3`: `["key", "byKey"]`; `RMAdminStore`:
///   `["dsid", "byDSID"]`; `IMODb2`: derived indexes only, sorted);
/// - entities are in code-point order of their names, as every compiled sample lists them.
enum ModelCompilerRules {
    /// One problem, located by indexes into the model as it was read (before `compiled(_:)`
    /// reorders entities), so each front end can name the element, line or JSON path.
    struct Issue: Equatable, Sendable {
        enum Location: Equatable, Sendable {
            case entity
            case parent
            case property(index: Int)
            case destination(propertyIndex: Int)
            case inverse(propertyIndex: Int)
            case uniquenessConstraint(index: Int)
            case fetchIndex(index: Int)
        }

        enum Kind: Equatable, Sendable {
            case duplicateEntity
            case inheritanceCycle([String])
            case unknownParent(String)
            case unknownDestination(String)
            case other
        }

        var entityIndex: Int
        var location: Location
        var kind: Kind
        var reason: String
    }

    static func firstIssue(in model: ManagedObjectModel) -> Issue? {
        // The hierarchy is worked out once; each check below is then a lookup, so a deep or wide
        // model costs what its size costs. The bounds come first: nothing else runs on a model
        // too large to read.
        let hierarchy = ModelHierarchy(model)
        if let problem = hierarchy.boundsProblem(in: model) {
            return Issue(entityIndex: problem.entity, location: model.entities[problem.entity].superentityName == nil ? .entity : .parent,
                         kind: .other, reason: problem.reason)
        }
        var firstIndex: [String: Int] = [:]
        for (index, entity) in model.entities.enumerated() {
            if firstIndex[entity.name] != nil {
                return Issue(entityIndex: index, location: .entity, kind: .duplicateEntity, reason: "a second entity named \"\(entity.name)\"")
            }
            firstIndex[entity.name] = index
        }
        let visible = hierarchy.visibleProperties(in: model)
        for (index, entity) in model.entities.enumerated() {
            if let issue = parentIssue(entity, at: index, in: model, hierarchy: hierarchy)
                ?? propertyIssue(entity, at: index, in: model, hierarchy: hierarchy, visible: visible) {
                return issue
            }
        }
        return nil
    }

    private static func parentIssue(_ entity: EntityDescription, at index: Int, in model: ManagedObjectModel,
                                    hierarchy: ModelHierarchy) -> Issue? {
        guard let parent = entity.superentityName else { return nil }
        guard hierarchy.indexByName[parent] != nil else {
            return Issue(entityIndex: index, location: .parent, kind: .unknownParent(parent), reason: "parent entity \"\(parent)\" is not in the model")
        }
        // Reported at each entity on the loop (the first in the model is the one seen), not at
        // the entities that merely hang below one.
        guard hierarchy.isInCycle[index] else { return nil }
        let chain = hierarchy.chain(of: index)
        guard let last = chain.last, hierarchy.parent[last] == index else { return nil }
        let cycle = (chain + [index]).map { model.entities[$0].name }
        return Issue(
            entityIndex: index, location: .parent, kind: .inheritanceCycle(cycle),
            reason: "inheritance cycle: \(cycle.joined(separator: " → "))")
    }

    private static func propertyIssue(_ entity: EntityDescription, at index: Int, in model: ManagedObjectModel,
                                      hierarchy: ModelHierarchy, visible: [[String: ModelHierarchy.PropertyLocation]]) -> Issue? {
        var seen: Set<String> = []
        for (propertyIndex, property) in entity.properties.enumerated() {
            guard seen.insert(property.name).inserted else {
                return Issue(entityIndex: index, location: .property(index: propertyIndex), kind: .other, reason: "a second property with this name")
            }
            switch property {
            case .attribute(let attribute):
                if attribute.type == .undefined && !attribute.isTransient {
                    return Issue(
                        entityIndex: index, location: .property(index: propertyIndex), kind: .other,
                        reason: "type Undefined is only allowed on a transient attribute")
                }
            case .relationship(let relationship):
                guard let destination = hierarchy.indexByName[relationship.destinationEntityName] else {
                    return Issue(
                        entityIndex: index, location: .destination(propertyIndex: propertyIndex),
                        kind: .unknownDestination(relationship.destinationEntityName),
                        reason: "destination entity \"\(relationship.destinationEntityName)\" is not in the model")
                }
                if let inverse = relationship.inverseName {
                    let found = visible[destination][inverse].map { location -> Bool in
                        if case .relationship = model.entities[location.entity].properties[location.position] { return true }
                        return false
                    } ?? false
                    if !found {
                        return Issue(
                            entityIndex: index, location: .inverse(propertyIndex: propertyIndex), kind: .other,
                            reason: "inverse \"\(inverse)\" is not a relationship of \"\(model.entities[destination].name)\"")
                    }
                }
            }
        }
        let known = visible[index]
        for (constraintIndex, constraint) in entity.uniquenessConstraints.enumerated() {
            if constraint.isEmpty {
                return Issue(entityIndex: index, location: .uniquenessConstraint(index: constraintIndex), kind: .other, reason: "names no property")
            }
            if let unknown = constraint.first(where: { known[$0] == nil }) {
                return Issue(
                    entityIndex: index, location: .uniquenessConstraint(index: constraintIndex), kind: .other,
                    reason: "names \"\(unknown)\", which is not a property of \"\(entity.name)\"")
            }
        }
        var indexNames: Set<String> = []
        for (fetchIndexIndex, fetchIndex) in entity.fetchIndexes.enumerated() {
            let location = Issue.Location.fetchIndex(index: fetchIndexIndex)
            guard indexNames.insert(fetchIndex.name).inserted else {
                return Issue(entityIndex: index, location: location, kind: .other, reason: "a second fetch index with this name")
            }
            if fetchIndex.elements.isEmpty {
                return Issue(entityIndex: index, location: location, kind: .other, reason: "has no element")
            }
            if let unknown = fetchIndex.elements.first(where: { known[$0.propertyName] == nil }) {
                return Issue(
                    entityIndex: index, location: location, kind: .other,
                    reason: "names \"\(unknown.propertyName)\", which is not a property of \"\(entity.name)\"")
            }
        }
        return nil
    }

    /// The model as the model compiler would emit it; see the type's discussion.
    static func compiled(_ model: ManagedObjectModel) -> ManagedObjectModel {
        var result = withDefaultRenamingIdentifiers(model)
        result.entities = result.entities.map(withCompilerIndexes).sorted { EntityVersionHasher.isInCodePointOrder($0.name, $1.name) }
        return result
    }

    /// Only the renaming identifiers filled in: for definitions already in compiled form
    /// (learned from a store), whose indexes and order are taken exactly as written.
    static func withDefaultRenamingIdentifiers(_ model: ManagedObjectModel) -> ManagedObjectModel {
        var result = model
        for index in result.entities.indices {
            var entity = result.entities[index]
            if entity.renamingIdentifier == nil { entity.renamingIdentifier = entity.name }
            entity.properties = entity.properties.map { property in
                switch property {
                case .attribute(var attribute):
                    if attribute.renamingIdentifier == nil { attribute.renamingIdentifier = attribute.name }
                    return .attribute(attribute)
                case .relationship(var relationship):
                    if relationship.renamingIdentifier == nil { relationship.renamingIdentifier = relationship.name }
                    return .relationship(relationship)
                }
            }
            result.entities[index] = entity
        }
        return result
    }

    private static func withCompilerIndexes(_ entity: EntityDescription) -> EntityDescription {
        var entity = entity
        let soleElements = Set(entity.fetchIndexes.filter { $0.elements.count == 1 }.map { $0.elements[0].propertyName })
        entity.properties = entity.properties.map { property in
            switch property {
            case .attribute(var attribute):
                if soleElements.contains(attribute.name) { attribute.isIndexed = true }
                return .attribute(attribute)
            case .relationship(var relationship):
                if soleElements.contains(relationship.name) { relationship.isIndexed = true }
                return .relationship(relationship)
            }
        }
        let declared = Set(entity.fetchIndexes.map(\.name))
        let derived = entity.properties
            .filter { property in
                switch property {
                case .attribute(let attribute): return attribute.isIndexed
                case .relationship(let relationship): return relationship.isIndexed
                }
            }
            .map(\.name)
            .filter { !declared.contains($0) }
            .sorted(by: EntityVersionHasher.isInCodePointOrder)
            .map { FetchIndexDescription(name: $0, elements: [.init(propertyName: $0, isAscending: true)]) }
        entity.fetchIndexes = derived + entity.fetchIndexes
        return entity
    }
}
