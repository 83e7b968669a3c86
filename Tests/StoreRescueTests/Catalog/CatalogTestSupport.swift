import Foundation
import Testing
@testable import StoreRescue

/// Reading sample stores' metadata and writing small model fixtures for the catalog tests.
enum CatalogTestSupport {
    struct NoMetadata: Error, CustomStringConvertible {
        var description: String
    }

    /// The project's own `Samples/` folder (read in place: tests never write there).
    static func projectSample(_ relativePath: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Samples").appendingPathComponent(relativePath).path
    }

    /// Writes `json` as `name` in `directory` and loads it as a catalog file.
    static func loadCatalog(_ json: String, in directory: TemporaryDirectory, name: String = "catalog.json") throws -> Catalog {
        let path = directory.path(name)
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try CatalogFile.read(path: path).loadCatalog()
    }

    /// The error loading `json` as a catalog file gives, as its description ("no error" if none).
    static func catalogError(_ json: String, in directory: TemporaryDirectory) -> String {
        do {
            _ = try loadCatalog(json, in: directory)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    /// The metadata of a sample store, read with our own reader from a private copy (with its
    /// `-wal`, so a store whose metadata lives in the WAL is read as SQLite sees it).
    static func storedMetadata(_ relativePath: String) throws -> StoreMetadata {
        let directory = try TemporaryDirectory()
        let copy = try directory.copySample(relativePath)
        let store = try OpenedStore(path: copy)
        guard case .read(let metadata, _) = try StoreMetadata.read(from: store.connection) else {
            throw NoMetadata(description: "\(relativePath) has no readable Z_METADATA")
        }
        return metadata
    }

    /// The stored `NSStoreModelVersionHashes` of a sample store.
    static func storedHashes(_ relativePath: String) throws -> [String: Data] {
        let hashes = try storedMetadata(relativePath).versionHashes ?? [:]
        #expect(!hashes.isEmpty, "\(relativePath) stores no hashes")
        return hashes
    }

    /// Writes an `.xcdatamodeld` folder with the given versions (name → `contents` XML) and an
    /// optional current version, inside `directory`; returns its path.
    @discardableResult
    static func writeBundle(
        _ name: String, versions: [String: String], current: String? = nil, in directory: TemporaryDirectory
    ) throws -> String {
        let bundle = directory.url.appendingPathComponent("\(name).xcdatamodeld")
        for (version, contents) in versions {
            let folder = bundle.appendingPathComponent("\(version).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: folder.appendingPathComponent("contents"))
        }
        if let current {
            let plist = """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\(current).xcdatamodel</string></dict></plist>
                """
            try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        }
        return bundle.path
    }

    /// A `<model>` document around the given entity elements.
    static func contents(_ entities: String, identifier: String = "") -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="\(identifier)">
        \(entities)
        </model>
        """
    }

    /// The model with entities and their properties in name order: compiled archives list
    /// properties in hash-table order, which no other source can reproduce.
    static func sortedForComparison(_ model: ManagedObjectModel) -> ManagedObjectModel {
        var sorted = model
        sorted.entities = model.entities.map { entity in
            var entity = entity
            entity.properties.sort { $0.name < $1.name }
            return entity
        }.sorted { $0.name < $1.name }
        return sorted
    }
}
