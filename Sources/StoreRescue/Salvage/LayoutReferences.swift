/// The columns of a version's layout that hold another row's `Z_PK`, and the rows they may point
/// at: what salvage checks after recovery, because a row recovered without the row it points to
/// would make Core Data fault on a missing object.
///
/// - to-one relationships: `Z<REL>` on the source entity's table (with its `Z<n>_<REL>` entity
///   column and `Z_FOK_<REL>` ordering column when the layout has them) → cleared when dangling;
/// - to-many relationships without an inverse: the hidden `Z<n><REL>` column on the destination's
///   table, holding the source row's `Z_PK` → cleared when dangling;
/// - many-to-many join tables: both ends → the row is dropped when either end is missing.
struct LayoutReferences {
    struct Reference: Equatable {
        var table: String
        var column: String
        /// Columns cleared with it (`Z<n>_` entity column, `Z_FOK_` ordering column).
        var companions: [String]
        var targetTable: String
        /// `Z_ENT` values the target row may have (the destination entity and its subentities).
        var targetEntities: [Int]
    }

    var toOne: [Reference] = []
    /// Join tables: each end is a reference; a row with a dangling end is dropped.
    var joinEnds: [Reference] = []

    init(model: ManagedObjectModel, layout: StoreLayout) throws {
        let numbered = try NumberedModel(model)
        let tables = Dictionary(layout.tables.map { ($0.name, Set($0.columns.map(\.name))) }, uniquingKeysWith: { first, _ in first })
        func table(of entity: String) -> String { NumberedModel.tableName(ofRoot: numbered.root(of: entity)) }
        func entities(under name: String) -> [Int] { numbered.hierarchy(of: name).map { numbered.number(of: $0.name) } }
        var seen = Set<String>()
        for entity in numbered.entities {
            let owner = table(of: entity.name)
            for property in model.allProperties(of: entity) {
                guard case .relationship(let relationship) = property, !relationship.isTransient else { continue }
                if !relationship.isToMany {
                    guard let column = layout.propertyColumns[entity.name]?[relationship.name],
                        seen.insert(owner + "." + column).inserted
                    else { continue }
                    let destination = relationship.destinationEntityName
                    let companions = ["Z\(numbered.number(of: destination))_" + column.dropFirst(), "Z_FOK_" + column.dropFirst()]
                        .filter { tables[owner]?.contains($0) == true }
                    toOne.append(Reference(
                        table: owner, column: column, companions: companions, targetTable: table(of: destination),
                        targetEntities: entities(under: destination)))
                } else if relationship.inverseName == nil, entity.relationships.contains(where: { $0.name == relationship.name }) {
                    // The hidden column lives on the destination's table and points back at the source.
                    let holder = table(of: relationship.destinationEntityName)
                    let column = "Z\(numbered.number(of: entity.name))" + relationship.name.uppercased()
                    guard tables[holder]?.contains(column) == true, seen.insert(holder + "." + column).inserted else { continue }
                    let order = "Z_FOK_" + column.dropFirst()
                    toOne.append(Reference(
                        table: holder, column: column, companions: tables[holder]?.contains(order) == true ? [order] : [],
                        targetTable: owner, targetEntities: entities(under: entity.name)))
                }
            }
        }
        for join in try JoinTablePlanner.plan(numbered) {
            for column in join.table.columns.prefix(2).map(\.name) {
                // `Z_<n><NAME>`: the column holds primary keys of entity number n.
                let digits = column.dropFirst(2).prefix { $0.isNumber }
                guard let number = Int(digits), let target = numbered.entities.first(where: { numbered.number(of: $0.name) == number }) else { continue }
                joinEnds.append(Reference(
                    table: join.table.name, column: column, companions: [], targetTable: table(of: target.name),
                    targetEntities: entities(under: target.name)))
            }
        }
    }
}
