import Foundation
import Testing
@testable import StoreRescue

/// Duplicate checksums (versions a staged migration cannot tell apart) and input detection.
struct CatalogReportTests {
    static let entity = #"{"name": "Note", "attributes": [{"name": "title", "type": "String", "default": "DEFAULT"}, {"name": "date", "type": "Date"}]"#

    @Test func versionsDifferingOnlyInDefaultsOrIndexesShareAChecksum() throws {
        let directory = try TemporaryDirectory()
        let json = """
            {"app": "Notes", "versions": [
              {"name": "A", "entities": [\(Self.entity.replacingOccurrences(of: "DEFAULT", with: "x"))}]},
              {"name": "B", "entities": [\(Self.entity.replacingOccurrences(of: "DEFAULT", with: "y"))}]},
              {"name": "C", "entities": [\(Self.entity.replacingOccurrences(of: "DEFAULT", with: "y")), "fetchIndexes": [{"name": "byDate", "elements": ["date"]}]}]},
              {"name": "D", "entities": [{"name": "Note", "attributes": [{"name": "title", "type": "String", "optional": true}, {"name": "date", "type": "Date"}]}]}
            ]}
            """
        let catalog = try CatalogTestSupport.loadCatalog(json, in: directory)
        #expect(catalog.versions[0].model != catalog.versions[1].model)
        #expect(catalog.versions[1].model.entities[0].fetchIndexes.isEmpty && catalog.versions[2].model.entities[0].fetchIndexes.count == 2)
        #expect(catalog.duplicateChecksums == [["A", "B", "C"]])
        let report = CatalogReport(catalog: catalog, path: directory.path("catalog.json"))
        #expect(report.duplicateChecksums == [CatalogReport.DuplicateChecksum(versionChecksum: catalog.versions[0].versionChecksum, versions: ["A", "B", "C"])])
        #expect(report.versions.map(\.sameChecksumAs) == [["B", "C"], ["A", "C"], ["A", "B"], []])
        #expect(report.warnings.count == 1)
        #expect(report.warnings[0].hasPrefix("versions \"A\", \"B\", \"C\" have the same checksum"))
        let text = report.renderText()
        #expect(text.contains("Warnings\n  warning: versions \"A\", \"B\", \"C\" have the same checksum"))
        #expect(text.contains("  Same checksum   B, C\n"))
        #expect(report.exitStatus == .success)
    }

    @Test func reportJSONHasEveryDocumentedKey() throws {
        let catalog = try Catalog.load(path: CatalogTestSupport.projectSample("Journal/catalog.json"))
        let report = CatalogReport(catalog: catalog, path: "catalog.json")
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(Set(object.keys) == ["path", "app", "currentVersion", "latestVersion", "versions", "stages", "duplicateChecksums", "planIssues", "warnings", "error"])
        #expect(object["error"] is NSNull)
        let versions = try #require(object["versions"] as? [[String: Any]])
        #expect(Set(versions[0].keys) == [
            "name", "origin", "sourcePath", "versionIdentifiers", "isCurrent", "entityCount", "versionChecksum", "hashesDigest", "entities", "sameChecksumAs",
        ])
        let stages = try #require(object["stages"] as? [[String: Any]])
        #expect(Set(stages[0].keys) == ["stage", "kind", "from", "to", "versions", "steps", "notes"])
        #expect(stages[0]["versions"] is NSNull && stages[0]["from"] as? String == "V1")
        let steps = try #require(stages[2]["steps"] as? [String: Int])
        #expect(steps == ["willMigrate": 0, "map": 1, "create": 0, "didMigrate": 0])
        #expect((object["planIssues"] as? [Any])?.isEmpty == true)

        let failed = CatalogReport(failedPath: "x.json", error: CatalogLoadError.missing(path: "x.json"))
        let failedObject = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(failed)) as? [String: Any])
        #expect(failedObject["app"] is NSNull && failedObject["currentVersion"] is NSNull)
        let error = try #require(failedObject["error"] as? [String: Any])
        #expect(error["message"] as? String == "x.json: no such file or folder")
        #expect(error["exitStatus"] as? Int == 66)
        #expect(failed.exitStatus == .noInput)
    }

    @Test func loaderRecognisesEachInput() throws {
        let directory = try TemporaryDirectory()
        let bundle = CatalogTestSupport.projectSample("Journal/Journal.xcdatamodeld")
        #expect(try Catalog.load(path: bundle).versions.count == 3)
        #expect(try Catalog.load(path: bundle + "/Journal 2.xcdatamodel").versions.map(\.name) == ["Journal 2"])
        // Folders without their extension, recognised by what they hold.
        try FileManager.default.copyItem(atPath: bundle, toPath: directory.path("models"))
        #expect(try Catalog.load(path: directory.path("models")).versions.count == 3)
        #expect(try Catalog.load(path: directory.path("models/Journal 3.xcdatamodel")).versions.count == 1)
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Journal/catalog.json"), toPath: directory.path("catalog.txt"))
        try FileManager.default.copyItem(atPath: bundle, toPath: directory.path("Journal.xcdatamodeld"))
        #expect(try Catalog.load(path: directory.path("catalog.txt")).versions.count == 4)

        try Data("hello".utf8).write(to: URL(fileURLWithPath: directory.path("notes.txt")))
        let unknown = #expect(throws: CatalogLoadError.self) { try Catalog.load(path: directory.path("notes.txt")) }
        #expect(unknown?.description == "\(directory.path("notes.txt")): is neither a catalog file (JSON), a compiled model (.mom) nor an SQLite store")
        #expect(unknown?.exitStatus == .notAStore)
        try FileManager.default.createDirectory(atPath: directory.path("empty"), withIntermediateDirectories: true)
        let folder = #expect(throws: CatalogLoadError.self) { try Catalog.load(path: directory.path("empty")) }
        #expect(folder?.description.hasSuffix("is a folder but not a model folder (.xcdatamodeld, .xcdatamodel or .momd)") == true)
        let missing = #expect(throws: CatalogLoadError.self) { try Catalog.load(path: directory.path("absent")) }
        #expect(missing?.exitStatus == .noInput)
        // A store file is read as a store, whatever its state.
        #expect(FileManager.default.createFile(atPath: directory.path("empty.sqlite"), contents: Data()))
        let empty = #expect(throws: StoreAccessError.self) { try Catalog.load(path: directory.path("empty.sqlite")) }
        #expect(empty?.kind == .empty)
    }
}
