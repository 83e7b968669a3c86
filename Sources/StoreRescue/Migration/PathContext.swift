import Foundation

/// The versions a plan passes through, their layouts and each hop's mapping, built once for
/// both deciding and writing.
struct PathContext {
    let catalog: Catalog
    let plan: MigrationPlan
    let mappings: [HopMapping]
    private let layoutsWithoutHistory: [String: StoreLayout]

    /// - Throws: `LayoutError` when a version on the path cannot be laid out.
    init(catalog: Catalog, plan: MigrationPlan, readout: StoreReadout) throws {
        self.catalog = catalog
        self.plan = plan
        var layouts: [String: StoreLayout] = [:]
        for name in [plan.sourceVersion] + plan.hops.map(\.to) where layouts[name] == nil {
            guard let version = catalog.version(named: name) else { continue }
            layouts[name] = try StoreLayoutBuilder.layout(for: version.model)
        }
        layoutsWithoutHistory = layouts
        var mappings: [HopMapping] = []
        for (index, hop) in plan.hops.enumerated() {
            guard let source = catalog.version(named: hop.from), let destination = catalog.version(named: hop.to),
                let sourceLayout = layouts[hop.from], let destinationLayout = layouts[hop.to]
            else { continue }
            // The first hop reads the store: its unique indexes are the ones it has, not only the
            // ones its version lays out. Later hops read versions checked on the way.
            mappings.append(HopMappingBuilder.mapping(
                for: hop, source: source, sourceLayout: sourceLayout, destination: destination, destinationLayout: destinationLayout,
                storeUniqueIndexes: index == 0 ? UniqueIndexCheckBuilder.enforcedUniqueIndexes(of: readout.schema) : nil))
        }
        self.mappings = mappings
    }

    func version(_ name: String) -> CatalogVersion {
        guard let version = catalog.version(named: name) else { preconditionFailure("\(name) is not on the plan's path") }
        return version
    }

    /// A version's layout without the history tables (what mappings compare).
    func layout(_ name: String) -> StoreLayout {
        guard let layout = layoutsWithoutHistory[name] else { preconditionFailure("\(name) is not on the plan's path") }
        return layout
    }

    /// Every version's layout on the path, with the persistent history tables when the store has them.
    func layouts(history: Bool) throws -> [String: StoreLayout] {
        guard history else { return layoutsWithoutHistory }
        var result: [String: StoreLayout] = [:]
        for name in layoutsWithoutHistory.keys {
            result[name] = try StoreLayoutBuilder.layout(for: version(name).model, options: StoreLayoutOptions(includesPersistentHistory: true))
        }
        return result
    }

    /// Every version of the path composed over the base (the store under `schema`).
    func states(schema: String, physical: PhysicalSchema?, primaryKeys: [PrimaryKeyEntry]) throws -> [VirtualVersion] {
        var state = VirtualVersion.base(
            version: version(plan.sourceVersion), layout: layout(plan.sourceVersion), schema: schema,
            physical: physical ?? PhysicalSchema(tables: [], indexes: [], triggers: [], views: []), primaryKeys: primaryKeys)
        var states = [state]
        var nextID = (state.rowSources.map(\.id).max() ?? 0) + 1
        for mapping in mappings {
            state = try state.applying(mapping, destination: version(mapping.hop.to), layout: layout(mapping.hop.to), nextID: &nextID)
            states.append(state)
        }
        return states
    }
}

/// Finds the first custom expression SQLite rejects, naming where it is, before anything runs.
enum ExpressionCheck {
    static func firstFailure(in states: [VirtualVersion], mappings: [HopMapping], connection: SQLiteConnection) throws -> String? {
        for (index, state) in states.enumerated().dropFirst() {
            let mapping = mappings[index - 1]
            for source in state.rowSources {
                let values = [source.pk] + source.attributes.keys.sorted().compactMap { source.attributes[$0] }
                // Each value once more where an aggregate or window function is refused (a WHERE
                // clause): `count(*)` in a map would fold every object into one row.
                let perObject = source.attributes.keys.sorted().compactMap { source.attributes[$0] }.map { "(\(perObjectForm($0))) IS NULL" }
                if compiles("SELECT \(values.joined(separator: ", ")) FROM \(source.from) \(RowSource.alias) WHERE \(source.condition) LIMIT 0", connection) == nil,
                    perObject.isEmpty
                        || compiles("SELECT 1 FROM \(source.from) \(RowSource.alias) WHERE \(perObject.joined(separator: " OR ")) LIMIT 0", connection) == nil
                {
                    continue
                }
                if let message = compiles("SELECT 1 FROM \(source.from) \(RowSource.alias) WHERE \(source.condition) LIMIT 0", connection) {
                    return "\(mapping.hop.from) → \(mapping.hop.to), \(source.entity): the condition is not valid SQL: \(message)"
                }
                for name in source.attributes.keys.sorted() {
                    guard let value = source.attributes[name] else { continue }
                    var failure = compiles("SELECT \(value) FROM \(source.from) \(RowSource.alias) LIMIT 0", connection)
                        .map { "SQLite rejects the expression: \($0)" }
                    if failure == nil, let message = compiles(
                        "SELECT 1 FROM \(source.from) \(RowSource.alias) WHERE (\(perObjectForm(value))) IS NULL LIMIT 0",
                        connection)
                    {
                        failure = "an aggregate or window function computes one value over many objects; an expression "
                            + "computes one object's value from its own properties (SQLite: \(message))"
                    }
                    guard let failure else { continue }
                    var place = "\(source.entity).\(name)"
                    if case .expression(_, let jsonPath)? = mapping.entity(named: source.entity)?.attributes.first(where: { $0.name == name })?.value {
                        place += " (\(jsonPath))"
                    } else if let step = mapping.creations.first(where: { $0.entity == source.entity })?.assignments.first(where: { $0.property == name }) {
                        place += " (\(step.jsonPath))"
                    }
                    return "\(mapping.hop.from) → \(mapping.hop.to), \(place): \(failure)"
                }
            }
        }
        return nil
    }

    /// `sql` with the keys of created objects (`(first-key + row_number() OVER (ORDER BY pk))`,
    /// the migrator's own window function) as plain values, so that what remains of a window
    /// or aggregate function is the catalog's.
    private static func perObjectForm(_ sql: String) -> String {
        let opening = "{{first-key:", window = "}} + row_number() OVER (ORDER BY "
        guard sql.contains(opening) else { return sql }
        var result = ""
        var rest = sql[...]
        while let start = rest.range(of: opening) {
            result += rest[..<start.lowerBound]
            var digitsEnd = start.upperBound
            while digitsEnd < rest.endIndex, rest[digitsEnd].isASCII, rest[digitsEnd].isNumber { digitsEnd = rest.index(after: digitsEnd) }
            if digitsEnd > start.upperBound, rest[digitsEnd...].hasPrefix(window) {
                result += "coalesce(0, "
                rest = rest[rest.index(digitsEnd, offsetBy: window.count)...]
            } else {
                result += rest[start]
                rest = rest[start.upperBound...]
            }
        }
        return result + rest
    }

    /// nil when `sql` compiles, else SQLite's message. First-key tokens (worked out when the
    /// rows are written) compile as 0.
    private static func compiles(_ sql: String, _ connection: SQLiteConnection) -> String? {
        var sql = sql
        while let start = sql.range(of: "{{first-key:"), let end = sql.range(of: "}}", range: start.upperBound..<sql.endIndex) {
            sql.replaceSubrange(start.lowerBound..<end.upperBound, with: "0")
        }
        do {
            _ = try connection.prepare(sql)
            return nil
        } catch let error as SQLiteError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}
