/// The indexes an entity asks for: fetch indexes and uniqueness constraints, each element
/// written `COLLATE BINARY ASC` (or `DESC`).
///
/// - A fetch index gets `Z_<Entity>_<name>`, except one whose only element is a relationship:
///   the foreign key index already covers it (RMAdminStore has no `Z_Usage_byUser`; Accounts3
///   has none of the fetch indexes its archive holds for relationships).
/// - A uniqueness constraint gets `UNIQUE INDEX Z_<Entity>_UNIQUE_<a>[_<b>…]`.
/// - Indexed properties: the model compiler (momc) turns a property that is the only element of
///   a fetch index into an indexed property (`NSIsIndexed`) with a fetch index of its own name,
///   listed first; that is where `Z_<Entity>_<property>` comes from (SyncMetadata_V3:
///   `Z_SyncableSettingsMetadata_key` and `…_byKey`; RMAdminStore, IMODb2 likewise). A compiled
///   model is taken as it is: knowledgeC's (framework 866) marks `Event.endDate` indexed but
///   holds no fetch index `endDate`, and its store has no `Z_Event_endDate`. A model that did
///   not go through the compiler (read from an `.xcdatamodel`) gets what the compiler would
///   add: `Z_<Entity>_<attribute>` for an attribute that is the only element of a fetch index but
///   not marked indexed, and for one marked indexed that no fetch index covers (an old
///   `indexed="YES"`).
struct EntityIndexBuilder {
    let model: NumberedModel
    /// Entity name → property name → column, from `HierarchyTableBuilder`.
    let columns: [String: [String: String]]

    func indexes(forHierarchyOf root: EntityDescription) throws -> [StoreLayout.Index] {
        var result: [StoreLayout.Index] = []
        for entity in model.hierarchy(of: root.name) {
            result += try indexes(of: entity, table: NumberedModel.tableName(ofRoot: root.name))
        }
        return result
    }

    private func indexes(of entity: EntityDescription, table: String) throws -> [StoreLayout.Index] {
        var result: [StoreLayout.Index] = []
        for attribute in attributesNeedingDerivedIndex(of: entity) {
            let column = try self.column(of: attribute.name, in: entity, index: attribute.name)
            result.append(StoreLayout.Index(
                name: "Z_\(entity.name)_\(attribute.name)", table: table, columns: [column], isUnique: false,
                columnOrders: [.ascending]))
        }
        for fetchIndex in entity.fetchIndexes {
            if fetchIndex.elements.count == 1, let only = fetchIndex.elements.first,
                case .relationship? = model.declaration(of: only.propertyName, in: entity.name)?.property
            {
                continue
            }
            let columns = try fetchIndex.elements.map { try column(of: $0.propertyName, in: entity, index: fetchIndex.name) }
            result.append(StoreLayout.Index(
                name: "Z_\(entity.name)_\(fetchIndex.name)", table: table, columns: columns, isUnique: false,
                columnOrders: fetchIndex.elements.map { $0.isAscending ? .ascending : .descending }))
        }
        for constraint in entity.uniquenessConstraints where !constraint.isEmpty {
            let name = "Z_\(entity.name)_UNIQUE_" + constraint.joined(separator: "_")
            let columns = try constraint.map { try column(of: $0, in: entity, index: name) }
            result.append(StoreLayout.Index(
                name: name, table: table, columns: columns, isUnique: true,
                columnOrders: Array(repeating: .ascending, count: columns.count)))
        }
        return result
    }

    /// The attributes of `entity` (its own, stored) that the model compiler would have given a
    /// fetch index of their own name, in declaration order.
    private func attributesNeedingDerivedIndex(of entity: EntityDescription) -> [AttributeDescription] {
        let indexNames = Set(entity.fetchIndexes.map(\.name))
        let soleElements = Set(entity.fetchIndexes.compactMap { $0.elements.count == 1 ? $0.elements.first?.propertyName : nil })
        return entity.attributes.filter { attribute in
            guard !attribute.isTransient, !indexNames.contains(attribute.name) else { return false }
            return attribute.isIndexed != soleElements.contains(attribute.name)
        }
    }

    private func column(of property: String, in entity: EntityDescription, index: String) throws -> String {
        guard let column = columns[entity.name]?[property] else {
            throw LayoutError.unknownIndexedProperty(entity: entity.name, index: index, property: property)
        }
        return column
    }
}
