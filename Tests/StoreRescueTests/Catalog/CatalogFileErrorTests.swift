import Foundation
import Testing
@testable import StoreRescue

/// Malformed catalog files fail with the file and the JSON path of the value at fault.
struct CatalogFileErrorTests {
    /// `versions` around one inline version with the given entities.
    static func inline(_ entities: String) -> String {
        #"{"app": "A", "versions": [{"name": "V1", "entities": ["# + entities + "]}]}"
    }

    static func error(_ json: String) throws -> String {
        let directory = try TemporaryDirectory()
        return CatalogTestSupport.catalogError(json, in: directory).replacingOccurrences(of: directory.path("catalog.json"), with: "catalog.json")
    }

    @Test func badJSONNamesLineAndColumn() throws {
        #expect(try Self.error("{\n  \"app\": \"A\",\n  \"versions\": [\n    {\"name\": \"V1\" \"entities\": []}\n  ]\n}")
            == "catalog.json:4:19: malformed JSON: expected \",\" or \"}\" after a member, found \"\"\"")
        #expect(try Self.error("") == "catalog.json:1:1: malformed JSON: the document is empty")
    }

    @Test(arguments: [
        (#"[]"#, "catalog.json: expected an object, found an array"),
        (#"{"versions": []}"#, "catalog.json: app: required, and missing"),
        (#"{"app": 3, "versions": []}"#, "catalog.json: app: expected a string, found a number"),
        (#"{"app": "A"}"#, "catalog.json: versions: required, and missing (an array of versions)"),
        (#"{"app": "A", "verisons": []}"#, "catalog.json: verisons: unknown key (did you mean \"versions\"?); allowed here: formatVersion, app, current, notes, versions, stages"),
        (#"{"app": "A", "versions": {}}"#, "catalog.json: versions: expected an array, found an object"),
        (#"{"formatVersion": 2, "app": "A", "versions": []}"#, "catalog.json: formatVersion: 2 is newer than this storerescue understands (1)"),
        (#"{"formatVersion": "1", "app": "A", "versions": []}"#, "catalog.json: formatVersion: expected a whole number from 1, found \"1\""),
        (#"{"app": "A", "versions": [{"name": "V1"}]}"#, "catalog.json: versions[0]: a version needs one source: xcdatamodeld, xcdatamodel, momd, mom, store or entities (an inline definition)"),
        (#"{"app": "A", "versions": [{"name": "V1", "mom": "a.mom", "store": "s.sqlite"}]}"#, "catalog.json: versions[0]: a version has one source, this one has mom and store"),
        (#"{"app": "A", "versions": [{"name": "V1", "mom": "a.mom", "version": "x"}]}"#, "catalog.json: versions[0].version: only an xcdatamodeld or momd source has versions to pick from"),
        (#"{"app": "A", "versions": [{"name": "V1", "mom": "a.mom", "identifiers": ["1"]}]}"#, "catalog.json: versions[0].identifiers: only an inline definition (entities) takes identifiers; other sources carry their own"),
        (#"{"app": "A", "versions": [{"name": "All", "momd": "a.momd"}]}"#, "catalog.json: versions[0].name: an entry importing every version of momd keeps their own names; add \"version\" to pick one and name it"),
        (#"{"app": "A", "versions": [{"entities": []}]}"#, "catalog.json: versions[0].name: required, and missing (an inline version needs a name)"),
        (#"{"app": "A", "versions": [{"name": "", "entities": []}]}"#, "catalog.json: versions[0].name: must not be empty (leave the key out instead)"),
        (#"{"app": "A", "versions": [{"name": "V1", "entities": []}], "stages": [{"from": "V1", "to": "V1", "kind": "magic"}]}"#, "catalog.json: stages[0].kind: unknown stage kind \"magic\" (expected lightweight or custom)"),
    ])
    func documentShapeErrors(json: String, expected: String) throws {
        #expect(try Self.error(json) == expected)
    }

    @Test(arguments: [
        (#"{"name": "E", "attributes": [{"name": "a", "type": "String"}, {"name": "b", "type": "Int"}, {"name": "c", "type": "Date"}, {"name": "d", "type": "Strng"}]}"#,
         #"catalog.json: versions[0].entities[0].attributes[3].type: unknown type "Strng" (expected one of: String, Int, Int16, Int32, Int64, Double, Float, Bool, Date, Data, UUID, URL, Decimal, Transformable, ObjectID, Composite, Undefined, or a Core Data name such as "Integer 64")"#),
        (#"{"name": "E", "attributes": [{"name": "a", "type": "String", "optional": "yes"}]}"#,
         "catalog.json: versions[0].entities[0].attributes[0].optional: expected true or false, found a string"),
        (#"{"name": "E", "attributes": [{"name": "a", "tpye": "String"}]}"#,
         "catalog.json: versions[0].entities[0].attributes[0].tpye: unknown key (did you mean \"type\"?); allowed here: name, type, optional, default, unique, externalStorage, originalName, transient, readOnly, indexed, preserveValueOnDeletion, transformer, versionHashModifier"),
        (#"{"name": "E", "attributes": [{"name": "a", "type": "String", "default": []}]}"#,
         "catalog.json: versions[0].entities[0].attributes[0].default: expected a string, number or boolean, found an array"),
        (#"{"name": "A", "parent": "B"}, {"name": "B", "parent": "A"}"#,
         "catalog.json: versions[0].entities[0].parent: inheritance cycle: A → B → A"),
        (#"{"name": "A", "parent": "Ghost"}"#,
         "catalog.json: versions[0].entities[0].parent: parent entity \"Ghost\" is not in the model"),
        (#"{"name": "A"}, {"name": "A"}"#, "catalog.json: versions[0].entities[1].name: a second entity named \"A\""),
        (#"{"name": "A", "relationships": [{"name": "r", "destination": "Nobody"}]}"#,
         "catalog.json: versions[0].entities[0].relationships[0].destination: destination entity \"Nobody\" is not in the model"),
        (#"{"name": "A", "attributes": [{"name": "x", "type": "String"}], "relationships": [{"name": "r", "destination": "A", "inverse": "x"}]}"#,
         "catalog.json: versions[0].entities[0].relationships[0].inverse: inverse \"x\" is not a relationship of \"A\""),
        (#"{"name": "A", "relationships": [{"name": "r", "destination": "A", "toMany": true, "max": 1}]}"#,
         "catalog.json: versions[0].entities[0].relationships[0].max: a to-many relationship with max 1 is a to-one to Core Data; use toMany: false"),
        (#"{"name": "A", "relationships": [{"name": "r", "destination": "A", "min": -1}]}"#,
         "catalog.json: versions[0].entities[0].relationships[0].min: expected a whole number from 0 to 4294967295, found -1"),
        (#"{"name": "A", "relationships": [{"name": "r", "destination": "A", "deleteRule": "Cascade"}]}"#,
         "catalog.json: versions[0].entities[0].relationships[0].deleteRule: unknown delete rule \"Cascade\" (expected one of: nullify, cascade, deny, noAction)"),
        (#"{"name": "A", "attributes": [{"name": "x", "type": "String"}], "uniquenessConstraints": [["x"], ["y"]]}"#,
         "catalog.json: versions[0].entities[0].uniquenessConstraints[1]: names \"y\", which is not a property of \"A\""),
        (#"{"name": "A", "attributes": [{"name": "x", "type": "String"}], "fetchIndexes": [{"name": "i", "elements": [{"property": "z"}]}]}"#,
         "catalog.json: versions[0].entities[0].fetchIndexes[0]: names \"z\", which is not a property of \"A\""),
        (#"{"name": "A", "attributes": [{"name": "x", "type": "String"}, {"name": "x", "type": "Int"}]}"#,
         "catalog.json: versions[0].entities[0].attributes[1]: a second property with this name"),
    ])
    func inlineDefinitionErrors(entities: String, expected: String) throws {
        #expect(try Self.error(Self.inline(entities)) == expected)
    }

    @Test func catalogLevelErrors() throws {
        let duplicate = try Self.error(#"{"app": "A", "versions": [{"name": "V1", "entities": []}, {"name": "V1", "entities": []}]}"#)
        #expect(duplicate == "catalog.json: versions[1]: a second version named \"V1\" (the first is versions[0])")
        let current = try Self.error(#"{"app": "A", "current": "V9", "versions": [{"name": "V1", "entities": []}]}"#)
        #expect(current == "catalog.json: current: no version is named \"V9\"; the versions are \"V1\"")
        let backwards = try Self.error(
            #"{"app": "A", "versions": [{"name": "V1", "entities": []}, {"name": "V2", "entities": [{"name": "E"}]}], "stages": [{"from": "V2", "to": "V1", "kind": "custom"}]}"#)
        #expect(backwards == "catalog.json: stages[0]: goes from \"V2\" to \"V1\", which is not later in the catalog: stages only go forward")
        let unknownStage = try Self.error(#"{"app": "A", "versions": [{"name": "V1", "entities": []}], "stages": [{"from": "V0", "to": "V1", "kind": "custom"}]}"#)
        #expect(unknownStage == "catalog.json: stages[0].from: no version is named \"V0\"; the versions are \"V1\"")
        let checksum = try Self.error(#"{"app": "A", "versions": [{"name": "V1", "versionChecksum": "abc=", "entities": []}]}"#)
        #expect(checksum == "catalog.json: versions[0].versionChecksum: version \"V1\" declares checksum abc= but its model gives 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }

    @Test func missingAndBrokenSourcesKeepTheirOwnMessageAndStatus() throws {
        let directory = try TemporaryDirectory()
        let missing = #expect(throws: CatalogFileError.self) {
            try CatalogTestSupport.loadCatalog(#"{"app": "A", "versions": [{"name": "V1", "xcdatamodel": "Gone.xcdatamodel"}]}"#, in: directory)
        }
        #expect(missing?.description == "\(directory.path("catalog.json")): versions[0].xcdatamodel: \(directory.path("Gone.xcdatamodel")): no such folder")
        #expect(missing?.exitStatus == .noInput)
        #expect(missing?.recoverySuggestion?.contains(".xcdatamodeld") == true)

        let bundle = try CatalogTestSupport.writeBundle("B", versions: ["B": "<model><entity name=\"E\"><attribute name=\"a\" attributeType=\"Nope\"/></entity></model>"], in: directory)
        let broken = #expect(throws: CatalogFileError.self) {
            try CatalogTestSupport.loadCatalog(#"{"app": "A", "versions": [{"xcdatamodeld": "B.xcdatamodeld"}]}"#, in: directory)
        }
        #expect(broken?.description == "\(directory.path("catalog.json")): versions[0].xcdatamodeld: \(bundle)/B.xcdatamodel/contents:1: entity \"E\" attribute \"a\": unknown attributeType \"Nope\"")
        #expect(broken?.exitStatus == .notAStore)

        try CatalogTestSupport.writeBundle("C", versions: ["C": CatalogTestSupport.contents(""), "C 2": CatalogTestSupport.contents("")], in: directory)
        let unknownVersion = CatalogTestSupport.catalogError(
            #"{"app": "A", "versions": [{"name": "X", "xcdatamodeld": "C.xcdatamodeld", "version": "C 9"}]}"#, in: directory)
        #expect(unknownVersion.hasSuffix("versions[0].version: \"C 9\" is not a version of C.xcdatamodeld; its versions are \"C\", \"C 2\""))

        let absent = #expect(throws: CatalogFileError.self) { try CatalogFile.read(path: directory.path("absent.json")) }
        #expect(absent?.description == "\(directory.path("absent.json")): no such file")
        #expect(absent?.exitStatus == .noInput)
    }
}
