/// The required values a store lacked before it was migrated: a `RequiredValueCensus` of the
/// store as it was read, at the source version, with each gap named as the target version names
/// it (its entity and property followed through every hop's mapping).
///
/// A gap follows a property only while each hop takes its values from the one before (an
/// attribute copied, a relationship's links kept): a property a hop adds or computes (`map`)
/// had no value to lack, so whatever it lacks after the migration is the migration's doing.
/// A link that names no existing object counts as no value: the migration clears it.
struct RequiredValueBaseline {
    /// The store as it was read (schema `main`), never written.
    let connection: SQLiteConnection
    let version: CatalogVersion
    let layout: StoreLayout
    let physical: PhysicalSchema
    let mappings: [HopMapping]

    /// Objects that lacked a value before the migration, by the target's `Entity.property`.
    func objectsLacking() throws -> [String: Int64] {
        let census = try RequiredValueCensus.take(
            connection: connection, model: version.model, layout: layout, physical: physical, linksMustReachAnObject: true)
        var lacking: [String: Int64] = [:]
        for gap in census.gaps {
            guard let name = Self.targetName(of: gap, through: mappings) else { continue }
            lacking[name, default: 0] += gap.objects
        }
        return lacking
    }

    /// `Entity.property` at the end of `mappings` for a source version's gap; nil when a hop
    /// removes the entity or the property, or fills the property otherwise than from the source.
    static func targetName(of gap: RequiredValueCensus.Gap, through mappings: [HopMapping]) -> String? {
        var entity = gap.entity
        var property = gap.property
        for mapping in mappings {
            guard let next = mapping.entities.first(where: { $0.source == entity }) else { return nil }
            switch gap.kind {
            case .attribute:
                let copied = next.attributes.first { attribute in
                    if case .copy(let from, _) = attribute.value { return from == property }
                    return false
                }
                guard let copied else { return nil }
                property = copied.name
            case .relationship:
                guard let kept = next.relationships.first(where: { $0.source == property }) else { return nil }
                property = kept.name
            }
            entity = next.name
        }
        return "\(entity).\(property)"
    }
}
