/// Turns the element tree of one `.xcdatamodel/contents` file into a compiled-form model,
/// remembering the line of every entity and property so problems found later name them.
struct XCDataModelParser {
    let path: String
    private var entityLines: [Int] = []
    private var propertyLines: [[Int]] = []
    private var constraintLines: [[Int]] = []
    private var fetchIndexLines: [[Int]] = []

    init(path: String) {
        self.path = path
    }

    mutating func model(from root: XMLElementNode) throws -> ManagedObjectModel {
        guard root.name == "model" else { throw XCDataModelError.notAModel(path: path, rootElement: root.name) }
        let identifier = root.attribute("userDefinedModelVersionIdentifier") ?? ""
        var model = ManagedObjectModel(entities: [], versionIdentifiers: identifier.isEmpty ? [] : [identifier])
        for element in root.children(named: "entity") {
            model.entities.append(try entity(from: element))
        }
        if let issue = ModelCompilerRules.firstIssue(in: model) { throw error(for: issue, in: model) }
        return ModelCompilerRules.compiled(model)
    }

    private mutating func entity(from element: XMLElementNode) throws -> EntityDescription {
        let name = try required("name", of: element, describedAs: "entity")
        let described = "entity \"\(name)\""
        var entity = EntityDescription(
            name: name, superentityName: nonEmpty("parentEntity", of: element),
            isAbstract: try flag("isAbstract", of: element, describedAs: described),
            versionHashModifier: nonEmpty("versionHashModifier", of: element),
            renamingIdentifier: nonEmpty("elementID", of: element), className: nonEmpty("representedClassName", of: element))
        var lines: [Int] = [], constraints: [Int] = [], indexes: [Int] = []
        for child in element.children {
            switch child.name {
            case "attribute":
                entity.properties.append(.attribute(try attribute(from: child, entity: name)))
                lines.append(child.line)
            case "relationship":
                entity.properties.append(.relationship(try relationship(from: child, entity: name)))
                lines.append(child.line)
            case "fetchIndex":
                entity.fetchIndexes.append(try fetchIndex(from: child, entity: name))
                indexes.append(child.line)
            case "uniquenessConstraints":
                for constraint in child.children(named: "uniquenessConstraint") {
                    entity.uniquenessConstraints.append(
                        try constraint.children(named: "constraint").map { try required("value", of: $0, describedAs: "\(described) uniquenessConstraint") })
                    constraints.append(constraint.line)
                }
            case "compoundIndexes":
                // Pre-2017 models: each compound index becomes a fetch index named compoundIndex,
                // compoundIndex1, … (the names knowledgeC's compiled model shows).
                for compound in child.children(named: "compoundIndex") {
                    let count = entity.fetchIndexes.filter { $0.name.hasPrefix("compoundIndex") }.count
                    let elements = try compound.children(named: "index").map {
                        FetchIndexDescription.Element(propertyName: try required("value", of: $0, describedAs: "\(described) compoundIndex"))
                    }
                    entity.fetchIndexes.append(FetchIndexDescription(name: count == 0 ? "compoundIndex" : "compoundIndex\(count)", elements: elements))
                    indexes.append(compound.line)
                }
            default:
                // fetchedProperty (not held by the model types, as for compiled models), userInfo,
                // and layout elements carry nothing that reaches the store.
                break
            }
        }
        entityLines.append(element.line)
        propertyLines.append(lines)
        constraintLines.append(constraints)
        fetchIndexLines.append(indexes)
        return entity
    }

    private func attribute(from element: XMLElementNode, entity: String) throws -> AttributeDescription {
        let name = try required("name", of: element, describedAs: "entity \"\(entity)\" attribute")
        let described = "entity \"\(entity)\" attribute \"\(name)\""
        let typeName = element.attribute("attributeType") ?? "Undefined"
        guard let type = AttributeType(modelFileName: typeName) else {
            throw XCDataModelError.unknownAttributeType(path: path, line: element.line, entity: entity, attribute: name, typeName: typeName)
        }
        return AttributeDescription(
            name: name, type: type,
            isOptional: try flag("optional", of: element, describedAs: described),
            isTransient: try flag("transient", of: element, describedAs: described),
            defaultValue: element.attribute("defaultValueString"),
            versionHashModifier: nonEmpty("versionHashModifier", of: element),
            renamingIdentifier: nonEmpty("elementID", of: element),
            allowsExternalBinaryDataStorage: try flag("allowsExternalBinaryDataStorage", of: element, describedAs: described),
            preservesValueInHistoryOnDeletion: try flag("preserveAfterDeletion", of: element, describedAs: described),
            isIndexed: try flag("indexed", of: element, describedAs: described),
            valueTransformerName: nonEmpty("valueTransformerName", of: element))
    }

    private func relationship(from element: XMLElementNode, entity: String) throws -> RelationshipDescription {
        let name = try required("name", of: element, describedAs: "entity \"\(entity)\" relationship")
        let described = "entity \"\(entity)\" relationship \"\(name)\""
        let isToMany = try flag("toMany", of: element, describedAs: described)
        let declaredMax = try count("maxCount", of: element, describedAs: described)
        let minCount = try count("minCount", of: element, describedAs: described) ?? 0
        let maxCount: Int
        if isToMany {
            maxCount = declaredMax ?? 0
            if maxCount == 1 { throw invalid(element, described, "a to-many relationship with maxCount 1 is a to-one to Core Data; remove toMany or raise maxCount") }
        } else {
            if let declaredMax, declaredMax != 1 { throw invalid(element, described, "a to-one relationship has maxCount \(declaredMax); set toMany=\"YES\" or maxCount=\"1\"") }
            maxCount = 1
        }
        if maxCount != 0 && minCount > maxCount { throw invalid(element, described, "minCount \(minCount) is above maxCount \(maxCount)") }
        return RelationshipDescription(
            name: name, destinationEntityName: try required("destinationEntity", of: element, describedAs: described),
            inverseName: nonEmpty("inverseName", of: element), minCount: minCount, maxCount: maxCount, isToMany: isToMany,
            isOrdered: try flag("ordered", of: element, describedAs: described),
            isOptional: try flag("optional", of: element, describedAs: described),
            isTransient: try flag("transient", of: element, describedAs: described),
            deleteRule: try deleteRule(of: element, describedAs: described),
            versionHashModifier: nonEmpty("versionHashModifier", of: element),
            renamingIdentifier: nonEmpty("elementID", of: element),
            isIndexed: try flag("indexed", of: element, describedAs: described))
    }

    private func fetchIndex(from element: XMLElementNode, entity: String) throws -> FetchIndexDescription {
        let name = try required("name", of: element, describedAs: "entity \"\(entity)\" fetchIndex")
        let described = "entity \"\(entity)\" fetchIndex \"\(name)\""
        let elements = try element.children(named: "fetchIndexElement").map { child in
            guard let property = child.attribute("property") else {
                let reason = child.attribute("expression") != nil
                    ? "an element indexes an expression, which this tool does not support; only property elements are read"
                    : "an element has no property attribute"
                throw invalid(child, described, reason)
            }
            switch child.attribute("order") ?? "ascending" {
            case "ascending": return FetchIndexDescription.Element(propertyName: property, isAscending: true)
            case "descending": return FetchIndexDescription.Element(propertyName: property, isAscending: false)
            case let other: throw invalid(child, described, "order \"\(other)\" is neither ascending nor descending")
            }
        }
        return FetchIndexDescription(name: name, elements: elements)
    }

    // MARK: Attribute values

    private func required(_ attribute: String, of element: XMLElementNode, describedAs described: String) throws -> String {
        guard let value = element.attribute(attribute), !value.isEmpty else {
            throw invalid(element, described, "<\(element.name)> has no \(attribute)")
        }
        return value
    }

    private func nonEmpty(_ attribute: String, of element: XMLElementNode) -> String? {
        element.attribute(attribute).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `YES`/`NO` (as Xcode writes them; `true`/`false` accepted); absent is NO.
    private func flag(_ attribute: String, of element: XMLElementNode, describedAs described: String) throws -> Bool {
        switch element.attribute(attribute) {
        case nil, "NO", "false": return false
        case "YES", "true": return true
        case let other?: throw invalid(element, described, "\(attribute)=\"\(other)\" is neither YES nor NO")
        }
    }

    private func count(_ attribute: String, of element: XMLElementNode, describedAs described: String) throws -> Int? {
        guard let text = element.attribute(attribute) else { return nil }
        guard let value = UInt32(text) else {
            throw invalid(element, described, "\(attribute)=\"\(text)\" is not a whole number from 0 to \(UInt32.max)")
        }
        return Int(value)
    }

    private func deleteRule(of element: XMLElementNode, describedAs described: String) throws -> DeleteRule {
        switch element.attribute("deletionRule") {
        case nil, "Nullify": return .nullify
        case "Cascade": return .cascade
        case "Deny": return .deny
        case "No Action": return .noAction
        case let other?: throw invalid(element, described, "deletionRule \"\(other)\" is not Nullify, Cascade, Deny or No Action")
        }
    }

    private func invalid(_ element: XMLElementNode, _ described: String, _ reason: String) -> XCDataModelError {
        .invalidElement(path: path, line: element.line, element: described, reason: reason)
    }

    // MARK: Problems found across the model

    private func error(for issue: ModelCompilerRules.Issue, in model: ManagedObjectModel) -> XCDataModelError {
        let entity = model.entities[issue.entityIndex]
        var line = entityLines[issue.entityIndex]
        var described = "entity \"\(entity.name)\""
        var propertyName = ""
        switch issue.location {
        case .entity, .parent: break
        case .property(let index), .destination(let index), .inverse(let index):
            line = propertyLines[issue.entityIndex][index]
            let property = entity.properties[index]
            propertyName = property.name
            if case .attribute = property { described += " attribute \"\(property.name)\"" } else { described += " relationship \"\(property.name)\"" }
        case .uniquenessConstraint(let index):
            line = constraintLines[issue.entityIndex][index]
            described += " uniquenessConstraint \(index + 1)"
        case .fetchIndex(let index):
            line = fetchIndexLines[issue.entityIndex][index]
            described += " fetchIndex \"\(entity.fetchIndexes[index].name)\""
        }
        switch issue.kind {
        case .duplicateEntity: return .duplicateEntity(path: path, line: line, name: entity.name)
        case .inheritanceCycle(let cycle): return .inheritanceCycle(path: path, line: line, cycle: cycle)
        case .unknownParent(let parent): return .unknownParentEntity(path: path, line: line, entity: entity.name, parent: parent)
        case .unknownDestination(let destination):
            return .unknownDestinationEntity(path: path, line: line, entity: entity.name, relationship: propertyName, destination: destination)
        case .other: return .invalidElement(path: path, line: line, element: described, reason: issue.reason)
        }
    }
}
