import Foundation
import Testing
@testable import StoreRescue

/// What a dry run says about links the migration clears, against what the run clears: an
/// entity leaving the destination's hierarchy, an entity removed, a link the store already had
/// dangling. Every place a link is kept: a to-one's column, a join table, a hidden column.
@Suite struct LinksToClearTests {
    typealias M = TestModel

    /// Owner → Animal three ways (`pet` to-one, `pets` many-to-many, `fed` to-many without an
    /// inverse: a hidden column on the animals' rows), and Animal → Owner (`vet`, a to-one on
    /// the animals' rows); Cat and Dog below Animal; `dogHasOwn`
    /// moves Dog out of the hierarchy, `withoutDog` removes it.
    static func zoo(_ name: String, dogHasOwn: Bool = false, withoutDog: Bool = false, ownerNote: Bool = false) -> CatalogVersion {
        var entities = [
            EntityDescription(name: "Animal", properties: [
                M.attribute("name"), M.toMany("keepers", "Owner", inverse: "pets"), M.toOne("vet", "Owner"),
            ]),
            EntityDescription(name: "Cat", superentityName: "Animal"),
            EntityDescription(name: "Owner", properties: [
                M.attribute("name"), M.toOne("pet", "Animal"), M.toMany("pets", "Animal", inverse: "keepers"), M.toMany("fed", "Animal"),
            ] + (ownerNote ? [M.attribute("note")] : [])),
        ]
        if !withoutDog {
            entities.append(dogHasOwn
                ? EntityDescription(name: "Dog", properties: [M.attribute("name"), M.attribute("tag")])
                : EntityDescription(name: "Dog", superentityName: "Animal", properties: [M.attribute("tag")]))
        }
        return M.version(name, entities)
    }

    /// Two owners; Ann's pet is the dog, Bob's the cat; each keeps both; Ann feeds the cat, Bob
    /// the dog; Bob is the vet of both.
    private func store(_ fixture: MigrationFixture) throws -> String {
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let cat = try context.insert("Cat", values: ["name": .text("tom")])
            let dog = try context.insert("Dog", values: ["name": .text("rex")])
            let ann = try context.insert("Owner", values: ["name": .text("Ann")])
            let bob = try context.insert("Owner", values: ["name": .text("Bob")])
            try context.link("Owner", key: ann, "pet", to: dog)
            try context.link("Owner", key: bob, "pet", to: cat)
            for owner in [ann, bob] {
                for animal in [cat, dog] { try context.link("Owner", key: owner, "pets", to: animal) }
            }
            try context.link("Owner", key: ann, "fed", to: cat)
            try context.link("Owner", key: bob, "fed", to: dog)
            for animal in [cat, dog] { try context.link("Animal", key: animal, "vet", to: bob) }
        }
        return path
    }

    private func expectPredictionHolds(_ fixture: MigrationFixture, _ path: String, expected: [String: Int64],
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let dryRun = fixture.migrate(path, output: "dry.sqlite", dryRun: true)
        #expect(dryRun.status == .wouldMigrate, "\(dryRun.refusals.map(\.message)) \(dryRun.error?.message ?? "")", sourceLocation: sourceLocation)
        let predicted = Dictionary(uniqueKeysWithValues: dryRun.linksToClear.map { ($0.name, $0.count) })
        #expect(predicted == expected, sourceLocation: sourceLocation)
        let run = fixture.migrate(path)
        let result = try #require(run.result, "\(run.refusals.map(\.message)) \(run.error?.message ?? "")", sourceLocation: sourceLocation)
        #expect(result.clearedLinks == expected, sourceLocation: sourceLocation)
        #expect(result.verification.danglingLinks == 0, sourceLocation: sourceLocation)
        #expect(run.linksToClear.isEmpty, "a forecast of the dry run only", sourceLocation: sourceLocation)
        let text = dryRun.renderText()
        let line = expected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        #expect(text.contains("Links to clear (") && text.contains(line), "\(text)", sourceLocation: sourceLocation)
    }

    @Test func aDryRunShowsTheLinksAnEntityLeavingTheHierarchyLoses() throws {
        let fixture = try MigrationFixture(versions: [Self.zoo("V1"), Self.zoo("V2", dogHasOwn: true)])
        let path = try store(fixture)
        // The dog is no Animal at V2: Ann's pet, both owners' links to it in `pets` (the join
        // table is Animal.keepers's), Bob's feeding it (held on the dog's row) and its vet.
        try expectPredictionHolds(fixture, path, expected: ["Owner.pet": 1, "Animal.keepers": 2, "Owner.fed": 1, "Animal.vet": 1])
        let output = fixture.directory.path("out.sqlite")
        #expect(try fixture.links(output, at: "V2", "Owner", "pet") == [[2, 1]])
        #expect(try fixture.objects(output, at: "V2", "Dog").count == 1)
    }

    @Test func aDryRunShowsTheLinksARemovedEntityTakesAlong() throws {
        let fixture = try MigrationFixture(versions: [Self.zoo("V1"), Self.zoo("V2", withoutDog: true)])
        let path = try store(fixture)
        try expectPredictionHolds(fixture, path, expected: ["Owner.pet": 1, "Animal.keepers": 2, "Owner.fed": 1, "Animal.vet": 1])
        let dryRun = fixture.migrate(path, output: "dry2.sqlite", dryRun: true)
        #expect(dryRun.hops.first?.removedEntities.map { "\($0.name) \($0.count)" } == ["Dog 1"])
    }

    /// `vet` moves down from Animal to Cat: the dog's vet link has no place left.
    @Test func aRelationshipMovedToASubentityLosesTheOtherSubentitiesLinks() throws {
        let v2 = M.version("V2", [
            EntityDescription(name: "Animal", properties: [M.attribute("name"), M.toMany("keepers", "Owner", inverse: "pets")]),
            EntityDescription(name: "Cat", superentityName: "Animal", properties: [M.toOne("vet", "Owner")]),
            EntityDescription(name: "Dog", superentityName: "Animal", properties: [M.attribute("tag")]),
            EntityDescription(name: "Owner", properties: [
                M.attribute("name"), M.toOne("pet", "Animal"), M.toMany("pets", "Animal", inverse: "keepers"), M.toMany("fed", "Animal"),
            ]),
        ])
        let fixture = try MigrationFixture(versions: [Self.zoo("V1"), v2])
        let path = try store(fixture)
        try expectPredictionHolds(fixture, path, expected: ["Cat.vet": 1])
    }

    /// A required to-one whose object leaves its kind: the run stops with 134110 (exit 3),
    /// naming the cleared links, and the dry run warns (a review's run ended in exit 70, "report
    /// a bug"). An owner whose pet stays an Animal keeps it.
    @Test func aRequiredLinkClearedStopsTheRunAsARefusal() throws {
        func zoo(_ name: String, dogHasOwn: Bool) -> CatalogVersion {
            M.version(name, [
                EntityDescription(name: "Animal", properties: [M.attribute("name")]),
                EntityDescription(name: "Cat", superentityName: "Animal"),
                EntityDescription(name: "Owner", properties: [M.attribute("name"), M.toOne("pet", "Animal", optional: false)]),
                dogHasOwn ? EntityDescription(name: "Dog", properties: [M.attribute("name")]) : EntityDescription(name: "Dog", superentityName: "Animal"),
            ])
        }
        let fixture = try MigrationFixture(versions: [zoo("V1", dogHasOwn: false), zoo("V2", dogHasOwn: true)])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let cat = try context.insert("Cat", values: ["name": .text("tom")])
            let dog = try context.insert("Dog", values: ["name": .text("rex")])
            for (name, pet) in [("Ann", dog), ("Bob", cat)] {
                let owner = try context.insert("Owner", values: ["name": .text(name)])
                try context.link("Owner", key: owner, "pet", to: pet)
            }
        }
        let dryRun = fixture.migrate(path, output: "dry.sqlite", dryRun: true)
        #expect(dryRun.linksToClear.map { "\($0.name) \($0.count)" } == ["Owner.pet 1"])
        #expect(dryRun.notes.contains { $0.hasPrefix("Owner.pet is required at V2, and 1 of its links are cleared") }, "\(dryRun.notes)")
        let run = fixture.migrate(path)
        #expect(run.exitStatus == .refused && run.result == nil, "\(run.status) \(run.error?.message ?? "")")
        #expect(run.error?.message.contains("links had to be cleared (Owner.pet 1)") == true, "\(run.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    @Test func nothingToClearIsShownAsNothing() throws {
        let fixture = try MigrationFixture(versions: [Self.zoo("V1"), Self.zoo("V2", ownerNote: true)])
        let path = try store(fixture)
        let dryRun = fixture.migrate(path, output: "dry.sqlite", dryRun: true)
        #expect(dryRun.status == .wouldMigrate && dryRun.linksToClear.isEmpty)
        #expect(!dryRun.renderText().contains("Links to clear"))
        #expect(fixture.migrate(path).result?.clearedLinks == [:])
    }
}
