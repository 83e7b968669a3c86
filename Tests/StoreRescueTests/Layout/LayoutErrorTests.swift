import Foundation
import Testing
@testable import StoreRescue

/// Every model the builder refuses, with the message an operator sees.
@Suite struct LayoutErrorTests {
    static func refusal(_ entities: [EntityDescription]) -> LayoutError? {
        do {
            _ = try StoreLayoutBuilder.layout(for: ManagedObjectModel(entities: entities))
            return nil
        } catch let error as LayoutError {
            return error
        } catch {
            return nil
        }
    }

    static func toMany(_ name: String, _ destination: String, inverse: String?) -> PropertyDescription {
        .relationship(RelationshipDescription(name: name, destinationEntityName: destination, inverseName: inverse, maxCount: 0, isToMany: true))
    }

    @Test func duplicateEntity() {
        let error = Self.refusal([EntityDescription(name: "Item"), EntityDescription(name: "Item")])
        #expect(error == .duplicateEntity(name: "Item"))
        #expect(error?.description == "the model has two entities named \"Item\"")
        #expect(error?.exitStatus == .notAStore)
        #expect(error?.recoverySuggestion?.contains(".xcdatamodeld") == true)
    }

    @Test func unknownSuperentity() {
        let error = Self.refusal([EntityDescription(name: "Item", superentityName: "Base")])
        #expect(error == .unknownSuperentity(entity: "Item", superentity: "Base"))
        #expect(error?.description == "entity \"Item\" names superentity \"Base\", which the model does not have")
    }

    @Test func inheritanceCycle() {
        let error = Self.refusal([
            EntityDescription(name: "A", superentityName: "B"), EntityDescription(name: "B", superentityName: "A"),
            EntityDescription(name: "C"),
        ])
        #expect(error == .inheritanceCycle(entities: ["A", "B"]))
        #expect(error?.description == "the superentities of \"A\", \"B\" form a cycle")
        #expect(Self.refusal([EntityDescription(name: "A", superentityName: "A")]) == .inheritanceCycle(entities: ["A"]))
    }

    @Test func unknownDestinationAndInverse() {
        let unknownDestination = Self.refusal([
            EntityDescription(name: "A", properties: [.relationship(RelationshipDescription(name: "b", destinationEntityName: "B"))])
        ])
        #expect(unknownDestination == .unknownDestination(entity: "A", relationship: "b", destination: "B"))
        #expect(unknownDestination?.description == "relationship A.b points at entity \"B\", which the model does not have")
        let unknownInverse = Self.refusal([
            EntityDescription(name: "A", properties: [Self.toMany("bs", "B", inverse: "a")]),
            EntityDescription(name: "B", properties: [.attribute(AttributeDescription(name: "a", type: .string))]),
        ])
        #expect(unknownInverse == .unknownInverse(entity: "A", relationship: "bs", destination: "B", inverse: "a"))
        #expect(unknownInverse?.description == "relationship A.bs names inverse \"a\", which is not a relationship of B")
    }

    @Test(arguments: ["Bad Name", "1Item", "Ité", "", "a;b", "x\"y"])
    func namesThatAreNotPlainIdentifiers(name: String) {
        let asEntity = Self.refusal([EntityDescription(name: name)])
        #expect(asEntity == .invalidName(kind: "entity", name: name, entity: nil))
        let asProperty = Self.refusal([EntityDescription(name: "Item", properties: [.attribute(AttributeDescription(name: name, type: .string))])])
        #expect(asProperty == .invalidName(kind: "property", name: name, entity: "Item"))
        #expect(asProperty?.description == "property name \"\(name)\" in entity \"Item\" is not a plain identifier (letters, digits and _, not starting with a digit)")
        let asIndex = Self.refusal([EntityDescription(name: "Item", fetchIndexes: [FetchIndexDescription(name: name, elements: [])])])
        #expect(asIndex == .invalidName(kind: "fetch index", name: name, entity: "Item"))
    }

    @Test func rootsWhoseTablesClash() {
        let error = Self.refusal([EntityDescription(name: "Item"), EntityDescription(name: "ITEM")])
        #expect(error == .tableNameClash(table: "ZITEM", entities: ["entity \"ITEM\"", "entity \"Item\""]))
        #expect(error?.description == "entity \"ITEM\" and entity \"Item\" would both be stored in table ZITEM")
    }

    @Test func entityNamedLikeAJoinTable() {
        // "_2TAGS" sorts before "A" ("_" before letters), so A is entity 2 and its join table
        // Z_2TAGS, the very table of entity _2TAGS.
        let error = Self.refusal([
            EntityDescription(name: "A", properties: [Self.toMany("tags", "A", inverse: "tagged"), Self.toMany("tagged", "A", inverse: "tags")]),
            EntityDescription(name: "_2TAGS"),
        ])
        #expect(error == .tableNameClash(table: "Z_2TAGS", entities: ["entity \"_2TAGS\"", "join table Z_2TAGS"]))
        #expect(error?.description == "entity \"_2TAGS\" and join table Z_2TAGS would both be stored in table Z_2TAGS")
    }

    @Test(arguments: [AttributeType.composite, .objectID, .undefined])
    func attributeTypesWithoutAColumn(type: AttributeType) {
        let error = Self.refusal([EntityDescription(name: "Item", properties: [.attribute(AttributeDescription(name: "x", type: type))])])
        #expect(error == .unsupportedAttributeType(entity: "Item", property: "x", type: type.modelFileName))
        #expect(error?.description == "attribute Item.x has type \(type.modelFileName), which this tool cannot lay out")
        // Transient, it needs no column.
        #expect(Self.refusal([EntityDescription(name: "Item", properties: [.attribute(AttributeDescription(name: "x", type: type, isTransient: true))])]) == nil)
    }

    @Test func indexesNamingWhatHasNoColumn() {
        let unknown = Self.refusal([
            EntityDescription(name: "Item", fetchIndexes: [FetchIndexDescription(name: "byX", elements: [.init(propertyName: "x"), .init(propertyName: "y")])])
        ])
        #expect(unknown == .unknownIndexedProperty(entity: "Item", index: "byX", property: "x"))
        #expect(unknown?.description == "index \"byX\" of entity \"Item\" names \"x\", which is not a stored attribute or to-one relationship of it")
        let toMany = Self.refusal([
            EntityDescription(name: "Item", properties: [Self.toMany("tags", "Item", inverse: nil)], uniquenessConstraints: [["tags"]])
        ])
        #expect(toMany == .unknownIndexedProperty(entity: "Item", index: "Z_Item_UNIQUE_tags", property: "tags"))
    }

    @Test func indexNamesSQLiteTakesAsOne() {
        let error = Self.refusal([
            EntityDescription(
                name: "Item", properties: [.attribute(AttributeDescription(name: "a", type: .string)), .attribute(AttributeDescription(name: "b", type: .string))],
                fetchIndexes: [
                    FetchIndexDescription(name: "byA", elements: [.init(propertyName: "a"), .init(propertyName: "b")]),
                    FetchIndexDescription(name: "BYA", elements: [.init(propertyName: "b"), .init(propertyName: "a")]),
                ])
        ])
        #expect(error == .indexNameClash(name: "Z_Item_BYA", otherName: "Z_Item_byA"))
        #expect(error?.description == "indexes Z_Item_byA and Z_Item_BYA are different but SQLite takes their names as one")
    }

    @Test func tooManyEntities() {
        let entities = (0..<16_001).map { EntityDescription(name: "E\($0)") }
        let error = Self.refusal(entities)
        #expect(error == .tooManyEntities(count: 16_001))
        #expect(error?.description == "the model has 16001 entities; Core Data numbers entities below 16001")
    }

    /// Before: the create failed inside SQLite ("table Z_METADATA already exists"), exit 74
    /// with a free-space hint.
    @Test(arguments: ["_METADATA", "_PRIMARYKEY", "_ModelCache"])
    func entityStoredInCoreDataOwnTable(name: String) {
        let error = Self.refusal([EntityDescription(name: name)])
        #expect(error == .reservedTableName(entity: name, table: "Z" + name.uppercased()))
        #expect(error?.description == "entity \"\(name)\" would be stored in table Z\(name.uppercased()), which Core Data keeps for its own bookkeeping")
        #expect(error?.exitStatus == .notAStore)
    }

    /// Before: "too many columns on ZE", exit 74 with a free-space hint.
    @Test func moreColumnsThanSQLiteAllows() {
        let wide = EntityDescription(name: "Wide", properties: (0..<2_000).map { .attribute(AttributeDescription(name: "a\($0)", type: .string)) })
        let error = Self.refusal([wide])
        #expect(error == .tooManyColumns(entity: "Wide", table: "ZWIDE", count: 2_003, limit: 2_000))
        #expect(error?.description == "entity \"Wide\" and its subentities need 2003 columns in ZWIDE; SQLite allows at most 2000")
        let root = EntityDescription(name: "Root")
        let subentities = (0..<2_000).map {
            EntityDescription(name: "S\($0)", superentityName: "Root", properties: [.attribute(AttributeDescription(name: "s\($0)", type: .integer64))])
        }
        #expect(Self.refusal([root] + subentities) == .tooManyColumns(entity: "Root", table: "ZROOT", count: 2_003, limit: 2_000))
        let justFits = EntityDescription(name: "Fits", properties: (0..<1_997).map { .attribute(AttributeDescription(name: "a\($0)", type: .string)) })
        #expect(Self.refusal([justFits]) == nil)
    }
}
