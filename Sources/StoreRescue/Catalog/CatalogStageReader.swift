/// Reads one element of a catalog file's `stages` (Docs/CATALOG.md#stages): its form (a pair
/// `from`/`to`, or a `versions` list for a lightweight stage) and, for a custom stage, its steps.
///
/// Only the shape is checked here (keys, types, one form per stage). Whether the names exist
/// in the models, and whether the stages make a plan Core Data can run, is checked when the
/// plan is built (`StagePlanner`), so `catalog show` can list every problem at once.
struct CatalogStageReader {
    let file: String

    static let lightweightKeys = ["kind", "from", "to", "versions", "notes"]
    static let customKeys = ["kind", "from", "to", "notes", "willMigrate", "map", "create", "didMigrate"]
    static let createKeys = ["entity", "forEach", "where", "set", "link"]
    /// The longest expression accepted (a real one is a line).
    static let maximumExpressionLength = 4096

    func stage(_ value: JSONValue, path: String) throws -> CatalogStage {
        let kindName = try JSONObjectReader(value, path: path, file: file, allowedKeys: Self.customKeys + ["versions"]).string("kind")
        guard let kind = CatalogStage.Kind(rawValue: kindName) else {
            throw CatalogFileError.invalidValue(
                path: file, jsonPath: path + ".kind", reason: "unknown stage kind \"\(kindName)\" (expected lightweight or custom)")
        }
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: kind == .custom ? Self.customKeys : Self.lightweightKeys)
        let notes = try object.optionalStringAllowingEmpty("notes")
        let span: CatalogStage.Span
        switch (try object.optionalString("from"), try object.optionalString("to"), try object.stringArray("versions")) {
        case (let from?, let to?, nil):
            span = .pair(from: from, to: to)
        case (nil, nil, let versions?):
            span = .versions(versions)
        case (nil, nil, nil):
            throw CatalogFileError.invalidValue(
                path: file, jsonPath: path,
                reason: kind == .custom
                    ? "a custom stage needs \"from\" and \"to\""
                    : "a lightweight stage needs \"from\" and \"to\", or \"versions\" (a list, possibly empty)")
        case (_, _, .some):
            throw object.invalid("versions", "a stage has either \"versions\" or \"from\" and \"to\", not both")
        case (nil, .some, nil):
            throw object.invalid("from", "required with \"to\"")
        case (.some, nil, nil):
            throw object.invalid("to", "required with \"from\"")
        }
        var custom = CustomStageDefinition()
        if kind == .custom {
            custom.willMigrate = try (object.array("willMigrate") ?? []).map { try dataStep($0.value, path: $0.path) }
            custom.map = try entityMaps(object)
            custom.create = try (object.array("create") ?? []).map { try createStep($0.value, path: $0.path) }
            custom.didMigrate = try (object.array("didMigrate") ?? []).map { try dataStep($0.value, path: $0.path) }
        }
        return CatalogStage(kind: kind, span: span, notes: notes, custom: custom, jsonPath: path)
    }

    /// `{"update": "Post", "set": {…}, "where": "…"}` or `{"delete": "Tag", "where": "…"}`.
    private func dataStep(_ value: JSONValue, path: String) throws -> CustomStageDefinition.DataStep {
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: ["update", "delete", "set", "where"])
        let condition = try expression(object, "where")
        switch (try object.optionalString("update"), try object.optionalString("delete")) {
        case (let entity?, nil):
            let assignments = try self.assignments(object, "set")
            guard !assignments.isEmpty else { throw object.invalid("set", "an update needs \"set\": {\"attribute\": \"expression\", …}") }
            return .init(entity: entity, action: .update(assignments), condition: condition, jsonPath: path)
        case (nil, let entity?):
            if object.value("set") != nil { throw object.invalid("set", "a delete sets nothing") }
            return .init(entity: entity, action: .delete, condition: condition, jsonPath: path)
        default:
            throw CatalogFileError.invalidValue(
                path: file, jsonPath: path, reason: "a step is {\"update\": ENTITY, \"set\": {…}} or {\"delete\": ENTITY}, with an optional \"where\"")
        }
    }

    /// `"map": {"Post": {"summary": "substr(content, 1, 40)"}}`.
    private func entityMaps(_ object: JSONObjectReader) throws -> [CustomStageDefinition.EntityMap] {
        guard let value = object.value("map") else { return [] }
        let path = object.childPath("map")
        guard case .object(let members) = value else {
            throw object.invalid("map", "expected {\"Entity\": {\"attribute\": \"expression\"}}, found \(value.kindDescription)")
        }
        return try members.map { member in
            let entityPath = path + "." + member.key
            let entity = try JSONObjectReader(member.value, path: entityPath, file: file, allowedKeys: Self.anyKey(member.value))
            return .init(entity: member.key, assignments: try assignments(of: entity), jsonPath: entityPath)
        }
    }

    private func createStep(_ value: JSONValue, path: String) throws -> CustomStageDefinition.CreateStep {
        let object = try JSONObjectReader(value, path: path, file: file, allowedKeys: Self.createKeys)
        var links: [String] = []
        if let linkValue = object.value("link") {
            let linkObject = try JSONObjectReader(linkValue, path: object.childPath("link"), file: file, allowedKeys: Self.anyKey(linkValue))
            for member in linkObject.members {
                guard member.value == .string("source") else {
                    throw CatalogFileError.invalidValue(
                        path: file, jsonPath: linkObject.childPath(member.key),
                        reason: "expected \"source\" (the new object's relationship points at the migrated source object)")
                }
                links.append(member.key)
            }
        }
        return .init(
            entity: try object.string("entity"), forEach: try object.string("forEach"), condition: try expression(object, "where"),
            assignments: try assignments(object, "set"), linksToSource: links, jsonPath: path)
    }

    /// `{"attribute": "expression", …}` under `key`, in file order.
    private func assignments(_ object: JSONObjectReader, _ key: String) throws -> [CustomStageDefinition.Assignment] {
        guard let value = object.value(key) else { return [] }
        return try assignments(of: JSONObjectReader(value, path: object.childPath(key), file: file, allowedKeys: Self.anyKey(value)))
    }

    private func assignments(of object: JSONObjectReader) throws -> [CustomStageDefinition.Assignment] {
        try object.members.map { member in
            .init(property: member.key, expression: try expression(object, member.key) ?? "NULL", jsonPath: object.childPath(member.key))
        }
    }

    /// A non-empty SQL expression of bounded length.
    private func expression(_ object: JSONObjectReader, _ key: String) throws -> String? {
        guard let text = try object.optionalString(key) else { return nil }
        guard text.utf8.count <= Self.maximumExpressionLength else {
            throw object.invalid(key, "an expression of \(text.utf8.count) bytes; at most \(Self.maximumExpressionLength)")
        }
        return text
    }

    /// The keys of an object whose keys are names chosen by the catalog's author.
    private static func anyKey(_ value: JSONValue) -> [String] {
        guard case .object(let members) = value else { return [] }
        return members.map(\.key)
    }
}
