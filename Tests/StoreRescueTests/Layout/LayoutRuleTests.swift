import Foundation
import Testing
@testable import StoreRescue

/// Each layout rule on a small model built here, including the cases no sample shows (marked
/// "unverified" in Docs/LAYOUT.md), so a change to any rule is seen.
@Suite struct LayoutRuleTests {
    static func attribute(_ name: String, _ type: AttributeType = .string) -> PropertyDescription {
        .attribute(AttributeDescription(name: name, type: type))
    }

    static func toOne(_ name: String, _ destination: String, inverse: String? = nil) -> PropertyDescription {
        .relationship(RelationshipDescription(name: name, destinationEntityName: destination, inverseName: inverse))
    }

    static func toMany(_ name: String, _ destination: String, inverse: String? = nil, ordered: Bool = false) -> PropertyDescription {
        .relationship(RelationshipDescription(
            name: name, destinationEntityName: destination, inverseName: inverse, maxCount: 0, isToMany: true, isOrdered: ordered))
    }

    @Test func numberingIsPreorderWithCaseInsensitiveNames() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "b"), EntityDescription(name: "Zeta", superentityName: "A"),
            EntityDescription(name: "A"), EntityDescription(name: "alpha", superentityName: "A"),
            EntityDescription(name: "Beta", superentityName: "alpha"), EntityDescription(name: "C"),
        ])
        let numbers = try StoreLayoutBuilder.entityNumbers(for: model)
        #expect(numbers.map(\.name) == ["A", "alpha", "Beta", "Zeta", "b", "C"])
        #expect(numbers.map(\.ent) == [1, 2, 3, 4, 5, 6])
        #expect(numbers.map(\.superEnt) == [0, 1, 2, 1, 0, 0])
        // Equal but for case: the exact names break the tie (upper case first).
        #expect(StoreLayoutBuilder.precedesInNumbering("ITEM", "Item"))
        #expect(!StoreLayoutBuilder.precedesInNumbering("Item", "ITEM"))
        // Letters fold to lower case, so "_" (0x5F) sorts before every letter.
        #expect(StoreLayoutBuilder.precedesInNumbering("A_b", "AB"))
    }

    @Test func oneTablePerHierarchyWithFixedColumnsAndTypes() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [
                Self.attribute("title"), Self.attribute("count", .integer16), Self.attribute("flag", .boolean),
                Self.attribute("when", .date), Self.attribute("ratio", .float), Self.attribute("price", .decimal),
                Self.attribute("link", .uri), Self.attribute("id", .uuid), Self.attribute("blob", .binaryData),
                Self.attribute("thing", .transformable), Self.attribute("size", .double), Self.attribute("big", .integer64),
                .attribute(AttributeDescription(name: "scratch", type: .string, isTransient: true)),
            ])
        ])
        let table = try #require(try StoreLayoutBuilder.layout(for: model).table(named: "ZITEM"))
        #expect(table.createStatement == """
            CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZBIG INTEGER, ZCOUNT INTEGER, \
            ZFLAG INTEGER, ZRATIO FLOAT, ZSIZE FLOAT, ZWHEN TIMESTAMP, ZPRICE DECIMAL, ZTITLE VARCHAR, ZLINK VARCHAR, \
            ZID BLOB, ZBLOB BLOB, ZTHING BLOB )
            """)
        #expect(table.primaryKey == ["Z_PK"] && table.rootEntity == "Item")
    }

    /// RMAdminStore's ZCOREORGANIZATIONSETTINGS in small: siblings declaring the same name get
    /// suffixes in numbering order; a redeclared inherited property shares the parent's column.
    @Test func siblingsGetSuffixesAndRedeclarationsShareColumns() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Settings", isAbstract: true, properties: [Self.attribute("sortKey", .uuid)]),
            EntityDescription(name: "Local", superentityName: "Settings", properties: [
                Self.attribute("passcode"), Self.attribute("sortKey", .uuid),
            ]),
            EntityDescription(name: "Cloud", superentityName: "Settings", properties: [
                Self.attribute("passcode"), Self.attribute("recovery"),
            ]),
            EntityDescription(name: "Family", superentityName: "Settings", properties: [Self.attribute("passcode")]),
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        #expect(layout.tables.count == 1)
        let table = try #require(layout.table(named: "ZSETTINGS"))
        #expect(table.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT", "ZPASSCODE", "ZRECOVERY", "ZPASSCODE1", "ZPASSCODE2", "ZSORTKEY"])
        #expect(layout.indexes.map(\.name) == ["ZSETTINGS_Z_ENT_INDEX"])
        #expect(layout.propertyColumns["Cloud"] == ["sortKey": "ZSORTKEY", "passcode": "ZPASSCODE", "recovery": "ZRECOVERY"])
        #expect(layout.propertyColumns["Family"] == ["sortKey": "ZSORTKEY", "passcode": "ZPASSCODE1"])
        #expect(layout.propertyColumns["Local"] == ["sortKey": "ZSORTKEY", "passcode": "ZPASSCODE2"])
        #expect(layout.propertyColumns["Settings"] == ["sortKey": "ZSORTKEY"])
        #expect(layout.entityNumbers.map(\.name) == ["Settings", "Cloud", "Family", "Local"])
    }

    @Test func toOneColumnsWithEntityAndOrderCompanions() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Owner", properties: [Self.toMany("pets", "Pet", inverse: "owner", ordered: true)]),
            EntityDescription(name: "Pet", properties: [
                Self.toOne("owner", "Owner", inverse: "pets"), Self.toOne("home", "Place"), Self.attribute("name"),
            ]),
            EntityDescription(name: "Place"),
            EntityDescription(name: "House", superentityName: "Place"),
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        // Owner 1, Pet 2, Place 3, House 4: `home` points at a hierarchy, so its entity goes in Z3_HOME.
        #expect(layout.table(named: "ZPET")?.createStatement == """
            CREATE TABLE ZPET ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZHOME INTEGER, Z3_HOME INTEGER, \
            ZOWNER INTEGER, Z_FOK_OWNER INTEGER, ZNAME VARCHAR )
            """)
        #expect(layout.table(named: "ZOWNER")?.columns.count == 3)
        #expect(layout.indexes.map(\.createStatement) == [
            "CREATE INDEX ZPET_ZHOME_INDEX ON ZPET (ZHOME)",
            "CREATE INDEX ZPET_ZOWNER_INDEX ON ZPET (ZOWNER)",
            "CREATE INDEX ZPLACE_Z_ENT_INDEX ON ZPLACE (Z_ENT)",
        ])
    }

    /// Accounts3's shape: the lower-numbered entity's relationship names the table; each column
    /// is named after the relationship that points at its entity.
    @Test func manyToManyJoinTables() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Type", properties: [Self.toMany("keys", "Key", inverse: "types")]),
            EntityDescription(name: "Key", properties: [Self.toMany("types", "Type", inverse: "keys", ordered: true)]),
            EntityDescription(name: "Folder", properties: [
                Self.toMany("favorites", "Folder", inverse: "favoriteFolders", ordered: true),
                Self.toMany("favoriteFolders", "Folder", inverse: "favorites"),
            ]),
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        // Folder 1, Key 2, Type 3.
        #expect(layout.tables.map(\.name) == ["ZFOLDER", "Z_1FAVORITES", "ZKEY", "Z_2TYPES", "ZTYPE"])
        #expect(layout.table(named: "Z_2TYPES")?.createStatement
            == "CREATE TABLE Z_2TYPES ( Z_2KEYS INTEGER, Z_3TYPES INTEGER, Z_FOK_3TYPES INTEGER, PRIMARY KEY (Z_2KEYS, Z_3TYPES) )")
        // Both sides on one entity (unverified: only kik has such tables, without a model cache):
        // the later name in code-point order names the table, as in the format notes' example.
        #expect(layout.table(named: "Z_1FAVORITES")?.createStatement == """
            CREATE TABLE Z_1FAVORITES ( Z_1FAVORITEFOLDERS INTEGER, Z_1FAVORITES INTEGER, Z_FOK_1FAVORITES INTEGER, \
            PRIMARY KEY (Z_1FAVORITEFOLDERS, Z_1FAVORITES) )
            """)
        #expect(layout.indexes.map(\.createStatement) == [
            "CREATE INDEX Z_1FAVORITES_Z_1FAVORITES_INDEX ON Z_1FAVORITES (Z_1FAVORITES, Z_1FAVORITEFOLDERS)",
            "CREATE INDEX Z_2TYPES_Z_3TYPES_INDEX ON Z_2TYPES (Z_3TYPES, Z_2KEYS)",
        ])
        #expect(layout.table(named: "Z_2TYPES")?.primaryKey == ["Z_2KEYS", "Z_3TYPES"])
    }

    @Test func relationshipThatIsItsOwnInverse() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Person", properties: [Self.toMany("friends", "Person", inverse: "friends")])
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        #expect(layout.table(named: "Z_1FRIENDS")?.columns.map(\.name) == ["Z_1FRIENDS", "Z_1FRIENDS1"])
        #expect(layout.tables.count == 2)
    }

    /// CartKit's shape: a to-many without inverse is a hidden column on the destination's table,
    /// named after the source entity's number, with a foreign key index.
    @Test func toManyWithoutInverseIsAHiddenColumn() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Cart", properties: [Self.toMany("items", "Line"), Self.toMany("notes", "Line", ordered: true)]),
            EntityDescription(name: "Line", properties: [Self.attribute("count", .integer64), Self.attribute("name")]),
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        #expect(layout.table(named: "ZLINE")?.columns.map(\.name)
            == ["Z_PK", "Z_ENT", "Z_OPT", "ZCOUNT", "Z1ITEMS", "Z1NOTES", "Z_FOK_1NOTES", "ZNAME"])
        #expect(layout.indexes.map(\.name) == ["ZLINE_Z1ITEMS_INDEX", "ZLINE_Z1NOTES_INDEX"])
    }

    @Test func fetchIndexesUniquenessAndDerivedIndexes() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(
                name: "Event",
                properties: [
                    Self.attribute("name"), Self.attribute("start", .date), Self.toOne("owner", "Event"),
                    .attribute(AttributeDescription(name: "legacy", type: .integer32, isIndexed: true)),
                ],
                uniquenessConstraints: [["name", "start"]],
                fetchIndexes: [
                    FetchIndexDescription(name: "byNameDesc", elements: [.init(propertyName: "name"), .init(propertyName: "start", isAscending: false)]),
                    FetchIndexDescription(name: "byOwner", elements: [.init(propertyName: "owner")]),
                    FetchIndexDescription(name: "byStart", elements: [.init(propertyName: "start")]),
                ])
        ])
        let statements = try StoreLayoutBuilder.layout(for: model).indexes.map(\.createStatement)
        #expect(statements == [
            "CREATE INDEX ZEVENT_ZOWNER_INDEX ON ZEVENT (ZOWNER)",
            // Derived as the model compiler would, in declaration order: `start` is the only
            // element of byStart, and `legacy` is marked indexed with no fetch index of its own.
            "CREATE INDEX Z_Event_start ON ZEVENT (ZSTART COLLATE BINARY ASC)",
            "CREATE INDEX Z_Event_legacy ON ZEVENT (ZLEGACY COLLATE BINARY ASC)",
            "CREATE INDEX Z_Event_byNameDesc ON ZEVENT (ZNAME COLLATE BINARY ASC, ZSTART COLLATE BINARY DESC)",
            "CREATE INDEX Z_Event_byStart ON ZEVENT (ZSTART COLLATE BINARY ASC)",
            "CREATE UNIQUE INDEX Z_Event_UNIQUE_name_start ON ZEVENT (ZNAME COLLATE BINARY ASC, ZSTART COLLATE BINARY ASC)",
        ], "\(statements.joined(separator: "\n"))")
    }

    /// A compiled model is taken as it is: knowledgeC marks `endDate` indexed because it is the
    /// only element of `byEndDateIndex`, and has no `Z_Event_endDate`.
    @Test func compiledModelIndexesAreTakenAsTheyAre() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(
                name: "Event",
                properties: [.attribute(AttributeDescription(name: "endDate", type: .date, isIndexed: true))],
                fetchIndexes: [FetchIndexDescription(name: "byEndDateIndex", elements: [.init(propertyName: "endDate")])])
        ])
        #expect(try StoreLayoutBuilder.layout(for: model).indexes.map(\.name) == ["Z_Event_byEndDateIndex"])
        var derived = model
        derived.entities[0].fetchIndexes.insert(FetchIndexDescription(name: "endDate", elements: [.init(propertyName: "endDate")]), at: 0)
        #expect(try StoreLayoutBuilder.layout(for: derived).indexes.map(\.name) == ["Z_Event_endDate", "Z_Event_byEndDateIndex"])
    }

    @Test func transientAndInverseSidesHaveNoColumns() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [
                Self.toMany("bs", "B", inverse: "a"),
                .relationship(RelationshipDescription(name: "scratch", destinationEntityName: "B", isTransient: true)),
            ]),
            EntityDescription(name: "B", properties: [Self.toOne("a", "A", inverse: "bs")]),
        ])
        let layout = try StoreLayoutBuilder.layout(for: model)
        #expect(layout.table(named: "ZA")?.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT"])
        #expect(layout.table(named: "ZB")?.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT", "ZA"])
    }

    @Test func emptyModelHasOnlyBookkeeping() throws {
        let layout = try StoreLayoutBuilder.layout(for: ManagedObjectModel(entities: []))
        #expect(layout.tables.isEmpty && layout.indexes.isEmpty && layout.entityNumbers.isEmpty)
        #expect(layout.createStatements() == StoreLayout.bookkeepingStatements)
        #expect(StoreLayout.bookkeepingStatements[0] == "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)")
    }

    /// A layout built by hand with a hostile name still yields a safe statement: names that are
    /// not plain identifiers are quoted.
    @Test func nonIdentifierNamesAreQuotedInStatements() {
        let table = StoreLayout.Table(
            name: "Z\"; DROP TABLE Z_METADATA; --", columns: [StoreLayout.Column(name: "Z_PK", type: "INTEGER")],
            primaryKey: ["Z_PK"], rootEntity: nil)
        #expect(table.createStatement == "CREATE TABLE \"Z\"\"; DROP TABLE Z_METADATA; --\" ( Z_PK INTEGER PRIMARY KEY )")
        let index = StoreLayout.Index(name: "a b", table: "T", columns: ["c d"], isUnique: true, columnOrders: [.descending])
        #expect(index.createStatement == "CREATE UNIQUE INDEX \"a b\" ON T (\"c d\" COLLATE BINARY DESC)")
    }
}
