import Foundation
import Testing
@testable import StoreRescue

/// The project's sample catalog loads as documented, and SwiftData-style inline definitions
/// map to the Core Data model they stand for.
struct CatalogFileTests {
    @Test func journalSampleCatalogLoads() throws {
        let path = CatalogTestSupport.projectSample("Journal/catalog.json")
        let catalog = try Catalog.load(path: path)
        #expect(catalog.name == "Journal" && catalog.sourcePath == path)
        #expect(catalog.versions.map(\.name) == ["V1", "V2", "V3", "V4"])
        #expect(catalog.versions.map(\.origin) == ["xcdatamodel", "xcdatamodel", "xcdatamodel", "inline"])
        #expect(catalog.versions.map(\.versionIdentifiers) == [[""], ["2"], ["3"], ["4"]])
        #expect(catalog.currentVersionName == "V4")
        #expect(catalog.stages.map { "\($0.spanDescription):\($0.kind.rawValue):\($0.jsonPath)" } == [
            "V1 → V2:lightweight:stages[0]", "V2 → V3:lightweight:stages[1]", "V3 → V4:custom:stages[2]",
        ])
        #expect(catalog.stages[2].custom.map == [.init(entity: "Entry", assignments: [
            .init(property: "id", expression: "uuid()", jsonPath: "stages[2].map.Entry.id"),
        ], jsonPath: "stages[2].map.Entry")])
        #expect(catalog.duplicateChecksums.isEmpty)
        #expect(Set(catalog.versions.map(\.versionChecksum)).count == 4)
        // Tag never changes, so its hash is the same in every version.
        #expect(Set(catalog.versions.compactMap { $0.versionHashes["Tag"] }).count == 1)

        let v1 = catalog.versions[0].model, v2 = catalog.versions[1].model, v3 = catalog.versions[2].model
        #expect(v1.entity(named: "Entry")?.attributes.map(\.name) == ["body", "createdAt", "title"])
        #expect(v1.entity(named: "Tag")?.uniquenessConstraints == [["name"]])
        let tags = try #require(v1.entity(named: "Entry")?.relationships.first)
        #expect(tags.isToMany && tags.inverseName == "entries" && tags.destinationEntityName == "Tag" && tags.maxCount == 0)
        let text = v2.entity(named: "Entry")?.attributes.first { $0.name == "text" }
        #expect(text?.renamingIdentifier == "body" && text?.isOptional == true)
        #expect(v2.entity(named: "Entry")?.attributes.first { $0.name == "mood" }?.type == .integer16)
        let wordCount = v3.entity(named: "Entry")?.attributes.first { $0.name == "wordCount" }
        #expect(wordCount?.type == .integer32 && wordCount?.isOptional == false && wordCount?.defaultValue == "0")
        #expect(v3.entity(named: "Entry")?.fetchIndexes == [
            FetchIndexDescription(name: "createdAt", elements: [.init(propertyName: "createdAt")]),
            FetchIndexDescription(name: "byCreatedAt", elements: [.init(propertyName: "createdAt", isAscending: false)]),
        ])
    }

    @Test func inlineDefinitionsReadLikeSwiftData() throws {
        let catalog = try Catalog.load(path: CatalogTestSupport.projectSample("Journal/catalog.json"))
        let v4 = try #require(catalog.version(named: "V4"))
        let entry = try #require(v4.model.entity(named: "Entry"))
        #expect(entry.className == nil && entry.renamingIdentifier == "Entry")
        let types = Dictionary(uniqueKeysWithValues: entry.attributes.map { ($0.name, $0.type) })
        #expect(types == [
            "id": .uuid, "title": .string, "text": .string, "createdAt": .date, "mood": .integer16, "wordCount": .integer32,
            "isFavorite": .boolean, "photo": .binaryData,
        ])
        let optional = Dictionary(uniqueKeysWithValues: entry.attributes.map { ($0.name, $0.isOptional) })
        #expect(optional == ["id": false, "title": false, "text": true, "createdAt": false, "mood": true, "wordCount": false, "isFavorite": false, "photo": true])
        #expect(entry.uniquenessConstraints == [["id"]])
        #expect(entry.attributes.first { $0.name == "text" }?.renamingIdentifier == "body")
        #expect(entry.attributes.first { $0.name == "photo" }?.allowsExternalBinaryDataStorage == true)
        #expect(entry.attributes.first { $0.name == "wordCount" }?.defaultValue == "0")
        #expect(entry.attributes.first { $0.name == "isFavorite" }?.defaultValue == "NO")
        #expect(entry.attributes.first { $0.name == "createdAt" }?.isIndexed == true)
        #expect(entry.fetchIndexes.map(\.name) == ["createdAt", "byCreatedAt"])
        #expect(v4.model.entity(named: "Tag")?.uniquenessConstraints == [["name"]])
        let tags = try #require(entry.relationships.first)
        #expect(tags == RelationshipDescription(
            name: "tags", destinationEntityName: "Tag", inverseName: "entries", minCount: 0, maxCount: 0, isToMany: true,
            isOptional: true, deleteRule: .nullify, renamingIdentifier: "tags"))
        // V4 keeps V3's Tag, so Tag's hash is unchanged; Entry's is not.
        let v3 = try #require(catalog.version(named: "V3"))
        #expect(v4.versionHashes["Tag"] == v3.versionHashes["Tag"])
        #expect(v4.versionHashes["Entry"] != v3.versionHashes["Entry"])
    }

    /// An inline copy of an `.xcdatamodel` version hashes exactly like it.
    @Test func inlineCopyOfAModelFileHashesTheSame() throws {
        let directory = try TemporaryDirectory()
        let bundle = CatalogTestSupport.projectSample("Journal/Journal.xcdatamodeld")
        let catalog = try CatalogTestSupport.loadCatalog("""
            {"app": "Journal", "versions": [
              {"name": "file", "xcdatamodeld": "\(bundle)", "version": "Journal"},
              {"name": "inline", "entities": [
                {"name": "Tag", "className": "Tag",
                 "attributes": [{"name": "name", "type": "String", "unique": true}],
                 "relationships": [{"name": "entries", "destination": "Entry", "inverse": "tags", "toMany": true, "optional": true}]},
                {"name": "Entry", "className": "Entry",
                 "attributes": [{"name": "body", "type": "String", "optional": true}, {"name": "createdAt", "type": "Date"},
                                {"name": "title", "type": "String"}],
                 "relationships": [{"name": "tags", "destination": "Tag", "inverse": "entries", "toMany": true, "optional": true}]}
              ]}
            ]}
            """, in: directory)
        #expect(catalog.versions[0].versionHashes == catalog.versions[1].versionHashes)
        #expect(catalog.duplicateChecksums == [["file", "inline"]])
        #expect(catalog.versions[1].model.entities.map(\.name) == ["Entry", "Tag"])
        #expect(catalog.versions[0].model == catalog.versions[1].model)
    }

    @Test func importingAWholeFolderKeepsItsNames() throws {
        let directory = try TemporaryDirectory()
        let catalog = try CatalogTestSupport.loadCatalog("""
            {"app": "Journal", "current": "Journal 2",
             "versions": [{"xcdatamodeld": "\(CatalogTestSupport.projectSample("Journal/Journal.xcdatamodeld"))"}],
             "stages": [{"from": "Journal", "to": "Journal 3", "kind": "custom", "notes": "skips 2"}]}
            """, in: directory)
        #expect(catalog.versions.map(\.name) == ["Journal", "Journal 2", "Journal 3"])
        #expect(catalog.currentVersionName == "Journal 2")
        #expect(catalog.stages == [CatalogStage(kind: .custom, span: .pair(from: "Journal", to: "Journal 3"), notes: "skips 2", jsonPath: "stages[0]")])
    }

    @Test func relativePathsResolveAgainstTheCatalogFolder() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path("models"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: CatalogTestSupport.projectSample("Journal/Journal.xcdatamodeld"), toPath: directory.path("models/Journal.xcdatamodeld"))
        let catalog = try CatalogTestSupport.loadCatalog(
            #"{"app": "J", "versions": [{"xcdatamodel": "models/Journal.xcdatamodeld/Journal 2.xcdatamodel"}]}"#, in: directory)
        #expect(catalog.versions.map(\.name) == ["Journal 2"])
        #expect(catalog.versions[0].sourcePath == directory.path("models/Journal.xcdatamodeld/Journal 2.xcdatamodel"))
    }

    /// Review rv10: `cat/link.json` → `../Journal/catalog.json` resolved the catalog's relative
    /// paths against `cat/` (exit 66, "cat/Journal.xcdatamodeld: no such folder"). They resolve
    /// against the folder of the file the link leads to; errors still name the link as given.
    @Test func aCatalogGivenThroughALinkResolvesFromTheFileItLeadsTo() throws {
        let directory = try TemporaryDirectory()
        let fm = FileManager.default
        try fm.createDirectory(atPath: directory.path("Journal"), withIntermediateDirectories: true)
        for item in ["catalog.json", "Journal.xcdatamodeld"] {
            try fm.copyItem(atPath: CatalogTestSupport.projectSample("Journal/" + item), toPath: directory.path("Journal/" + item))
        }
        try fm.createDirectory(atPath: directory.path("cat"), withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: directory.path("cat/link.json"), withDestinationPath: "../Journal/catalog.json")
        let catalog = try Catalog.load(path: directory.path("cat/link.json"))
        #expect(catalog.versions.map(\.name) == ["V1", "V2", "V3", "V4"])
        #expect(catalog.sourcePath == directory.path("cat/link.json"), "named as given")
        let real = URL(fileURLWithPath: directory.path("Journal")).resolvingSymlinksInPath().path
        #expect(catalog.versions[2].sourcePath == real + "/Journal.xcdatamodeld/Journal 3.xcdatamodel")

        try Data(#"{"app": "J", "versions": [{"xcdatamodeld": "Missing.xcdatamodeld"}]}"#.utf8).write(to: URL(fileURLWithPath: directory.path("Journal/bad.json")))
        try fm.createSymbolicLink(atPath: directory.path("cat/bad.json"), withDestinationPath: "../Journal/bad.json")
        let error = #expect(throws: CatalogFileError.self) { try Catalog.load(path: directory.path("cat/bad.json")) }
        let message = error?.description ?? ""
        #expect(message.hasPrefix(directory.path("cat/bad.json")), "\(message)")
        #expect(message.contains(real + "/Missing.xcdatamodeld"), "\(message)")
    }
}
