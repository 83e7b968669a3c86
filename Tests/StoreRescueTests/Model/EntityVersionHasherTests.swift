import Foundation
import Testing
@testable import StoreRescue

private extension Data {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

/// Known answers computed independently (Python hashlib) from the algorithm in format notes §4.
@Suite struct EntityVersionHasherTests {
    static let simple = ManagedObjectModel(entities: [
        EntityDescription(name: "E", properties: [.attribute(AttributeDescription(name: "a", type: .string))]),
    ])

    static let inheriting = ManagedObjectModel(entities: [
        EntityDescription(
            name: "C", superentityName: "P",
            properties: [.attribute(AttributeDescription(name: "c", type: .integer64, isOptional: false))]),
        EntityDescription(
            name: "P", isAbstract: true, versionHashModifier: "m",
            properties: [
                .relationship(RelationshipDescription(
                    name: "r", destinationEntityName: "P", inverseName: "r", maxCount: 0, isToMany: true, isOrdered: true)),
                .attribute(AttributeDescription(
                    name: "b", type: .binaryData, isOptional: false, isReadOnly: true, versionHashModifier: "hm",
                    allowsExternalBinaryDataStorage: true, preservesValueInHistoryOnDeletion: true)),
                .attribute(AttributeDescription(name: "t", type: .string, isTransient: true)),
            ],
            uniquenessConstraints: [["b", "r"], ["b"]]),
    ])

    @Test func singleAttributeKnownAnswer() {
        let hashes = EntityVersionHasher.versionHashes(for: Self.simple)
        #expect(hashes["E"]?.hex == "bf2ea523eeffd064b7904b41dee37d2fa3d59fd43354284a281938f685b2efe1")
        #expect(EntityVersionHasher.hashesDigest(hashes)
            == "icbWRHm35XSSdn+RlANESYNGARurQh3Ur8sisES6R/p96UUCDFZscIflm74WgekZABMIXTlkuKJD3I97RZ+INw==")
        #expect(EntityVersionHasher.versionChecksum(hashes) == "2/03n6xjVc7BTHzJDH+oYaiQ/Evj3fZ5cfThqWwzbwg=")
    }

    @Test func inheritanceModifiersConstraintsAndFlagsKnownAnswer() {
        let hashes = EntityVersionHasher.versionHashes(for: Self.inheriting)
        #expect(hashes["P"]?.hex == "99ff48916ddf5832d4255f991b9e1f8b36b8d64d8d3e516e35fdab7ba8ed0844")
        #expect(hashes["C"]?.hex == "957903b9ef288467a0b1d16f2605517e29b588df9c8166df7e3c2bbdb6c0ac65")
    }

    @Test func emptyModel() {
        let hashes = EntityVersionHasher.versionHashes(for: ManagedObjectModel(entities: []))
        #expect(hashes.isEmpty)
        #expect(EntityVersionHasher.hashesDigest(hashes)
            == "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==")
        #expect(EntityVersionHasher.versionChecksum(hashes) == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }

    @Test func namesAreOrderedByCodePointNotByStringComparison() {
        // "e" + combining acute is canonically "é", which String's < puts after "f"; its UTF-8
        // bytes (65 CC 81) come before "f" (66).
        let decomposed = "e\u{301}"
        #expect(!(decomposed < "f"))
        #expect(EntityVersionHasher.sortedByCodePoint([decomposed: 1, "f": 2, "B": 3, "a": 4]).map(\.key) == ["B", "a", decomposed, "f"])
    }

    @Test func thingsOutsideTheHashDoNotChangeIt() {
        var changed = Self.inheriting
        changed.versionIdentifiers = ["v9"]
        changed.entities[1].className = "PMO"
        changed.entities[1].renamingIdentifier = "Old"
        changed.entities[1].fetchIndexes = [FetchIndexDescription(name: "byB", elements: [.init(propertyName: "b")])]
        changed.entities[1].properties.reverse()
        changed.entities[1].properties.append(.relationship(RelationshipDescription(name: "x", destinationEntityName: "C", isTransient: true)))
        guard case .relationship(var relationship) = changed.entities[1].properties[2] else {
            Issue.record("unexpected property order")
            return
        }
        relationship.deleteRule = .deny
        relationship.renamingIdentifier = "old"
        relationship.isIndexed = true
        changed.entities[1].properties[2] = .relationship(relationship)
        #expect(EntityVersionHasher.versionHashes(for: changed) == EntityVersionHasher.versionHashes(for: Self.inheriting))
    }

    @Test func parentChangesReachSubentities() {
        var changed = Self.inheriting
        changed.entities[1].versionHashModifier = "n"
        let before = EntityVersionHasher.versionHashes(for: Self.inheriting)
        let after = EntityVersionHasher.versionHashes(for: changed)
        #expect(before["P"] != after["P"])
        #expect(before["C"] != after["C"])
    }

    @Test func malformedModelsStillTerminate() {
        let cycle = ManagedObjectModel(entities: [
            EntityDescription(name: "A", superentityName: "B"),
            EntityDescription(name: "B", superentityName: "A"),
            EntityDescription(name: "S", superentityName: "S"),
            EntityDescription(name: "O", superentityName: "Missing"),
        ])
        let hashes = EntityVersionHasher.versionHashes(for: cycle)
        #expect(hashes.count == 4)
        #expect(hashes.values.allSatisfy { $0.count == 32 })
        #expect(hashes == EntityVersionHasher.versionHashes(for: cycle))
    }

    /// The cache across models is keyed by every field: a property that differs in any one of
    /// them gets its own hash, equal to the one computed without the cache.
    @Test func propertyHashCacheNeverMixesUpProperties() {
        let base = AttributeDescription(name: "a", type: .string)
        var variants: [PropertyDescription] = [.attribute(base)]
        var optional = base; optional.isOptional = false; variants.append(.attribute(optional))
        var typed = base; typed.type = .integer64; variants.append(.attribute(typed))
        var modified = base; modified.versionHashModifier = "m"; variants.append(.attribute(modified))
        var external = base; external.allowsExternalBinaryDataStorage = true; variants.append(.attribute(external))
        variants.append(.relationship(RelationshipDescription(name: "a", destinationEntityName: "E")))
        variants.append(.relationship(RelationshipDescription(name: "a", destinationEntityName: "E", maxCount: 0, isToMany: true)))
        for _ in 0..<2 {
            let cached = variants.map { PropertyHashCache.shared.hash(of: $0) }
            #expect(cached == variants.map { EntityVersionHasher.hash(of: $0) })
            #expect(Set(cached).count == variants.count)
        }
    }
}
