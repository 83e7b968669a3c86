import Foundation

/// Reads Xcode's model sources: an `.xcdatamodeld` folder (every version, in natural order of
/// their names, and the current one) or a single `.xcdatamodel` version folder.
///
/// Each version's `contents` XML becomes a `ManagedObjectModel` in the form the model compiler
/// emits (`ModelCompilerRules`), so it compares with models decoded from `.mom` files and store
/// model caches: equal version hashes, equal options, fetch indexes and constraints. The version
/// identifier comes from `<model userDefinedModelVersionIdentifier="…">` (empty or absent: none).
///
/// ```swift
/// let catalog = try XCDataModelReader.readBundle(at: "Journal/Journal.xcdatamodeld")
/// print(catalog.versions.map(\.name), catalog.currentVersionName ?? "-")
/// ```
public enum XCDataModelReader {
    /// The largest `contents` (or `.xccurrentversion`) file read. Real ones are kilobytes.
    public static let maximumFileBytes = 32 << 20

    /// Reads every version of an `.xcdatamodeld` folder into a catalog named after the folder.
    ///
    /// - Throws: `XCDataModelError` naming the folder, file, line and element at fault.
    public static func readBundle(at path: String) throws -> Catalog {
        let folder = URL(fileURLWithPath: path)
        guard BoundedFile.kind(of: path) == .directory else {
            let what = BoundedFile.kind(of: path) == .missing ? "no such folder" : "is not a folder"
            throw XCDataModelError.notAModelFolder(path: path, reason: "\(what): an .xcdatamodeld is a folder of .xcdatamodel versions")
        }
        let entries: [String]
        do {
            entries = try BoundedFile.names(inFolder: path)
        } catch .tooManyOpenFiles {
            throw XCDataModelError.tooManyOpenFiles(path: path)
        } catch {
            throw XCDataModelError.unreadableFile(path: path, reason: "cannot list the folder: \(error.description)")
        }
        var names: [String] = []
        for entry in entries where entry.hasSuffix(".xcdatamodel") {
            let name = String(entry.dropLast(".xcdatamodel".count))
            // Swift compares strings by canonical equivalence: NFC and NFD spellings collide here.
            guard !names.contains(name) else { throw XCDataModelError.duplicateVersionName(path: path, name: name) }
            names.append(name)
        }
        guard !names.isEmpty else {
            throw XCDataModelError.notAModelFolder(path: path, reason: "holds no .xcdatamodel version folder")
        }
        names.sort(by: NaturalOrder.areInIncreasingOrder)
        let versions = try names.map { name in
            let versionPath = folder.appendingPathComponent(name + ".xcdatamodel").path
            return CatalogVersion(name: name, model: try readVersion(at: versionPath), origin: "xcdatamodel", sourcePath: versionPath)
        }
        let current = try currentVersionName(in: folder, versions: names)
        let appName = folder.deletingPathExtension().lastPathComponent
        return Catalog(name: appName, versions: versions, currentVersionName: current, sourcePath: path)
    }

    /// Reads one `.xcdatamodel` version folder (its `contents` file).
    public static func readVersion(at path: String) throws -> ManagedObjectModel {
        switch BoundedFile.kind(of: path) {
        case .directory: break
        case .missing: throw XCDataModelError.notAModelFolder(path: path, reason: "no such folder")
        case .regularFile, .other: throw XCDataModelError.notAModelFolder(path: path, reason: "is a file, not an .xcdatamodel folder")
        }
        let contents = URL(fileURLWithPath: path).appendingPathComponent("contents").path
        let data: Data
        do {
            data = try BoundedFile.contents(of: contents, limit: maximumFileBytes)
        } catch .missing {
            throw XCDataModelError.missingContents(path: contents)
        } catch .tooManyOpenFiles {
            throw XCDataModelError.tooManyOpenFiles(path: contents)
        } catch {
            throw XCDataModelError.unreadableFile(path: contents, reason: error.description)
        }
        return try model(contents: data, path: contents)
    }

    /// Parses the XML of a `contents` file; `path` is only used in error messages.
    public static func model(contents data: Data, path: String) throws -> ManagedObjectModel {
        let root: XMLElementNode
        do {
            root = try XMLElementTreeReader.parse(data)
        } catch {
            throw XCDataModelError.malformedXML(path: path, line: error.line, column: error.column, reason: error.reason)
        }
        var parser = XCDataModelParser(path: path)
        return try parser.model(from: root)
    }

    /// The version `.xccurrentversion` names, or nil when the file is absent.
    static func currentVersionName(in folder: URL, versions: [String]) throws -> String? {
        let file = folder.appendingPathComponent(".xccurrentversion").path
        let data: Data
        do {
            data = try BoundedFile.contents(of: file, limit: maximumFileBytes)
        } catch .missing {
            return nil
        } catch .tooManyOpenFiles {
            throw XCDataModelError.tooManyOpenFiles(path: file)
        } catch {
            throw XCDataModelError.unreadableCurrentVersion(path: file, reason: error.description)
        }
        let plist: PropertyListValue
        do {
            plist = try BinaryPropertyListDecoder.decode(data)
        } catch {
            throw XCDataModelError.unreadableCurrentVersion(path: file, reason: "\(error)")
        }
        guard let value = plist["_XCCurrentVersionName"]?.string else {
            throw XCDataModelError.unreadableCurrentVersion(path: file, reason: "it has no _XCCurrentVersionName string")
        }
        let name = value.hasSuffix(".xcdatamodel") ? String(value.dropLast(".xcdatamodel".count)) : value
        guard versions.contains(name) else {
            throw XCDataModelError.unknownCurrentVersion(path: file, name: name, versions: versions)
        }
        return name
    }
}
