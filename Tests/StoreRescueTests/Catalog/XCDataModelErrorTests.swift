import Foundation
import Testing
@testable import StoreRescue

/// Malformed model folders fail with messages that name the file, the line and the element.
struct XCDataModelErrorTests {
    static func read(_ entities: String) throws -> ManagedObjectModel {
        try XCDataModelReader.model(contents: Data(CatalogTestSupport.contents(entities).utf8), path: "M.xcdatamodel/contents")
    }

    static func message(_ body: () throws -> some Any) -> String {
        do {
            _ = try body()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func brokenXMLNamesTheLine() throws {
        let xml = "<?xml version=\"1.0\"?>\n<model>\n  <entity name=\"A\">\n    <attribute name=\"x\" attributeType=\"String\"/>\n</model>\n"
        let error = #expect(throws: XCDataModelError.self) {
            try XCDataModelReader.model(contents: Data(xml.utf8), path: "A.xcdatamodel/contents")
        }
        guard case .malformedXML(let path, let line, _, let reason)? = error else {
            Issue.record("expected malformedXML, got \(String(describing: error))")
            return
        }
        #expect(path == "A.xcdatamodel/contents")
        #expect(line == 5)
        #expect(reason == "an end tag does not match its start tag")
        #expect(error?.description.hasPrefix("A.xcdatamodel/contents:5:") == true)
        #expect(error?.exitStatus == .notAStore)
    }

    @Test func emptyAndNonXMLContentsAreRefused() throws {
        for text in ["", "not xml at all"] {
            let message = Self.message { try XCDataModelReader.model(contents: Data(text.utf8), path: "E/contents") }
            #expect(message.hasPrefix("E/contents:1:"), "\(message)")
            #expect(message.contains("malformed XML"))
        }
    }

    @Test func documentTypeDeclarationsAreRefusedBeforeParsing() throws {
        // FoundationXML's XMLDocument would read this file into the model; we refuse it.
        let xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE model [<!ENTITY x SYSTEM \"file:///etc/hostname\">]>\n<model><entity name=\"&x;\"/></model>"
        let message = Self.message { try XCDataModelReader.model(contents: Data(xml.utf8), path: "X/contents") }
        #expect(message.hasPrefix("X/contents:2:1: malformed XML: a document type declaration"))
    }

    @Test func notAModelRootIsNamed() throws {
        let message = Self.message { try XCDataModelReader.model(contents: Data("<plist/>".utf8), path: "P/contents") }
        #expect(message == "P/contents: the root element is <plist>, not <model>: this is not a Core Data model file")
    }

    @Test func unknownAttributeTypeNamesEntityAndAttribute() throws {
        let error = #expect(throws: XCDataModelError.self) {
            try Self.read("""
                <entity name="Post">
                    <attribute name="title" attributeType="Strng"/>
                </entity>
                """)
        }
        #expect(error == .unknownAttributeType(path: "M.xcdatamodel/contents", line: 4, entity: "Post", attribute: "title", typeName: "Strng"))
        #expect(error?.description == "M.xcdatamodel/contents:4: entity \"Post\" attribute \"title\": unknown attributeType \"Strng\"")
        #expect(error?.recoverySuggestion?.contains("Integer 64") == true)
    }

    @Test func inheritanceCycleIsReportedOnce() throws {
        let error = #expect(throws: XCDataModelError.self) {
            try Self.read("""
                <entity name="A" parentEntity="B"/>
                <entity name="B" parentEntity="C"/>
                <entity name="C" parentEntity="A"/>
                """)
        }
        #expect(error == .inheritanceCycle(path: "M.xcdatamodel/contents", line: 3, cycle: ["A", "B", "C", "A"]))
        #expect(error?.description == "M.xcdatamodel/contents:3: entity \"A\": inheritance cycle A → B → C → A")
        let selfParent = Self.message { try Self.read("<entity name=\"Solo\" parentEntity=\"Solo\"/>") }
        #expect(selfParent.hasSuffix("entity \"Solo\": inheritance cycle Solo → Solo"))
    }

    @Test func unknownParentAndDestinationEntities() throws {
        let parent = Self.message { try Self.read("<entity name=\"Child\" parentEntity=\"Ghost\"/>") }
        #expect(parent == "M.xcdatamodel/contents:3: entity \"Child\": parentEntity \"Ghost\" is not an entity of this model")
        let destination = Self.message {
            try Self.read("""
                <entity name="Post">
                    <relationship name="author" optional="YES" maxCount="1" destinationEntity="Person"/>
                </entity>
                """)
        }
        #expect(destination == "M.xcdatamodel/contents:4: entity \"Post\" relationship \"author\": destinationEntity \"Person\" is not an entity of this model")
        let inverse = Self.message {
            try Self.read("""
                <entity name="Post">
                    <relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="posts"/>
                </entity>
                <entity name="Tag"/>
                """)
        }
        #expect(inverse == "M.xcdatamodel/contents:4: entity \"Post\" relationship \"tags\": inverse \"posts\" is not a relationship of \"Tag\"")
    }

    @Test func duplicateEntitiesAndProperties() throws {
        let entity = Self.message { try Self.read("<entity name=\"A\"/>\n<entity name=\"A\"/>") }
        #expect(entity == "M.xcdatamodel/contents:4: entity \"A\": a second entity with this name")
        let property = Self.message {
            try Self.read("""
                <entity name="A">
                    <attribute name="x" attributeType="String"/>
                    <attribute name="x" attributeType="Date"/>
                </entity>
                """)
        }
        #expect(property == "M.xcdatamodel/contents:5: entity \"A\" attribute \"x\": a second property with this name")
    }

    @Test func invalidValuesNameTheAttribute() throws {
        let flag = Self.message { try Self.read("<entity name=\"A\">\n<attribute name=\"x\" optional=\"maybe\" attributeType=\"String\"/>\n</entity>") }
        #expect(flag == "M.xcdatamodel/contents:4: entity \"A\" attribute \"x\": optional=\"maybe\" is neither YES nor NO")
        let toMany = Self.message {
            try Self.read("<entity name=\"A\">\n<relationship name=\"r\" toMany=\"YES\" maxCount=\"1\" destinationEntity=\"A\"/>\n</entity>")
        }
        #expect(toMany.contains("entity \"A\" relationship \"r\": a to-many relationship with maxCount 1"))
        let count = Self.message {
            try Self.read("<entity name=\"A\">\n<relationship name=\"r\" toMany=\"YES\" minCount=\"-1\" destinationEntity=\"A\"/>\n</entity>")
        }
        #expect(count.contains("minCount=\"-1\" is not a whole number"))
        let rule = Self.message {
            try Self.read("<entity name=\"A\">\n<relationship name=\"r\" maxCount=\"1\" deletionRule=\"Explode\" destinationEntity=\"A\"/>\n</entity>")
        }
        #expect(rule.hasSuffix("deletionRule \"Explode\" is not Nullify, Cascade, Deny or No Action"))
        let nameless = Self.message { try Self.read("<entity name=\"A\">\n<attribute attributeType=\"String\"/>\n</entity>") }
        #expect(nameless == "M.xcdatamodel/contents:4: entity \"A\" attribute: <attribute> has no name")
        let constraint = Self.message {
            try Self.read("""
                <entity name="A">
                    <attribute name="x" attributeType="String"/>
                    <uniquenessConstraints><uniquenessConstraint><constraint value="y"/></uniquenessConstraint></uniquenessConstraints>
                </entity>
                """)
        }
        #expect(constraint == "M.xcdatamodel/contents:5: entity \"A\" uniquenessConstraint 1: names \"y\", which is not a property of \"A\"")
        let undefined = Self.message { try Self.read("<entity name=\"A\">\n<attribute name=\"x\"/>\n</entity>") }
        #expect(undefined.hasSuffix("entity \"A\" attribute \"x\": type Undefined is only allowed on a transient attribute"))
    }

    @Test func missingContentsAndFoldersAreNamed() throws {
        let directory = try TemporaryDirectory()
        let bundle = try CatalogTestSupport.writeBundle("App", versions: ["App": CatalogTestSupport.contents("")], in: directory)
        try FileManager.default.createDirectory(atPath: bundle + "/App 2.xcdatamodel", withIntermediateDirectories: true)
        let error = #expect(throws: XCDataModelError.self) { try XCDataModelReader.readBundle(at: bundle) }
        #expect(error == .missingContents(path: bundle + "/App 2.xcdatamodel/contents"))
        #expect(error?.description.contains("no such file: every .xcdatamodel version folder must hold its model in a file named contents") == true)
        #expect(error?.exitStatus == .noInput)

        let missing = Self.message { try XCDataModelReader.readBundle(at: directory.path("Nope.xcdatamodeld")) }
        #expect(missing.hasSuffix("Nope.xcdatamodeld: no such folder: an .xcdatamodeld is a folder of .xcdatamodel versions"))
        try FileManager.default.createDirectory(atPath: directory.path("Empty.xcdatamodeld"), withIntermediateDirectories: true)
        let empty = Self.message { try XCDataModelReader.readBundle(at: directory.path("Empty.xcdatamodeld")) }
        #expect(empty.hasSuffix("Empty.xcdatamodeld: holds no .xcdatamodel version folder"))
    }

    @Test func duplicateVersionNamesInTwoNormalisationForms() throws {
        let directory = try TemporaryDirectory()
        let composed = "Mod\u{E9}le", decomposed = "Mode\u{301}le"
        #expect(composed == decomposed)  // Swift compares canonically; the file system does not.
        let bundle = try CatalogTestSupport.writeBundle("App", versions: [composed: CatalogTestSupport.contents("")], in: directory)
        let second = URL(fileURLWithPath: bundle).appendingPathComponent(decomposed + ".xcdatamodel")
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        try Data(CatalogTestSupport.contents("").utf8).write(to: second.appendingPathComponent("contents"))
        let entries = try FileManager.default.contentsOfDirectory(atPath: bundle)
        try #require(entries.count == 2, "the file system merged the two names: \(entries)")
        let error = #expect(throws: XCDataModelError.self) { try XCDataModelReader.readBundle(at: bundle) }
        guard case .duplicateVersionName(let path, let name)? = error else {
            Issue.record("expected duplicateVersionName, got \(String(describing: error))")
            return
        }
        #expect(path == bundle && name == composed)
        #expect(error?.description.contains("two versions are named") == true)
    }

    @Test func currentVersionProblems() throws {
        let directory = try TemporaryDirectory()
        let bundle = try CatalogTestSupport.writeBundle("App", versions: ["App": CatalogTestSupport.contents("")], current: "App 7", in: directory)
        let unknown = Self.message { try XCDataModelReader.readBundle(at: bundle) }
        #expect(unknown == "\(bundle)/.xccurrentversion: names \"App 7\" as the current version, but the versions are \"App\"")
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: bundle + "/.xccurrentversion"))
        let garbage = Self.message { try XCDataModelReader.readBundle(at: bundle) }
        #expect(garbage.hasPrefix("\(bundle)/.xccurrentversion: cannot read the current version:"))
    }
}
