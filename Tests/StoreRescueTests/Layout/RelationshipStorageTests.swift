import Foundation
import Testing
@testable import StoreRescue

/// Where each kind of relationship keeps its links, as the migration engine reads and writes
/// them: a foreign key column, the inverse's column, a join table, a hidden column.
@Suite struct RelationshipStorageTests {
    typealias R = LayoutRuleTests

    @Test func everyFormOfRelationshipIsLocated() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Post", properties: [
                R.attribute("title"),
                R.toMany("sections", "Section", inverse: "post", ordered: true),
                R.toMany("tags", "Tag", inverse: "posts"),
                R.toMany("attachments", "Attachment"),
                R.toOne("author", "Person"),
            ]),
            EntityDescription(name: "Section", properties: [R.toOne("post", "Post", inverse: "sections")]),
            EntityDescription(name: "Tag", properties: [R.toMany("posts", "Post", inverse: "tags", ordered: true)]),
            EntityDescription(name: "Attachment", properties: [R.attribute("name")]),
            EntityDescription(name: "Person", properties: [R.attribute("name")]),
            EntityDescription(name: "Editor", superentityName: "Person"),
            EntityDescription(name: "Essay", superentityName: "Post"),
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        let storage = layout.relationshipStorage
        #expect(layout.entityNumbers.map(\.name) == ["Attachment", "Person", "Editor", "Post", "Essay", "Section", "Tag"])
        // Person has a subentity: the to-one keeps the destination's Z_ENT too.
        #expect(storage["Post"]?["author"] == .foreignKey(column: "ZAUTHOR", entityColumn: "Z2_AUTHOR", inverseOrderColumn: nil))
        // The ordered inverse keeps each section's position on the section's row.
        #expect(storage["Section"]?["post"] == .foreignKey(column: "ZPOST", entityColumn: "Z4_POST", inverseOrderColumn: "Z_FOK_POST"))
        #expect(storage["Post"]?["sections"] == .inverse)
        #expect(storage["Post"]?["tags"] == .joinTable(
            table: "Z_4TAGS", ownColumn: "Z_4POSTS", otherColumn: "Z_7TAGS", orderColumn: nil, inverseOrderColumn: "Z_FOK_4POSTS"))
        #expect(storage["Tag"]?["posts"] == .joinTable(
            table: "Z_4TAGS", ownColumn: "Z_7TAGS", otherColumn: "Z_4POSTS", orderColumn: "Z_FOK_4POSTS", inverseOrderColumn: nil))
        #expect(storage["Post"]?["attachments"] == .destinationColumn(table: "ZATTACHMENT", column: "Z4ATTACHMENTS", orderColumn: nil))
        // A subentity inherits where its parent's relationships are kept.
        #expect(storage["Essay"] == storage["Post"])
        // Every column named is a column of the table it names.
        for (entity, relationships) in storage {
            for (name, kind) in relationships {
                switch kind {
                case .foreignKey(let column, let entityColumn, let order):
                    let table = try #require(layout.table(ofEntity: entity, in: model))
                    for needed in [column, entityColumn, order].compactMap({ $0 }) {
                        #expect(table.columns.contains { $0.name == needed }, "\(entity).\(name): \(needed)")
                    }
                case .joinTable(let tableName, let own, let other, let order, let inverseOrder):
                    let table = try #require(layout.table(named: tableName))
                    for needed in [own, other, order, inverseOrder].compactMap({ $0 }) {
                        #expect(table.columns.contains { $0.name == needed }, "\(entity).\(name): \(needed)")
                    }
                case .destinationColumn(let tableName, let column, let order):
                    let table = try #require(layout.table(named: tableName))
                    for needed in [column, order].compactMap({ $0 }) {
                        #expect(table.columns.contains { $0.name == needed }, "\(entity).\(name): \(needed)")
                    }
                case .inverse:
                    break
                }
            }
        }
    }
}
