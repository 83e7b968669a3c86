/// Reads a version defined inline in a catalog file, written the way a SwiftData `@Model`
/// declares things (Docs/CATALOG.md): Swift type names, `optional` as a Swift optional,
/// `unique` for `@Attribute(.unique)`, `externalStorage`, `originalName` for the renaming
/// identifier. The result is checked and put in compiled form like an `.xcdatamodel`
/// (`ModelCompilerRules`), so an inline version hashes and compares like any other source;
/// a definition marked `"compiled": true` is taken as written.
struct InlineModelDecoder {
    /// Type names accepted in `type`: SwiftData's Swift names, then Core Data's own names.
    static let typeNames: [(name: String, type: AttributeType)] = [
        ("String", .string), ("Int", .integer64), ("Int16", .integer16), ("Int32", .integer32), ("Int64", .integer64),
        ("Double", .double), ("Float", .float), ("Bool", .boolean), ("Date", .date), ("Data", .binaryData),
        ("UUID", .uuid), ("URL", .uri), ("Decimal", .decimal), ("Transformable", .transformable),
        ("ObjectID", .objectID), ("Composite", .composite), ("Undefined", .undefined),
        ("Integer 16", .integer16), ("Integer 32", .integer32), ("Integer 64", .integer64), ("Boolean", .boolean),
        ("Binary", .binaryData), ("URI", .uri),
    ]

    static let entityKeys = [
        "name", "parent", "abstract", "className", "originalName", "versionHashModifier", "attributes", "relationships",
        "uniquenessConstraints", "fetchIndexes",
    ]
    static let attributeKeys = [
        "name", "type", "optional", "default", "unique", "externalStorage", "originalName", "transient", "readOnly",
        "indexed", "preserveValueOnDeletion", "transformer", "versionHashModifier",
    ]
    static let relationshipKeys = [
        "name", "destination", "inverse", "toMany", "ordered", "optional", "min", "max", "deleteRule", "transient",
        "readOnly", "originalName", "versionHashModifier", "indexed",
    ]
    static let deleteRules: [(name: String, rule: DeleteRule)] = [("nullify", .nullify), ("cascade", .cascade), ("deny", .deny), ("noAction", .noAction)]

    let file: String

    /// Where each part of each entity came from, to name it when a check fails.
    private struct EntityPaths {
        var entity: String
        var properties: [String] = []
        var constraints: [String] = []
        var fetchIndexes: [String] = []
    }

    /// - Parameter isCompiled: the definition is already in compiled form (`"compiled": true`,
    ///   as `learn` writes it): indexes, flags and entity order are taken exactly as written.
    func model(entities: [(value: JSONValue, path: String)], identifiers: [String], isCompiled: Bool) throws -> ManagedObjectModel {
        var model = ManagedObjectModel(entities: [], versionIdentifiers: identifiers)
        var paths: [EntityPaths] = []
        for element in entities {
            let (entity, entityPaths) = try entity(element.value, path: element.path)
            model.entities.append(entity)
            paths.append(entityPaths)
        }
        if let issue = ModelCompilerRules.firstIssue(in: model) {
            let located = paths[issue.entityIndex]
            let jsonPath: String
            switch issue.location {
            case .entity: jsonPath = located.entity + ".name"
            case .parent: jsonPath = located.entity + ".parent"
            case .property(let index): jsonPath = located.properties[index]
            case .destination(let index): jsonPath = located.properties[index] + ".destination"
            case .inverse(let index): jsonPath = located.properties[index] + ".inverse"
            case .uniquenessConstraint(let index): jsonPath = located.constraints[index]
            case .fetchIndex(let index): jsonPath = located.fetchIndexes[index]
            }
            throw CatalogFileError.invalidValue(path: file, jsonPath: jsonPath, reason: issue.reason)
        }
        return isCompiled ? ModelCompilerRules.withDefaultRenamingIdentifiers(model) : ModelCompilerRules.compiled(model)
    }

    private func entity(_ value: JSONValue, path: String) throws -> (EntityDescription, EntityPaths) {
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: Self.entityKeys)
        var entity = EntityDescription(
            name: try object.string("name"), superentityName: try object.optionalString("parent"),
            isAbstract: try object.bool("abstract", default: false),
            versionHashModifier: try object.optionalString("versionHashModifier"),
            renamingIdentifier: try object.optionalString("originalName"), className: try object.optionalString("className"))
        var paths = EntityPaths(entity: path)
        var uniqueAttributes: [(name: String, path: String)] = []
        for element in try object.array("attributes") ?? [] {
            let (attribute, isUnique) = try attribute(element.value, path: element.path)
            entity.properties.append(.attribute(attribute))
            paths.properties.append(element.path)
            if isUnique { uniqueAttributes.append((attribute.name, element.path + ".unique")) }
        }
        for element in try object.array("relationships") ?? [] {
            entity.properties.append(.relationship(try relationship(element.value, path: element.path)))
            paths.properties.append(element.path)
        }
        for element in try object.array("uniquenessConstraints") ?? [] {
            guard case .array(let names) = element.value else {
                throw CatalogFileError.invalidValue(path: file, jsonPath: element.path, reason: "expected an array of property names, found \(element.value.kindDescription)")
            }
            entity.uniquenessConstraints.append(try names.enumerated().map { index, name in
                guard case .string(let text) = name else {
                    throw CatalogFileError.invalidValue(path: file, jsonPath: element.path + "[\(index)]", reason: "expected a property name, found \(name.kindDescription)")
                }
                return text
            })
            paths.constraints.append(element.path)
        }
        // @Attribute(.unique): a one-property constraint, unless the entity already declares it.
        for unique in uniqueAttributes where !entity.uniquenessConstraints.contains([unique.name]) {
            entity.uniquenessConstraints.append([unique.name])
            paths.constraints.append(unique.path)
        }
        for element in try object.array("fetchIndexes") ?? [] {
            entity.fetchIndexes.append(try fetchIndex(element.value, path: element.path))
            paths.fetchIndexes.append(element.path)
        }
        return (entity, paths)
    }

    private func attribute(_ value: JSONValue, path: String) throws -> (AttributeDescription, isUnique: Bool) {
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: Self.attributeKeys)
        let name = try object.string("name")
        let typeName = try object.string("type")
        guard let type = Self.typeNames.first(where: { $0.name == typeName })?.type else {
            let swiftNames = Self.typeNames.prefix { $0.name != "Integer 16" }.map(\.name).joined(separator: ", ")
            throw object.invalid("type", "unknown type \"\(typeName)\" (expected one of: \(swiftNames), or a Core Data name such as \"Integer 64\")")
        }
        let attribute = AttributeDescription(
            name: name, type: type, isOptional: try object.bool("optional", default: false),
            isTransient: try object.bool("transient", default: false), isReadOnly: try object.bool("readOnly", default: false),
            defaultValue: try defaultValue(object),
            versionHashModifier: try object.optionalString("versionHashModifier"),
            renamingIdentifier: try object.optionalString("originalName"),
            allowsExternalBinaryDataStorage: try object.bool("externalStorage", default: false),
            preservesValueInHistoryOnDeletion: try object.bool("preserveValueOnDeletion", default: false),
            isIndexed: try object.bool("indexed", default: false),
            valueTransformerName: try object.optionalString("transformer"))
        return (attribute, try object.bool("unique", default: false))
    }

    /// `default` as the string an `.xcdatamodel` would hold: a string as is, a number as
    /// written, a boolean as YES/NO.
    private func defaultValue(_ object: JSONObjectReader) throws -> String? {
        switch object.value("default") {
        case nil: return nil
        case .string(let text)?: return text
        case .number(let literal)?: return literal
        case .bool(let flag)?: return flag ? "YES" : "NO"
        case let other?: throw object.invalid("default", "expected a string, number or boolean, found \(other.kindDescription)")
        }
    }

    private func relationship(_ value: JSONValue, path: String) throws -> RelationshipDescription {
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: Self.relationshipKeys)
        let isToMany = try object.bool("toMany", default: false)
        let declaredMax = try object.count("max")
        let minCount = try object.count("min") ?? 0
        let maxCount: Int
        if isToMany {
            maxCount = declaredMax ?? 0
            if maxCount == 1 { throw object.invalid("max", "a to-many relationship with max 1 is a to-one to Core Data; use toMany: false") }
        } else {
            if let declaredMax, declaredMax != 1 { throw object.invalid("max", "a to-one relationship has max 1; set toMany: true for \(declaredMax)") }
            maxCount = 1
        }
        if maxCount != 0 && minCount > maxCount { throw object.invalid("min", "min \(minCount) is above max \(maxCount)") }
        var rule = DeleteRule.nullify
        if let ruleName = try object.optionalString("deleteRule") {
            guard let known = Self.deleteRules.first(where: { $0.name == ruleName }) else {
                throw object.invalid("deleteRule", "unknown delete rule \"\(ruleName)\" (expected one of: \(Self.deleteRules.map(\.name).joined(separator: ", ")))")
            }
            rule = known.rule
        }
        return RelationshipDescription(
            name: try object.string("name"), destinationEntityName: try object.string("destination"),
            inverseName: try object.optionalString("inverse"), minCount: minCount, maxCount: maxCount, isToMany: isToMany,
            isOrdered: try object.bool("ordered", default: false), isOptional: try object.bool("optional", default: false),
            isTransient: try object.bool("transient", default: false), isReadOnly: try object.bool("readOnly", default: false),
            deleteRule: rule, versionHashModifier: try object.optionalString("versionHashModifier"),
            renamingIdentifier: try object.optionalString("originalName"), isIndexed: try object.bool("indexed", default: false))
    }

    /// `{"name": "byDate", "elements": ["createdAt", {"property": "title", "ascending": false}]}`.
    private func fetchIndex(_ value: JSONValue, path: String) throws -> FetchIndexDescription {
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: ["name", "elements"])
        let elements = try (object.array("elements") ?? []).map { element -> FetchIndexDescription.Element in
            if case .string(let property) = element.value { return .init(propertyName: property) }
            let item = try JSONObjectReader(element.value, path: element.path, file: file, allowedKeys: ["property", "ascending"])
            return .init(propertyName: try item.string("property"), isAscending: try item.bool("ascending", default: true))
        }
        return FetchIndexDescription(name: try object.string("name"), elements: elements)
    }
}
