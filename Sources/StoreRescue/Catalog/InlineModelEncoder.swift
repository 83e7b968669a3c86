/// Writes a model as an inline catalog definition (the form `InlineModelDecoder` reads), in
/// compiled form: every flag, index and constraint is written out, so reading it back with
/// `"compiled": true` gives the same model. Keys at their default value are left out, except
/// `optional` (always written: it is the first thing a reader looks for).
enum InlineModelEncoder {
    static func entities(of model: ManagedObjectModel) -> JSONValue {
        .array(model.entities.map(entity))
    }

    /// The Swift type name written for each Core Data type.
    static func typeName(_ type: AttributeType) -> String {
        switch type {
        case .integer16: return "Int16"
        case .integer32: return "Int32"
        case .integer64: return "Int64"
        case .decimal: return "Decimal"
        case .double: return "Double"
        case .float: return "Float"
        case .string: return "String"
        case .boolean: return "Bool"
        case .date: return "Date"
        case .binaryData: return "Data"
        case .uuid: return "UUID"
        case .uri: return "URL"
        case .transformable: return "Transformable"
        case .objectID: return "ObjectID"
        case .composite: return "Composite"
        case .undefined: return "Undefined"
        }
    }

    static func deleteRuleName(_ rule: DeleteRule) -> String {
        InlineModelDecoder.deleteRules.first { $0.rule == rule }?.name ?? "nullify"
    }

    private static func entity(_ entity: EntityDescription) -> JSONValue {
        var members = [JSONMember("name", .string(entity.name))]
        if let parent = entity.superentityName { members.append(JSONMember("parent", .string(parent))) }
        if entity.isAbstract { members.append(JSONMember("abstract", .bool(true))) }
        if let className = entity.className { members.append(JSONMember("className", .string(className))) }
        if let renaming = entity.renamingIdentifier, renaming != entity.name { members.append(JSONMember("originalName", .string(renaming))) }
        if let modifier = entity.versionHashModifier { members.append(JSONMember("versionHashModifier", .string(modifier))) }
        members.append(JSONMember("attributes", .array(entity.attributes.map(attribute))))
        if !entity.relationships.isEmpty { members.append(JSONMember("relationships", .array(entity.relationships.map(relationship)))) }
        if !entity.uniquenessConstraints.isEmpty {
            members.append(JSONMember("uniquenessConstraints", .array(entity.uniquenessConstraints.map { .array($0.map(JSONValue.string)) })))
        }
        if !entity.fetchIndexes.isEmpty { members.append(JSONMember("fetchIndexes", .array(entity.fetchIndexes.map(fetchIndex)))) }
        return .object(members)
    }

    private static func attribute(_ attribute: AttributeDescription) -> JSONValue {
        var members = [
            JSONMember("name", .string(attribute.name)), JSONMember("type", .string(typeName(attribute.type))),
            JSONMember("optional", .bool(attribute.isOptional)),
        ]
        if let value = attribute.defaultValue { members.append(JSONMember("default", .string(value))) }
        if let renaming = attribute.renamingIdentifier, renaming != attribute.name { members.append(JSONMember("originalName", .string(renaming))) }
        let flags: [(String, Bool)] = [
            ("transient", attribute.isTransient), ("readOnly", attribute.isReadOnly),
            ("externalStorage", attribute.allowsExternalBinaryDataStorage),
            ("preserveValueOnDeletion", attribute.preservesValueInHistoryOnDeletion), ("indexed", attribute.isIndexed),
        ]
        members += flags.filter(\.1).map { JSONMember($0.0, .bool(true)) }
        if let transformer = attribute.valueTransformerName { members.append(JSONMember("transformer", .string(transformer))) }
        if let modifier = attribute.versionHashModifier { members.append(JSONMember("versionHashModifier", .string(modifier))) }
        return .object(members)
    }

    private static func relationship(_ relationship: RelationshipDescription) -> JSONValue {
        var members = [
            JSONMember("name", .string(relationship.name)), JSONMember("destination", .string(relationship.destinationEntityName)),
        ]
        if let inverse = relationship.inverseName { members.append(JSONMember("inverse", .string(inverse))) }
        if relationship.isToMany { members.append(JSONMember("toMany", .bool(true))) }
        if relationship.isOrdered { members.append(JSONMember("ordered", .bool(true))) }
        members.append(JSONMember("optional", .bool(relationship.isOptional)))
        if relationship.minCount != 0 { members.append(JSONMember("min", .number(String(relationship.minCount)))) }
        if relationship.isToMany && relationship.maxCount != 0 { members.append(JSONMember("max", .number(String(relationship.maxCount)))) }
        members.append(JSONMember("deleteRule", .string(deleteRuleName(relationship.deleteRule))))
        if let renaming = relationship.renamingIdentifier, renaming != relationship.name { members.append(JSONMember("originalName", .string(renaming))) }
        let flags: [(String, Bool)] = [("transient", relationship.isTransient), ("readOnly", relationship.isReadOnly), ("indexed", relationship.isIndexed)]
        members += flags.filter(\.1).map { JSONMember($0.0, .bool(true)) }
        if let modifier = relationship.versionHashModifier { members.append(JSONMember("versionHashModifier", .string(modifier))) }
        return .object(members)
    }

    private static func fetchIndex(_ index: FetchIndexDescription) -> JSONValue {
        let elements: [JSONValue] = index.elements.map { element in
            element.isAscending
                ? .string(element.propertyName)
                : .object([JSONMember("property", .string(element.propertyName)), JSONMember("ascending", .bool(false))])
        }
        return .object([JSONMember("name", .string(index.name)), JSONMember("elements", .array(elements))])
    }
}
