/// Which entity and property of one model version is which of another, as Core Data's inferred
/// mapping decides (`migration-semantics.md` §2, rule 3): by **renaming identifier**, which is a
/// canonical name (renamed in V2 and again in V3, it still maps V1 → V3), then by name.
///
/// For a destination element with renaming identifier `id` (its own name when it has none), the
/// source element is, in this order of preference: one whose own renaming identifier is `id`;
/// one named `id`; one with the destination's name. Each source element maps at most once.
struct ModelCorrespondence {
    let source: ManagedObjectModel
    let destination: ManagedObjectModel
    /// Destination entity name → source entity name.
    let entitySources: [String: String]
    /// Destination entities that two or more would map from the same source entity (Core Data
    /// cannot split an entity): destination name → source name.
    let splitEntities: [String: String]

    init(source: ManagedObjectModel, destination: ManagedObjectModel) {
        self.source = source
        self.destination = destination
        var sources: [String: String] = [:]
        var split: [String: String] = [:]
        let pairs = Self.match(
            destination.entities.map { ($0.name, $0.renamingIdentifier) }, source.entities.map { ($0.name, $0.renamingIdentifier) })
        for (destinationName, sourceName) in pairs { sources[destinationName] = sourceName }
        // A second destination entity claiming an already mapped source entity is a split.
        for entity in destination.entities where sources[entity.name] == nil {
            let key = entity.renamingIdentifier ?? entity.name
            if let claimed = source.entities.first(where: { ($0.renamingIdentifier ?? $0.name) == key && sources.values.contains($0.name) }),
                key != entity.name || source.entity(named: entity.name) == nil
            {
                split[entity.name] = claimed.name
            }
        }
        entitySources = sources
        splitEntities = split
    }

    /// The source entity that `destinationEntity` maps from, if any.
    func sourceEntity(of destinationEntity: String) -> EntityDescription? {
        entitySources[destinationEntity].flatMap(source.entity(named:))
    }

    /// Source entities no destination entity maps from (their rows are discarded).
    var removedSourceEntities: [EntityDescription] {
        let mapped = Set(entitySources.values)
        return source.entities.filter { !mapped.contains($0.name) }
    }

    /// Destination property name → source property, for the persistent properties of
    /// `destinationEntity` and its source entity (inherited ones included on both sides).
    func propertySources(of destinationEntity: EntityDescription, from sourceEntity: EntityDescription) -> [String: PropertyDescription] {
        let destinationProperties = Self.persistentProperties(of: destinationEntity, in: destination)
        let sourceProperties = Self.persistentProperties(of: sourceEntity, in: source)
        let pairs = Self.match(
            destinationProperties.map { ($0.name, $0.renamingIdentifierValue) }, sourceProperties.map { ($0.name, $0.renamingIdentifierValue) })
        let byName = Dictionary(sourceProperties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return pairs.compactMapValues { byName[$0] }
    }

    /// Every non-transient property of `entity`, inherited ones included (a redeclaration once).
    static func persistentProperties(of entity: EntityDescription, in model: ManagedObjectModel) -> [PropertyDescription] {
        var seen: Set<String> = []
        var result: [PropertyDescription] = []
        for property in model.allProperties(of: entity).reversed() where !property.isTransient && seen.insert(property.name).inserted {
            result.append(property)
        }
        return result.reversed()
    }

    /// Pairs destination names with source names by the rule above: destination → source.
    static func match(_ destination: [(name: String, identifier: String?)], _ source: [(name: String, identifier: String?)]) -> [String: String] {
        var result: [String: String] = [:]
        var used: Set<String> = []
        let passes: [(_ key: String, _ wanted: (name: String, identifier: String?)) -> String?] = [
            { key, _ in source.first { ($0.identifier ?? $0.name) == key && !used.contains($0.name) }?.name },
            { key, _ in source.first { $0.name == key && !used.contains($0.name) }?.name },
            { _, wanted in source.first { $0.name == wanted.name && !used.contains($0.name) }?.name },
        ]
        for pass in passes {
            for element in destination where result[element.name] == nil {
                if let found = pass(element.identifier ?? element.name, element) {
                    result[element.name] = found
                    used.insert(found)
                }
            }
        }
        return result
    }
}
