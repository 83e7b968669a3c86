import Foundation
import Testing
@testable import StoreRescue

/// What a uniqueness check compares, and when it may be left out: a constraint over a to-one
/// relationship compares the links as the writer leaves them (review case c3: never compared,
/// the run stopped on "UNIQUE constraint failed: ZDOG.ZOWNER"), and a constraint is trusted to
/// hold only where the store itself has the unique index, not where its version's layout says
/// it should (review cases c7 and c9: a store that lost its index got the check left out).
@Suite struct UniquenessCheckScopeTests {
    typealias M = TestModel

    // MARK: A constraint over a to-one relationship

    /// V1: Dog(name, owner → Owner), Owner(name, pets); V2 makes Dog.owner unique. Dog `i`
    /// belongs to owner `owners[i]` (1: ann, 2: bob, nil: none).
    private func dogs(owners: [Int?]) throws -> (MigrationFixture, String) {
        let entities = { (constraints: [[String]]) in [
            EntityDescription(name: "Dog", properties: [M.attribute("name"), M.toOne("owner", "Owner", inverse: "pets")], uniquenessConstraints: constraints),
            EntityDescription(name: "Owner", properties: [M.attribute("name"), M.toMany("pets", "Dog", inverse: "owner")]),
        ] }
        let fixture = try MigrationFixture(versions: [M.version("V1", entities([])), M.version("V2", entities([["owner"]]))])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let people = [try context.insert("Owner", values: ["name": .text("ann")]), try context.insert("Owner", values: ["name": .text("bob")])]
            for (index, owner) in owners.enumerated() {
                let dog = try context.insert("Dog", values: ["name": .text("dog \(index)")])
                if let owner { try context.link("Dog", key: dog, "owner", to: people[owner - 1]) }
            }
        }
        return (fixture, path)
    }

    @Test func dogsThatShareAnOwnerAreRefusedByTheDryRun() throws {
        let (fixture, path) = try dogs(owners: [1, 1, 2, nil, nil])
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .refused && dryRun.error == nil, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        let refusal = try #require(dryRun.refusals.first)
        #expect(dryRun.refusals.count == 1 && refusal.code == .uniquenessViolated && refusal.rowCount == 1)
        #expect(refusal.message == "V2 makes Dog.owner unique, and 1 values are shared by several Dog objects", "\(refusal.message)")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.error == nil && run.refusals == dryRun.refusals, "\(run.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    @Test func dogsWithAnOwnerEachMigrate() throws {
        let (fixture, path) = try dogs(owners: [1, 2, nil, nil])
        #expect(fixture.migrate(path, dryRun: true).status == .wouldMigrate)
        let run = fixture.migrate(path)
        let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
        #expect(try fixture.links(output, at: "V2", "Dog", "owner") == [[1, 1], [2, 2]])
    }

    // MARK: A store that lacks the unique index its version declares

    /// V1 and V2: Item(code) unique (V2 adds `q`); the store lost `Z_Item_UNIQUE_code` (drift
    /// `match` calls blocking) and holds `codes`. A custom stage's willMigrate step that changes
    /// nothing when `willMigrate`.
    private func unindexed(codes: [String], willMigrate: Bool) throws -> (MigrationFixture, String) {
        let item = { (extra: [PropertyDescription]) in
            EntityDescription(name: "Item", properties: [M.attribute("code")] + extra, uniquenessConstraints: [["code"]])
        }
        let custom = CustomStageDefinition(willMigrate: [
            .init(entity: "Item", action: .update([.init(property: "code", expression: "code", jsonPath: "stages[0].willMigrate[0].set.code")]),
                  condition: "code = 'zzz'", jsonPath: "stages[0].willMigrate[0]"),
        ])
        let fixture = try MigrationFixture(
            versions: [M.version("V1", [item([])]), M.version("V2", [item([M.attribute("q", .integer64)])], identifiers: ["2"])],
            stages: willMigrate ? [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")] : [])
        let path = try fixture.store(at: "V1")
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("DROP INDEX Z_Item_UNIQUE_code")
        try fixture.edit(path, at: "V1") { context in
            for code in codes { try context.insert("Item", values: ["code": .text(code)]) }
        }
        return (fixture, path)
    }

    @Test func aKeptConstraintTheStoreDoesNotEnforceIsChecked() throws {
        let (fixture, path) = try unindexed(codes: ["a", "a", "b"], willMigrate: false)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .refused && dryRun.error == nil, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        let refusal = try #require(dryRun.refusals.first)
        #expect(dryRun.refusals.count == 1 && refusal.code == .uniquenessViolated && refusal.rowCount == 1)
        #expect(refusal.message == "V2 keeps Item.code unique and the store lacks V1's unique index Z_Item_UNIQUE_code on ZITEM (ZCODE), "
            + "so nothing kept the values apart: then 1 values are shared by several Item objects", "\(refusal.message)")
        #expect(refusal.remedy.contains("make the values distinct in the store") && !refusal.remedy.contains("willMigrate step that removes"), "\(refusal.remedy)")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.error == nil && run.refusals == dryRun.refusals, "\(run.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// The run writes the store's version out before the willMigrate steps, with its unique
    /// index: the store's shared values would stop it there (c9: "breaks a constraint of V1").
    @Test func sharedValuesTheStoresVersionForbidsAreRefusedBeforeItIsWrittenOut() throws {
        let (fixture, path) = try unindexed(codes: ["a", "a", "b"], willMigrate: true)
        let dryRun = fixture.migrate(path, dryRun: true)
        #expect(dryRun.exitStatus == .refused && dryRun.error == nil, "\(dryRun.status) \(dryRun.error?.message ?? "")")
        let refusal = try #require(dryRun.refusals.first { $0.hop == "V1 → V2" && $0.message.contains("V1 makes Item.code unique") }, "\(dryRun.refusals.map(\.message))")
        #expect(refusal.code == .uniquenessViolated && refusal.rowCount == 1)
        #expect(refusal.message == "V1 makes Item.code unique, and the store lacks its unique index Z_Item_UNIQUE_code on ZITEM (ZCODE): "
            + "1 values are shared by several Item objects, and the run writes V1, with that index, before the willMigrate steps of stages[0]",
            "\(refusal.message)")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.error == nil && run.refusals == dryRun.refusals, "\(run.error?.message ?? "")")
    }

    @Test(arguments: [false, true])
    func distinctValuesMigrateWithoutTheIndex(_ willMigrate: Bool) throws {
        let (fixture, path) = try unindexed(codes: ["a", "b"], willMigrate: willMigrate)
        #expect(fixture.migrate(path, dryRun: true).status == .wouldMigrate)
        let run = fixture.migrate(path)
        let output = try #require(run.result?.path, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")")
        #expect(try fixture.objects(output, at: "V2", "Item").compactMap { $0["code"]?.string } == ["a", "b"])
    }
}
