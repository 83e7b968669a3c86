import Foundation
import Testing
@testable import StoreRescue

/// Entity hierarchies and numbering across versions: rows move between tables with their new
/// `Z_ENT`, keys are kept, merges are refused, and every place an entity number is stored
/// (`Z_ENT`, `Z<n>_` columns, persistent history, CloudKit metadata) is renumbered.
@Suite struct InferredHierarchyTests {
    typealias M = TestModel

    private func output(_ report: MigrationReport) throws -> String {
        try #require(report.result?.path, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
    }

    @Test func aNewAbstractParentTakesTheRowsIntoItsTable() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Dog", properties: [M.attribute("name"), M.attribute("barks", .boolean)])]),
            M.version("V2", [
                EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name")]),
                EntityDescription(name: "Dog", superentityName: "Animal", properties: [M.attribute("barks", .boolean)]),
            ]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            try context.insert("Dog", values: ["name": .text("rex"), "barks": .integer(1)])
            try context.insert("Dog", values: ["name": .text("fido"), "barks": .integer(0)])
        }
        let report = fixture.migrate(path)
        let output = try output(report)
        try fixture.expectExactLayout(output, version: "V2")
        let dogs = try fixture.objects(output, at: "V2", "Dog")
        #expect(dogs.map(\.key) == [1, 2] && dogs.map { $0["name"] } == [.text("rex"), .text("fido")])
        #expect(dogs.allSatisfy { $0.entity == "Dog" })
        let entity = try #require(report.hops.first?.entities.first { $0.name == "Dog" })
        #expect(entity.sourceTable == "ZDOG" && entity.destinationTable == "ZANIMAL")
        #expect(entity.sourceNumber == 1 && entity.destinationNumber == 2)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Animal'")?.int64 == 2)
    }

    /// A relationship widened to a new abstract parent: V2 renames Dog to Hound (renaming
    /// identifier) under a new abstract Base, and Owner.pets now points at Base. Base has no
    /// objects of its own, but it takes every Hound, and every Hound was a Dog: Core Data's
    /// inferred mapping keeps the links (a review's run refused it as "a new entity with no objects").
    @Test func aRelationshipWidenedToANewAbstractParentKeepsItsLinks() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [
                EntityDescription(name: "Dog", properties: [M.attribute("name"), M.toOne("owner", "Owner", inverse: "pets")]),
                EntityDescription(name: "Owner", properties: [M.attribute("name"), M.toMany("pets", "Dog", inverse: "owner")]),
            ]),
            M.version("V2", [
                EntityDescription(name: "Base", isAbstract: true, properties: [M.toOne("owner", "Owner", inverse: "pets")]),
                EntityDescription(name: "Hound", superentityName: "Base", renamingIdentifier: "Dog", properties: [M.attribute("name")]),
                EntityDescription(name: "Owner", properties: [M.attribute("name"), M.toMany("pets", "Base", inverse: "owner")]),
            ]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let ann = try context.insert("Owner", values: ["name": .text("ann")])
            let rex = try context.insert("Dog", values: ["name": .text("rex")])
            let fido = try context.insert("Dog", values: ["name": .text("fido")])
            try context.insert("Dog", values: ["name": .text("stray")])
            try context.link("Owner", key: ann, "pets", to: rex)
            try context.link("Owner", key: ann, "pets", to: fido)
        }
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message))")
        #expect(dryRun.linksToClear.isEmpty)
        let plan = dryRun.renderText()
        #expect(plan.contains("Hound (renamed from Dog): 3 rows, moved from ZDOG to ZBASE, Z_ENT 1 → 2"), "\(plan)")
        #expect(plan.contains("on its subentities' objects (abstract: no objects of its own)") && !plan.contains("no links"), "\(plan)")
        let report = fixture.migrate(path)
        let output = try output(report)
        try fixture.expectExactLayout(output, version: "V2")
        let hounds = try fixture.objects(output, at: "V2", "Hound")
        #expect(hounds.map { "\($0.key) \($0["name"]?.string ?? "")" } == ["1 rex", "2 fido", "3 stray"])
        #expect(hounds.allSatisfy { $0.entity == "Hound" })
        #expect(try fixture.links(output, at: "V2", "Owner", "pets").map { Array($0.prefix(2)) } == [[1, 1], [1, 2]])
        #expect(report.result?.clearedLinks.values.reduce(0, +) ?? -1 == 0)
        #expect(report.result?.rowsByEntity["Hound"] == 3 && report.result?.rowsByEntity["Owner"] == 1)
        let entity = try #require(report.hops.first?.entities.first { $0.name == "Hound" })
        #expect(entity.source == "Dog" && entity.sourceTable == "ZDOG" && entity.destinationTable == "ZBASE")
        #expect(entity.sourceNumber == 1 && entity.destinationNumber == 2)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.rows("SELECT Z_PK, Z_ENT, ZOWNER FROM ZBASE ORDER BY Z_PK").map { $0.map { $0.int64 ?? -1 } }
            == [[1, 2, 1], [2, 2, 1], [3, 2, -1]])
        #expect(try connection.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT").map { row in
            "\(row[0].int64 ?? -1) \(row[1].string ?? "") \(row[2].int64 ?? -1)"
        } == ["1 Base 0", "2 Hound 1", "3 Owner 0"])
        #expect(try connection.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Base'")?.int64 ?? 0 >= 3)
        let match = StoreMatcher.match(storePath: output, catalog: fixture.catalog)
        #expect(match.outcome == .exact && match.version == "V2")
    }

    /// A new entity that takes none of the old destination's objects is still no widening.
    @Test func aRelationshipMovedToANewEntityOutsideTheHierarchyIsRefused() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [
                EntityDescription(name: "Dog", properties: [M.attribute("name")]),
                EntityDescription(name: "Owner", properties: [M.toMany("pets", "Dog")]),
            ]),
            M.version("V2", [
                EntityDescription(name: "Base", isAbstract: true),
                EntityDescription(name: "Cat", properties: [M.attribute("name")]),
                EntityDescription(name: "Hound", superentityName: "Base", renamingIdentifier: "Dog", properties: [M.attribute("name")]),
                EntityDescription(name: "Owner", properties: [M.toMany("pets", "Cat")]),
            ]),
        ])
        let report = fixture.migrate(try fixture.store(at: "V1"), dryRun: true)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .structureNotInferable && refusal.entity == "Owner" && refusal.property == "pets")
        #expect(refusal.message == "Owner.pets now points at Cat, a new entity with no objects, while it pointed at Dog")
    }

    @Test func twoHierarchiesCannotBeMerged() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Cat", properties: [M.attribute("name")]),
                             EntityDescription(name: "Dog", properties: [M.attribute("name")])]),
            M.version("V2", [
                EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name")]),
                EntityDescription(name: "Cat", superentityName: "Animal"), EntityDescription(name: "Dog", superentityName: "Animal"),
            ]),
        ])
        let report = fixture.migrate(try fixture.store(at: "V1"))
        #expect(report.status == .refused)
        #expect(report.refusals.first?.code == .structureNotInferable && report.refusals.first?.coreDataErrorCode == 134140)
        #expect(report.refusals.first?.message.contains("Core Data cannot merge hierarchies") == true)
    }

    @Test func anEntityMovedOutOfItsHierarchyKeepsItsKeys() throws {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [
                EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name")]),
                EntityDescription(name: "Cat", superentityName: "Animal"), EntityDescription(name: "Dog", superentityName: "Animal"),
            ]),
            M.version("V2", [
                EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name")]),
                EntityDescription(name: "Cat", superentityName: "Animal"), EntityDescription(name: "Dog", properties: [M.attribute("name")]),
            ]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            try context.insert("Cat", values: ["name": .text("tom")])
            try context.insert("Dog", values: ["name": .text("rex")])
            try context.insert("Cat", values: ["name": .text("kit")])
        }
        let output = try output(fixture.migrate(path))
        try fixture.expectExactLayout(output, version: "V2")
        #expect(try fixture.objects(output, at: "V2", "Dog").map { "\($0.key) \($0["name"]?.string ?? "")" } == ["2 rex"])
        #expect(try fixture.objects(output, at: "V2", "Cat").map { "\($0.key) \($0["name"]?.string ?? "")" } == ["1 tom", "3 kit"])
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        // The new root's counter is at least its largest key (and not below the old hierarchy's).
        #expect(try connection.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Dog'")?.int64 ?? 0 >= 2)
    }

    @Test func renumberedEntitiesAreRenumberedEverywhere() throws {
        // V2 adds Aardvark, which sorts first: Animal 1 → 2, Cat 2 → 3, Item 3 → 4; Item.owner points at
        // Animal's hierarchy, whose Z<n>_ column must follow.
        let animal = EntityDescription(name: "Animal", properties: [M.attribute("name")])
        let cat = EntityDescription(name: "Cat", superentityName: "Animal")
        let item = EntityDescription(name: "Item", properties: [M.attribute("title"), M.toOne("owner", "Animal")])
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [animal, cat, item]),
            M.version("V2", [EntityDescription(name: "Aardvark", properties: [M.attribute("name")]), animal, cat, item]),
        ])
        let path = try fixture.store(at: "V1", history: true)
        try fixture.edit(path, at: "V1") { context in
            try context.insert("Animal", values: ["name": .text("generic")])
            try context.insert("Cat", values: ["name": .text("tom")])
            try context.insert("Item", values: ["title": .text("bowl")])
            try context.link("Item", key: 1, "owner", to: 2)
        }
        // History rows (CHANGE of each entity) and CloudKit record metadata, as the app left them.
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("""
            INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZTIMESTAMP) VALUES (1, 16002, 1, 700000000);
            INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID) VALUES
              (1, 16001, 1, 0, 1, 1, 1), (2, 16001, 1, 0, 2, 2, 1), (3, 16001, 1, 0, 3, 1, 1);
            INSERT INTO Z_PRIMARYKEY VALUES (16001, 'CHANGE', 0, 3), (16002, 'TRANSACTION', 0, 1), (16003, 'TRANSACTIONSTRING', 0, 0);
            CREATE TABLE ANSCKRECORDMETADATA (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZENTITYID INTEGER, ZENTITYPK INTEGER, ZCKRECORDNAME VARCHAR);
            CREATE UNIQUE INDEX Z_ANSCKRECORDMETADATA_UNIQUE_ENTITYID_ENTITYPK ON ANSCKRECORDMETADATA (ZENTITYID, ZENTITYPK);
            INSERT INTO ANSCKRECORDMETADATA VALUES (1, 1, 1, 2, 2, 'cat-record'), (2, 1, 1, 3, 1, 'item-record');
            """)
        let report = fixture.migrate(path)
        let output = try output(report)
        try fixture.expectExactLayout(output, version: "V2", history: true, carrying: ["ANSCKRECORDMETADATA"])
        let migrated = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try migrated.rows("SELECT Z_PK, Z_ENT FROM ZANIMAL ORDER BY Z_PK").map { $0.compactMap(\.int64) } == [[1, 2], [2, 3]])
        #expect(try migrated.rows("SELECT ZOWNER, Z2_OWNER FROM ZITEM").map { $0.compactMap(\.int64) } == [[2, 3]])
        #expect(try migrated.rows("SELECT ZENTITY, ZENTITYPK FROM ACHANGE ORDER BY Z_PK").map { $0.compactMap(\.int64) } == [[2, 1], [3, 2], [4, 1]])
        #expect(try migrated.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 16001")?.int64 == 3)
        #expect(try migrated.rows("SELECT ZENTITYID, ZCKRECORDNAME FROM ANSCKRECORDMETADATA ORDER BY Z_PK").map { row in
            "\(row[0].int64 ?? 0) \(row[1].string ?? "")"
        } == ["3 cat-record", "4 item-record"])
        #expect(report.result?.carriedTables == ["ANSCKRECORDMETADATA"])
        #expect(try migrated.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'Z_ANSCKRECORDMETADATA_UNIQUE_ENTITYID_ENTITYPK'")?.int64 == 1)
    }
}
