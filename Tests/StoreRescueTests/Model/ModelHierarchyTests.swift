import Foundation
import Testing
@testable import StoreRescue

/// Inheritance worked out once (`ModelHierarchy`): depths, roots, loops, what each entity sees,
/// and the bounds every model source refuses beyond.
@Suite struct ModelHierarchyTests {
    static func attribute(_ name: String) -> PropertyDescription { .attribute(AttributeDescription(name: name, type: .string)) }

    /// `depth` entities, each the parent of the next, each declaring `properties` attributes.
    static func chain(depth: Int, properties: Int = 1) -> ManagedObjectModel {
        ManagedObjectModel(entities: (0..<depth).map { level in
            EntityDescription(name: "E\(level)", superentityName: level == 0 ? nil : "E\(level - 1)",
                              properties: (0..<properties).map { attribute("a\(level)_\($0)") })
        })
    }

    @Test func depthsRootsAndParentsFirstOrder() {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Leaf", superentityName: "Middle"), EntityDescription(name: "Root"),
            EntityDescription(name: "Middle", superentityName: "Root"), EntityDescription(name: "Orphan", superentityName: "Missing"),
        ])
        let hierarchy = ModelHierarchy(model)
        #expect(hierarchy.depth == [2, 0, 1, 0])
        #expect(hierarchy.parent == [2, nil, 1, nil])
        #expect(hierarchy.root(of: 0) == 1)
        #expect(hierarchy.chain(of: 0) == [0, 2, 1])
        #expect(hierarchy.parentsFirst == [1, 3, 2, 0])
        #expect(hierarchy.isInCycle == [false, false, false, false])
        #expect(hierarchy.boundsProblem(in: model) == nil)
    }

    @Test func loopsAreMarkedAndTheirChainsEndBeforeRepeating() {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "A", superentityName: "B"), EntityDescription(name: "B", superentityName: "C"),
            EntityDescription(name: "C", superentityName: "A"), EntityDescription(name: "Below", superentityName: "A"),
            EntityDescription(name: "Self", superentityName: "Self"), EntityDescription(name: "Fine"),
        ])
        let hierarchy = ModelHierarchy(model)
        #expect(hierarchy.isInCycle == [true, true, true, true, true, false])
        #expect(hierarchy.depth == [2, 2, 2, 3, 0, 0])
        #expect(hierarchy.chain(of: 3) == [3, 0, 1, 2])
        #expect(hierarchy.parentsFirst == [5])
        for (index, entity) in model.entities.enumerated() {
            #expect(hierarchy.chain(of: index).map { model.entities[$0].name } == model.ancestry(of: entity).map(\.name))
        }
    }

    @Test func visiblePropertiesAreTheNearestDeclarations() {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Root", properties: [Self.attribute("a"), Self.attribute("b")]),
            EntityDescription(name: "Sub", superentityName: "Root", properties: [Self.attribute("b"), Self.attribute("c")]),
        ])
        let visible = ModelHierarchy(model).visibleProperties(in: model)
        #expect(visible[1]["a"] == .init(entity: 0, position: 0))
        #expect(visible[1]["b"] == .init(entity: 1, position: 0), "the subentity's redeclaration wins")
        #expect(visible[1]["c"] == .init(entity: 1, position: 1))
        #expect(visible[0].keys.sorted() == ["a", "b"])
    }

    @Test func boundsOnDepthAndEntityCount() {
        let deepest = Self.chain(depth: ModelHierarchy.maximumDepth + 1)
        #expect(ModelHierarchy(deepest).boundsProblem(in: deepest) == nil, "a chain exactly at the bound is read")
        let tooDeep = Self.chain(depth: 2_000)
        let problem = ModelHierarchy(tooDeep).boundsProblem(in: tooDeep)
        #expect(problem?.entity == 1_999)
        #expect(problem?.reason == "inherits through 1999 levels of superentities; at most 100 are read")
        let wide = ManagedObjectModel(entities: (0...ModelHierarchy.maximumEntities).map { EntityDescription(name: "E\($0)") })
        #expect(ModelHierarchy(wide).boundsProblem(in: wide)?.reason
                == "the model has 16001 entities; at most 16000 are read (Core Data numbers entities below 16001)")
    }

    /// The memoised hashes (parents first) equal the chain-by-chain definition, on deep and
    /// branching models with redeclarations, transient properties and loops.
    @Test func memoisedHashesEqualTheChainDefinition() {
        var generator = SplitMix64(seed: 10)
        var entities: [EntityDescription] = []
        for index in 0..<150 {
            let parent = index == 0 || generator.next() % 5 == 0 ? nil : "E\(Int(generator.next() % UInt64(index)))"
            let properties: [PropertyDescription] = (0..<Int(generator.next() % 4)).map { k in
                let name = "p\(generator.next() % 12)_\(k)"
                return .attribute(AttributeDescription(name: name, type: .integer32, isTransient: generator.next() % 7 == 0))
            }
            entities.append(EntityDescription(name: "E\(index)", superentityName: parent, properties: properties))
        }
        entities += [EntityDescription(name: "X", superentityName: "Y", properties: [Self.attribute("x")]),
                     EntityDescription(name: "Y", superentityName: "X", properties: [Self.attribute("y")])]
        let models = [ManagedObjectModel(entities: entities), Self.chain(depth: 40, properties: 2)]
        for model in models {
            let hashes = EntityVersionHasher.versionHashes(for: model)
            for entity in model.entities {
                #expect(hashes[entity.name] == EntityVersionHasher.hash(of: model.ancestry(of: entity)), "\(entity.name)")
            }
        }
    }
}
