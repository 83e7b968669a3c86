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

@Suite struct DefaultValueRenderingTests {
    /// Renders one archived default value through a hand-built archive.
    private func render(_ type: AttributeType = .decimal, _ make: (inout KeyedArchiveBuilder) -> PropertyListValue) throws -> String? {
        var b = KeyedArchiveBuilder()
        let value = make(&b)
        let holder = b.object("Holder", ["value": value])
        let node = try KeyedArchive(b.archive(root: holder)).rootObject().requiredChild("value")
        return try ModelArchiveDecoder.defaultValueString(node, type: type)
    }

    private func decimal(_ b: inout KeyedArchiveBuilder, mantissa: [UInt16], exponent: Int64, negative: Bool = false) -> PropertyListValue {
        var bytes = [UInt8](repeating: 0, count: 16)
        for (index, word) in mantissa.enumerated() {
            bytes[2 * index] = UInt8(word & 0xFF)
            bytes[2 * index + 1] = UInt8(word >> 8)
        }
        return b.object("NSDecimalNumberPlaceholder", [
            "NS.mantissa": .data(Data(bytes)), "NS.length": .integer(Int64(mantissa.count)), "NS.exponent": .integer(exponent),
            "NS.negative": .boolean(negative), "NS.mantissa.bo": .integer(1), "NS.compact": .boolean(true),
        ])
    }

    @Test func decimals() throws {
        #expect(try render { decimal(&$0, mantissa: [150], exponent: -2) } == "1.5")
        #expect(try render { decimal(&$0, mantissa: [5], exponent: 2) } == "500")
        #expect(try render { decimal(&$0, mantissa: [5], exponent: -3, negative: true) } == "-0.005")
        #expect(try render { decimal(&$0, mantissa: [], exponent: 0, negative: true) } == "NaN")
        // 2^64 = words 0, 0, 0, 0, 1 (least significant first).
        #expect(try render { decimal(&$0, mantissa: [0, 0, 0, 0, 1], exponent: 0) } == "18446744073709551616")
        #expect(try render { decimal(&$0, mantissa: [1], exponent: 300) } == nil)
    }

    @Test func scalarsAndObjects() throws {
        #expect(try render(.boolean) { _ in .integer(1) } == "YES")
        #expect(try render(.boolean) { _ in .boolean(false) } == "NO")
        #expect(try render(.integer32) { _ in .integer(-7) } == "-7")
        #expect(try render(.double) { _ in .real(2.5) } == "2.5")
        #expect(try render(.string) { $0.object("NSMutableString", superclasses: ["NSString", "NSObject"], ["NS.string": .string("hi")]) } == "hi")
        #expect(try render(.date) { $0.object("NSDate", ["NS.time": .real(0)]) } == "2001-01-01T00:00:00Z")
        #expect(try render(.uri) { $0.object("NSURL", ["NS.base": .uid(0), "NS.relative": $0.string("https://example.com")]) }
            == "https://example.com")
        #expect(try render(.binaryData) { _ in .data(Data([1])) } == nil)
        #expect(try render(.transformable) { $0.object("SomeClass", [:]) } == nil)
    }
}
