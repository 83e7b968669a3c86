import Foundation

/// Reads the `NSKeyedArchiver` form of a managed object model — a compiled `.mom`, or a store's
/// `Z_MODELCACHE` once inflated — into a `ManagedObjectModel`.
///
/// Entities come in archive order (`NSEntities`), properties in `NSProperties` order. Inherited
/// properties, which the archive repeats as `_NSPropertyDescriptionProxy` objects, are skipped:
/// each entity holds only the properties it declares. Fetched properties are skipped too: the
/// model types cannot hold them, and no sample has one to show how they are hashed. Values are taken as archived: a property's renaming
/// identifier is usually its own name, fetch indexes include those the model compiler derives
/// from indexed properties, and `versionIdentifiers` are sorted by code point.
///
/// ```swift
/// let blob = try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE")?.data ?? Data()
/// let model = try ModelArchiveDecoder.decodeModelCache(compressed: blob)
/// let hashes = EntityVersionHasher.versionHashes(for: model)
/// ```
public enum ModelArchiveDecoder {
    /// Decodes an uncompressed model archive (a `.mom` file, or an inflated model cache).
    ///
    /// - Throws: `ModelDecodingError`, wrapping the property list or archive error when the bytes
    ///   are unreadable.
    public static func decodeModel(archive: Data, limits: PropertyListLimits = .default) throws -> ManagedObjectModel {
        let propertyList: PropertyListValue
        do {
            propertyList = try BinaryPropertyListDecoder.decode(archive, limits: limits)
        } catch let error as PropertyListError {
            throw ModelDecodingError.unreadablePropertyList(error)
        }
        let decoded: ManagedObjectModel
        do {
            decoded = try model(from: KeyedArchive(propertyList))
        } catch let error as KeyedArchiveError {
            throw ModelDecodingError.malformedArchive(error)
        }
        if let problem = ModelHierarchy(decoded).boundsProblem(in: decoded) {
            throw ModelDecodingError.invalidModel(path: "entity \"\(decoded.entities[problem.entity].name)\"", reason: problem.reason)
        }
        return decoded
    }

    /// Decodes a store's `Z_MODELCACHE.Z_CONTENT`: raw DEFLATE of a model archive.
    ///
    /// - Parameter maximumInflatedBytes: the most the blob may inflate to (a real cache is well
    ///   under a megabyte); also the input limit for the property list decoder, which otherwise
    ///   reads it within `PropertyListLimits.storeContent`.
    /// - Throws: `ModelDecodingError.unreadableModelCache` when inflating fails or passes the
    ///   limit, and whatever `decodeModel(archive:limits:)` throws.
    public static func decodeModelCache(
        compressed: Data, maximumInflatedBytes: Int = 64 << 20
    ) throws -> ManagedObjectModel {
        let archive: Data
        do {
            archive = try RawDeflate.inflate(compressed, maximumOutputBytes: maximumInflatedBytes)
        } catch let error as CompressionError {
            throw ModelDecodingError.unreadableModelCache(error)
        }
        var limits = PropertyListLimits.storeContent
        limits.maximumInputBytes = max(limits.maximumInputBytes, maximumInflatedBytes)
        return try decodeModel(archive: archive, limits: limits)
    }

    /// Maps the archive's root `NSManagedObjectModel` onto a `ManagedObjectModel`.
    static func model(from archive: KeyedArchive) throws -> ManagedObjectModel {
        let root = try archive.rootObject()
        guard try root.isKind(of: "NSManagedObjectModel") else {
            throw ModelDecodingError.notAModel(className: (try? root.className()) ?? root.value.kindDescription)
        }
        var entities: [EntityDescription] = []
        var names: Set<String> = []
        for (_, node) in try root.requiredChild("NSEntities").entries() {
            let entity = try entity(from: node)
            guard names.insert(entity.name).inserted else {
                throw ModelDecodingError.invalidModel(path: node.path, reason: "a second entity named \"\(entity.name)\"")
            }
            entities.append(entity)
        }
        let identifiers = try root.child("NSVersionIdentifiers")?.elements().map { try $0.string() } ?? []
        return ManagedObjectModel(
            entities: entities,
            versionIdentifiers: identifiers.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    static func entity(from node: KeyedArchiveNode) throws -> EntityDescription {
        try requireKind(node, "NSEntityDescription")
        var entity = EntityDescription(name: try node.requiredChild("NSEntityName").string())
        entity.superentityName = try node.child("NSSuperentity")?.requiredChild("NSEntityName").string()
        entity.isAbstract = try node.child("NSIsAbstract")?.bool() ?? false
        entity.versionHashModifier = try node.child("NSVersionHashModifier")?.string()
        entity.renamingIdentifier = try node.child("NSRenamingIdentifier")?.string()
        entity.className = try node.child("NSClassNameForEntity")?.string()

        var propertyNames: Set<String> = []
        for (_, propertyNode) in try node.child("NSProperties")?.entries() ?? [] {
            guard let property = try property(from: propertyNode) else { continue }
            guard propertyNames.insert(property.name).inserted else {
                throw ModelDecodingError.invalidModel(path: propertyNode.path, reason: "a second property named \"\(property.name)\"")
            }
            entity.properties.append(property)
        }
        entity.uniquenessConstraints = try node.child("NSUniqueTuples")?.elements().map { tuple in
            try tuple.elements().map(propertyName(of:))
        } ?? []
        entity.fetchIndexes = try node.child("NSFetchIndexDescriptions")?.elements().map(fetchIndex(from:)) ?? []
        return entity
    }

    /// A property's name, from a string or from a property (or proxy) object. Uniqueness
    /// constraints and fetch index elements hold either, depending on the framework version.
    static func propertyName(of node: KeyedArchiveNode) throws -> String {
        if case .string(let name) = node.value { return name }
        if try node.isKind(of: "NSString") { return try node.string() }
        if try node.isKind(of: "_NSPropertyDescriptionProxy") {
            return try node.requiredChild("NSUnderlyingProperty").requiredChild("NSPropertyName").string()
        }
        if try node.isKind(of: "NSPropertyDescription") {
            return try node.requiredChild("NSPropertyName").string()
        }
        throw ModelDecodingError.malformedArchive(
            .unexpectedValue(path: node.path, expected: "a property name or property", found: node.foundDescription))
    }

    static func fetchIndex(from node: KeyedArchiveNode) throws -> FetchIndexDescription {
        try requireKind(node, "NSFetchIndexDescription")
        let elements = try node.requiredChild("NSIndexElements").elements().map { element in
            let name: String
            if let nameNode = try element.child("NSPropertyName") {
                name = try nameNode.string()
            } else {
                name = try propertyName(of: element.requiredChild("NSProperty"))
            }
            return FetchIndexDescription.Element(propertyName: name, isAscending: try element.child("NSAscending")?.bool() ?? true)
        }
        return FetchIndexDescription(name: try node.requiredChild("NSIndexName").string(), elements: elements)
    }

    /// Throws unless `node` is an archived object of class `name` (or a subclass).
    static func requireKind(_ node: KeyedArchiveNode, _ name: String) throws {
        guard try node.isKind(of: name) else {
            throw ModelDecodingError.malformedArchive(.unexpectedValue(path: node.path, expected: "an \(name)", found: node.foundDescription))
        }
    }
}
