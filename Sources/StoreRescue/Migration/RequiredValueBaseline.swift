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
        Dictionary(try carriedGaps().map { ("\($0.entity).\($0.property)", $0.objects) }, uniquingKeysWith: +)
    }

    /// The store's gaps that the migration carries, named as the target version names them (two
    /// source properties that become one are summed): what `migrate --dry-run` says the store
    /// already lacks.
    func carriedGaps() throws -> [RequiredValueCensus.Gap] {
        let census = try RequiredValueCensus.take(
            connection: connection, model: version.model, layout: layout, physical: physical, linksMustReachAnObject: true)
        var carried: [RequiredValueCensus.Gap] = []
        for gap in census.gaps {
            guard let name = Self.target(of: gap, through: mappings) else { continue }
            if let index = carried.firstIndex(where: { $0.entity == name.entity && $0.property == name.property }) {
                carried[index].objects += gap.objects
            } else {
                carried.append(RequiredValueCensus.Gap(entity: name.entity, property: name.property, kind: gap.kind, objects: gap.objects))
            }
        }
        return carried
    }

    /// The entity and property at the end of `mappings` for a source version's gap; nil when a
    /// hop removes the entity or the property, or fills the property otherwise than from the source.
    static func target(of gap: RequiredValueCensus.Gap, through mappings: [HopMapping]) -> (entity: String, property: String)? {
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
        return (entity, property)
    }
}
