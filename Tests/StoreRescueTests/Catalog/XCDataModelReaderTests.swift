import Foundation
import Testing
@testable import StoreRescue

/// Version order, identifiers, every attribute and relationship option, and the compiler rules.
struct XCDataModelReaderTests {
    @Test func naturalOrder() {
        let names = ["Model 10", "Model 2", "Model", "Model 3", "Model 02", "Other", "MWK2", "MWK"]
        #expect(names.sorted(by: NaturalOrder.areInIncreasingOrder) == ["MWK", "MWK2", "Model", "Model 02", "Model 2", "Model 3", "Model 10", "Other"])
    }

    @Test func versionsInNaturalOrderAndNoCurrentWithoutXCCurrentVersion() throws {
        let directory = try TemporaryDirectory()
        let versions = Dictionary(uniqueKeysWithValues: ["App", "App 2", "App 10", "App 9"].enumerated().map { index, name in
            (name, CatalogTestSupport.contents("<entity name=\"E\"/>", identifier: "\(index)"))
        })
        let bundle = try CatalogTestSupport.writeBundle("App", versions: versions, in: directory)
        let catalog = try XCDataModelReader.readBundle(at: bundle)
        #expect(catalog.versions.map(\.name) == ["App", "App 2", "App 9", "App 10"])
        #expect(catalog.versions.map(\.versionIdentifiers) == [["0"], ["1"], ["3"], ["2"]])
        #expect(catalog.currentVersionName == nil)
        #expect(catalog.latest?.name == "App 10")
        #expect(catalog.name == "App" && catalog.sourcePath == bundle)
    }

    @Test func everyOptionIsRead() throws {
        let model = try XCDataModelErrorTests.read("""
            <entity name="Base" isAbstract="YES" versionHashModifier="v2" elementID="OldBase" representedClassName="BaseMO">
                <attribute name="blob" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES" preserveAfterDeletion="YES"/>
                <attribute name="count" attributeType="Integer 64" defaultValueString="7" versionHashModifier="m" elementID="total"/>
                <attribute name="scratch" optional="YES" transient="YES" attributeType="Undefined"/>
                <attribute name="payload" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData"/>
            </entity>
            <entity name="Child" parentEntity="Base">
                <relationship name="owner" minCount="1" maxCount="1" deletionRule="Deny" destinationEntity="Owner" inverseName="children"/>
            </entity>
            <entity name="Owner">
                <relationship name="children" optional="YES" toMany="YES" ordered="YES" minCount="2" maxCount="5" deletionRule="Cascade" destinationEntity="Child" inverseName="owner"/>
                <relationship name="helpers" optional="YES" toMany="YES" deletionRule="No Action" destinationEntity="Base"/>
            </entity>
            """)
        #expect(model.entities.map(\.name) == ["Base", "Child", "Owner"])
        let base = try #require(model.entity(named: "Base"))
        #expect(base.isAbstract && base.versionHashModifier == "v2" && base.renamingIdentifier == "OldBase" && base.className == "BaseMO")
        #expect(base.attributes[0] == AttributeDescription(
            name: "blob", type: .binaryData, isOptional: true, renamingIdentifier: "blob", allowsExternalBinaryDataStorage: true,
            preservesValueInHistoryOnDeletion: true))
        #expect(base.attributes[1] == AttributeDescription(
            name: "count", type: .integer64, isOptional: false, defaultValue: "7", versionHashModifier: "m", renamingIdentifier: "total"))
        #expect(base.attributes[2].type == .undefined && base.attributes[2].isTransient)
        #expect(base.attributes[3].valueTransformerName == "NSSecureUnarchiveFromData")
        let owner = try #require(model.entity(named: "Child")?.relationships.first)
        #expect(owner == RelationshipDescription(
            name: "owner", destinationEntityName: "Owner", inverseName: "children", minCount: 1, maxCount: 1, isOptional: false,
            deleteRule: .deny, renamingIdentifier: "owner"))
        let children = try #require(model.entity(named: "Owner")?.relationships.first)
        #expect(children.isToMany && children.isOrdered && children.minCount == 2 && children.maxCount == 5 && children.deleteRule == .cascade)
        let helpers = try #require(model.entity(named: "Owner")?.relationships.last)
        #expect(helpers.maxCount == 0 && helpers.minCount == 0 && helpers.deleteRule == .noAction && helpers.inverseName == nil)
    }

    @Test func compilerRulesForFetchIndexes() throws {
        let model = try XCDataModelErrorTests.read("""
            <entity name="Zeta">
                <attribute name="a" attributeType="String"/>
                <attribute name="b" attributeType="String"/>
                <attribute name="c" attributeType="String" indexed="YES"/>
                <attribute name="d" attributeType="String"/>
                <fetchIndex name="byA"><fetchIndexElement property="a" type="Binary" order="descending"/></fetchIndex>
                <fetchIndex name="byAB"><fetchIndexElement property="a"/><fetchIndexElement property="b"/></fetchIndex>
                <fetchIndex name="d"><fetchIndexElement property="d"/></fetchIndex>
            </entity>
            <entity name="Alpha"/>
            """)
        #expect(model.entities.map(\.name) == ["Alpha", "Zeta"])
        let zeta = try #require(model.entity(named: "Zeta"))
        // a: sole element of byA → indexed, derived index "a"; b: only in a compound index;
        // c: indexed="YES" → derived index "c"; d: already has an index named "d".
        #expect(zeta.attributes.map(\.isIndexed) == [true, false, true, true])
        #expect(zeta.fetchIndexes.map(\.name) == ["a", "c", "byA", "byAB", "d"])
        #expect(zeta.fetchIndexes[0].elements == [.init(propertyName: "a", isAscending: true)])
        #expect(zeta.fetchIndexes[2].elements == [.init(propertyName: "a", isAscending: false)])
        let badIndex = XCDataModelErrorTests.message {
            try XCDataModelErrorTests.read("<entity name=\"A\">\n<fetchIndex name=\"byX\"><fetchIndexElement property=\"x\"/></fetchIndex>\n</entity>")
        }
        #expect(badIndex == "M.xcdatamodel/contents:4: entity \"A\" fetchIndex \"byX\": names \"x\", which is not a property of \"A\"")
        let expression = XCDataModelErrorTests.message {
            try XCDataModelErrorTests.read("<entity name=\"A\">\n<fetchIndex name=\"e\"><fetchIndexElement expression=\"x\"/></fetchIndex>\n</entity>")
        }
        #expect(expression.contains("entity \"A\" fetchIndex \"e\": an element indexes an expression"))
    }

    @Test func compoundIndexesBecomeFetchIndexes() throws {
        let model = try XCDataModelErrorTests.read("""
            <entity name="Event">
                <attribute name="a" attributeType="String"/>
                <attribute name="b" attributeType="Date"/>
                <compoundIndexes>
                    <compoundIndex><index value="a"/><index value="b"/></compoundIndex>
                    <compoundIndex><index value="b"/><index value="a"/></compoundIndex>
                </compoundIndexes>
            </entity>
            """)
        #expect(model.entities[0].fetchIndexes.map(\.name) == ["compoundIndex", "compoundIndex1"])
        #expect(model.entities[0].fetchIndexes[1].elements.map(\.propertyName) == ["b", "a"])
    }
}
