/// The join tables of a model's many-to-many relationships.
///
/// One table per pair of inverse to-many relationships, named after the relationship `R` of the
/// entity with the lower number `a` (its destination numbered `b`), with `I` the inverse:
/// `Z_<a><R> ( Z_<a><I> INTEGER, Z_<b><R> INTEGER, PRIMARY KEY (Z_<a><I>, Z_<b><R>) )` and the
/// index `Z_<a><R>_Z_<b><R>_INDEX ON (Z_<b><R>, Z_<a><I>)`. Each column holds the primary keys of
/// the entity numbered in its name, and is named after the relationship that points at that
/// entity (Accounts3: `Z_1OWNINGACCOUNTTYPES (Z_1ACCESSKEYS, Z_4OWNINGACCOUNTTYPES)`).
/// The numbers are the entities' own, not their roots' (knowledgeC: `Z_4EVENT (Z_4CUSTOMMETADATA,
/// Z_11EVENT)`, Event being entity 11 under Object).
enum JoinTablePlanner {
    struct JoinTable {
        /// The entity whose relationship names the table.
        var ownerEntity: String
        var table: StoreLayout.Table
        var index: StoreLayout.Index
        /// How each side's relationship is kept in the table: (entity, relationship, storage).
        var sides: [(entity: String, relationship: String, storage: StoreLayout.RelationshipStorage)]
    }

    static func plan(_ model: NumberedModel) throws -> [JoinTable] {
        var result: [JoinTable] = []
        for entity in model.entities {
            for relationship in entity.relationships
            where relationship.isToMany && !relationship.isTransient && !model.isRedeclaration(relationship.name, in: entity)
            {
                guard let inverseName = relationship.inverseName else { continue }
                let destination = relationship.destinationEntityName
                guard let declaration = model.declaration(of: inverseName, in: destination),
                    case .relationship(let inverse) = declaration.property,
                    inverse.isToMany, !inverse.isTransient
                else { continue }
                guard isOwner(relationship, of: entity, inverse: inverse, declaredBy: declaration.entity, model: model) else { continue }
                result.append(joinTable(relationship, of: entity, inverse: inverse, model: model))
            }
        }
        return result
    }

    /// True when `relationship` (not its inverse) names the pair's table: its entity has the lower
    /// number; when both sides belong to the same entity, the relationship whose name comes later
    /// in code-point order (unverified: only kik, which has no model cache, has such tables).
    static func isOwner(
        _ relationship: RelationshipDescription, of entity: EntityDescription, inverse: RelationshipDescription,
        declaredBy inverseEntity: EntityDescription, model: NumberedModel
    ) -> Bool {
        // A pair whose inverse does not point back is not a pair: each side gets its own table.
        guard inverse.inverseName == relationship.name else { return true }
        // A relationship that is its own inverse (`friends` ↔ `friends`) is one pair by itself.
        if inverseEntity.name == entity.name, inverse.name == relationship.name { return true }
        let mine = model.number(of: entity.name), theirs = model.number(of: inverseEntity.name)
        if mine != theirs { return mine < theirs }
        return inverse.name.utf8.lexicographicallyPrecedes(relationship.name.utf8)
    }

    static func joinTable(
        _ relationship: RelationshipDescription, of entity: EntityDescription, inverse: RelationshipDescription,
        model: NumberedModel
    ) -> JoinTable {
        let owner = model.number(of: entity.name)
        let other = model.number(of: relationship.destinationEntityName)
        let tableName = "Z_\(owner)" + relationship.name.uppercased()
        let first = "Z_\(owner)" + inverse.name.uppercased()
        var second = "Z_\(other)" + relationship.name.uppercased()
        // Its own inverse: both columns would have one name; the second takes a suffix (a guess).
        if second == first { second += "1" }
        var columns = [StoreLayout.Column(name: first, type: "INTEGER"), StoreLayout.Column(name: second, type: "INTEGER")]
        // Ordered sides keep their order in `Z_FOK_<column>` (format notes §3; no sample has one).
        if inverse.isOrdered { columns.append(StoreLayout.Column(name: "Z_FOK_" + first.dropFirst(2), type: "INTEGER")) }
        if relationship.isOrdered { columns.append(StoreLayout.Column(name: "Z_FOK_" + second.dropFirst(2), type: "INTEGER")) }
        let table = StoreLayout.Table(name: tableName, columns: columns, primaryKey: [first, second], rootEntity: nil)
        let index = StoreLayout.Index(
            name: "\(tableName)_\(second)_INDEX", table: tableName, columns: [second, first], isUnique: false)
        let firstOrder = inverse.isOrdered ? "Z_FOK_" + first.dropFirst(2) : nil
        let secondOrder = relationship.isOrdered ? "Z_FOK_" + second.dropFirst(2) : nil
        var sides: [(entity: String, relationship: String, storage: StoreLayout.RelationshipStorage)] = [
            (entity.name, relationship.name, .joinTable(
                table: tableName, ownColumn: first, otherColumn: second, orderColumn: secondOrder, inverseOrderColumn: firstOrder)),
        ]
        if let inverseOwner = model.declaration(of: inverse.name, in: relationship.destinationEntityName)?.entity.name,
            !(inverseOwner == entity.name && inverse.name == relationship.name)
        {
            sides.append((inverseOwner, inverse.name, .joinTable(
                table: tableName, ownColumn: second, otherColumn: first, orderColumn: firstOrder, inverseOrderColumn: secondOrder)))
        }
        return JoinTable(ownerEntity: entity.name, table: table, index: index, sides: sides)
    }
}
