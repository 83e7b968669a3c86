/// The required values a store lacked before it was migrated: a `RequiredValueCensus` of the
/// store as it was read, at the source version, with each gap named as the target version names
/// it (its entity and property followed through every hop's mapping), and the objects that
/// lacked each value, compared object by object with the written store's
/// (`RequiredValueBaseline+Objects.swift`).
///
/// A gap follows a property only while each hop takes its values from the one before (an
/// attribute copied, a relationship's links kept): a property a hop adds or computes (`map`)
/// had no value to lack, so whatever it lacks after the migration is the migration's doing.
/// A link that names no existing object counts as no value: the migration clears it.
struct RequiredValueBaseline {
    /// The store as it was read (schema `main`), never written.
    let connection: SQLiteConnection
    /// The file `connection` reads (the original, or its private copy), and whether it is the
    /// original read in place: attached read-only (then immutably) to the written store's
    /// connection to compare objects.
    let path: String
    let isImmutable: Bool
    let version: CatalogVersion
    let layout: StoreLayout
    let physical: PhysicalSchema
    let mappings: [HopMapping]

    /// One property the store lacked values of, named as the target names it, with the source
    /// version's gaps it comes from (one; two when two source properties become one).
    struct CarriedGap {
        var gap: RequiredValueCensus.Gap
        var sources: [RequiredValueCensus.Gap]
    }

    /// The store's gaps that the migration carries, named as the target version names them (two
    /// source properties that become one are summed): what `migrate --dry-run` says the store
    /// already lacks.
    func carriedGaps() throws -> [RequiredValueCensus.Gap] {
        try carried().map(\.gap)
    }

    /// The store's gaps that the migration carries, each with the gaps it comes from.
    func carried() throws -> [CarriedGap] {
        let census = try RequiredValueCensus.take(
            connection: connection, model: version.model, layout: layout, physical: physical, linksMustReachAnObject: true)
        var carried: [CarriedGap] = []
        for gap in census.gaps {
            guard let name = Self.target(of: gap, through: mappings) else { continue }
            if let index = carried.firstIndex(where: { $0.gap.entity == name.entity && $0.gap.property == name.property }) {
                carried[index].gap.objects += gap.objects
                carried[index].sources.append(gap)
            } else {
                let named = RequiredValueCensus.Gap(entity: name.entity, property: name.property, kind: gap.kind, objects: gap.objects)
                carried.append(CarriedGap(gap: named, sources: [gap]))
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
