import Foundation
import Testing
@testable import StoreRescue

@Suite struct ModelArchiveDecoderTests {
    private func decodingError(_ archive: Data) -> ModelDecodingError? {
        #expect(throws: ModelDecodingError.self) { try ModelArchiveDecoder.decodeModel(archive: archive) }
    }

    @Test func mapsASyntheticModel() throws {
        let model = try ModelArchiveDecoder.decodeModel(archive: SyntheticModelArchive().data)
        #expect(model.entities.map(\.name) == ["Employee", "Person"])
        #expect(model.versionIdentifiers == ["a", "b"])
        let person = try #require(model.entity(named: "Person"))
        #expect(person.isAbstract && person.className == "PersonMO" && person.superentityName == nil)
        #expect(person.properties == [
            .attribute(AttributeDescription(name: "name", type: .string, isOptional: false, isIndexed: true)),
            .attribute(AttributeDescription(name: "age", type: .integer16, defaultValue: "0", allowsExternalBinaryDataStorage: true)),
            .relationship(RelationshipDescription(
                name: "friends", destinationEntityName: "Person", maxCount: 0, isToMany: true, isOrdered: true, deleteRule: .nullify)),
        ])
        let employee = try #require(model.entity(named: "Employee"))
        #expect(employee.superentityName == "Person")
        #expect(employee.properties == [.attribute(AttributeDescription(name: "badge", type: .integer64, isOptional: false, versionHashModifier: "v2"))])
        #expect(employee.uniquenessConstraints == [["badge"], ["badge", "name"]])
        #expect(person.fetchIndexes == [
            FetchIndexDescription(name: "byNameAge", elements: [.init(propertyName: "name"), .init(propertyName: "age", isAscending: false)]),
        ])
        #expect(model.allProperties(of: employee).map(\.name) == ["name", "age", "friends", "badge"])
    }

    @Test func unreadableBytes() {
        let error = decodingError(Data("not a plist".utf8))
        guard case .unreadablePropertyList(.notAPropertyList)? = error else {
            Issue.record("expected unreadablePropertyList, got \(String(describing: error))")
            return
        }
        #expect(error?.description.hasPrefix("cannot read the model archive: not a property list:") == true)
        #expect(error?.exitStatus == .notAStore)
    }

    @Test func modelCacheThatIsNotDeflate() {
        let error = #expect(throws: ModelDecodingError.self) { try ModelArchiveDecoder.decodeModelCache(compressed: Data([0xFF, 0xFF])) }
        #expect(error == .unreadableModelCache(.invalidData(reason: "invalid block type", consumedBytes: 1)))
        #expect(error?.description == "cannot inflate the model cache: compressed data is damaged after 1 bytes: invalid block type")
    }

    @Test func modelCacheOverTheInflateLimit() throws {
        let compressed = try RawDeflate.deflate(SyntheticModelArchive().data)
        let error = #expect(throws: ModelDecodingError.self) {
            try ModelArchiveDecoder.decodeModelCache(compressed: compressed, maximumInflatedBytes: 100)
        }
        #expect(error == .unreadableModelCache(.outputLimitExceeded(limit: 100)))
        #expect(try ModelArchiveDecoder.decodeModelCache(compressed: compressed).entities.count == 2)
    }

    @Test func rootThatIsNotAModel() {
        var b = KeyedArchiveBuilder()
        let root = b.array([])
        let error = decodingError(b.data(root: root))
        #expect(error == .notAModel(className: "NSArray"))
        #expect(error?.description == "the archive holds an object of class NSArray, not a managed object model (NSManagedObjectModel)")
    }

    @Test func unknownAttributeType() {
        var synthetic = SyntheticModelArchive()
        synthetic.setField("NSAttributeType", of: synthetic.nameAttribute, to: .integer(4242))
        let error = decodingError(synthetic.data)
        #expect(error == .unknownAttributeType(code: 4242, path: "$top.root.NSEntities[\"Person\"].NSProperties[\"name\"].NSAttributeType"))
    }

    @Test func flagsThatContradictEachOther() {
        var synthetic = SyntheticModelArchive()
        synthetic.setField("NSIsOptional", of: synthetic.nameAttribute, to: .boolean(true))
        let error = decodingError(synthetic.data)
        #expect(error?.description
            == "invalid model at $top.root.NSEntities[\"Person\"].NSProperties[\"name\"]: NSIsOptional is YES but the _P flags (0xf1) say NO")
    }

    @Test func missingNameAndBadCounts() {
        var synthetic = SyntheticModelArchive()
        synthetic.setField("NSPropertyName", of: synthetic.nameAttribute, to: .uid(0))
        // Employee comes first and reaches `name` through its uniqueness constraint's proxy.
        #expect(decodingError(synthetic.data)
            == .malformedArchive(.missingValue(path: "$top.root.NSEntities[\"Employee\"].NSUniqueTuples[1][1].NSUnderlyingProperty.NSPropertyName")))

        synthetic = SyntheticModelArchive()
        synthetic.setField("NSMaxCount", of: synthetic.friends, to: .integer(-1))
        #expect(decodingError(synthetic.data)?.description
            == "invalid model at $top.root.NSEntities[\"Person\"].NSProperties[\"friends\"].NSMaxCount: NSMaxCount -1 is not between 0 and 4294967295")

        synthetic = SyntheticModelArchive()
        synthetic.setField("NSDeleteRule", of: synthetic.friends, to: .integer(9))
        #expect(decodingError(synthetic.data)?.description
            == "invalid model at $top.root.NSEntities[\"Person\"].NSProperties[\"friends\"].NSDeleteRule: delete rule 9 is not 0 to 3")
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples"))
    func randomlyDamagedRealArchivesNeverCrash() throws {
        let archive = try SampleModels.modelCacheArchive("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        guard case .dictionary(var outer) = archive, case .array(let objects) = outer["$objects"] else {
            Issue.record("unexpected archive shape")
            return
        }
        var generator = SeededGenerator(seed: 99)
        var outcomes = (decoded: 0, refused: 0)
        for _ in 0..<1_000 {
            var damaged = objects
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<damaged.count, using: &generator)
                let replacements: [PropertyListValue] = [
                    .uid(UInt64.random(in: 0...UInt64(objects.count + 5), using: &generator)), .integer(-1), .string("?"),
                    .array([.uid(UInt64(index))]), .dictionary([:]), damaged[Int.random(in: 0..<damaged.count, using: &generator)],
                ]
                damaged[index] = replacements[Int.random(in: 0..<replacements.count, using: &generator)]
            }
            outer["$objects"] = .array(damaged)
            do {
                _ = try ModelArchiveDecoder.decodeModel(archive: BinaryPropertyListEncoder.encode(.dictionary(outer)))
                outcomes.decoded += 1
            } catch is ModelDecodingError {
                outcomes.refused += 1
            }
        }
        #expect(outcomes.refused > 300)
        #expect(outcomes.decoded + outcomes.refused == 1_000)
    }
}

extension SyntheticModelArchive {
    /// Sets (or, with `.uid(0)`, nulls) one field of the object `uid` refers to.
    mutating func setField(_ key: String, of uid: PropertyListValue, to value: PropertyListValue) {
        guard case .uid(let index) = uid, case .dictionary(var fields) = builder.objects[Int(index)] else { return }
        fields[key] = value
        builder.replace(uid, with: .dictionary(fields))
    }
}
