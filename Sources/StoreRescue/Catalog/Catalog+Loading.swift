import Foundation

/// Why `Catalog.load(path:)` could not tell what an input is.
public enum CatalogLoadError: OperatorFacingError, Equatable, Sendable {
    case missing(path: String)
    case unrecognized(path: String, reason: String)
    /// No file descriptor was left to open the input and tell what it is (`EMFILE`, `ENFILE`):
    /// the limit's fault (it read as unrecognised, exit 65).
    case tooManyOpenFiles(path: String)

    public var description: String {
        switch self {
        case .missing(let path): return "\(path): no such file or folder"
        case .unrecognized(let path, let reason): return "\(path): \(reason)"
        case .tooManyOpenFiles(let path): return "\(path): cannot be opened, no file descriptor left: \(String(cString: strerror(EMFILE)))"
        }
    }

    public var recoverySuggestion: String? {
        if case .tooManyOpenFiles = self { return StoreCreationError.openFilesHint }
        return "pass a catalog file (.json), an .xcdatamodeld or .xcdatamodel folder, a .momd folder, a .mom file, or a reference store"
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .missing: return .noInput
        case .unrecognized: return .notAStore
        case .tooManyOpenFiles: return .ioError
        }
    }
}

extension Catalog {
    /// Loads a catalog from whatever `path` is: an `.xcdatamodeld` folder (every version), an
    /// `.xcdatamodel` folder or a `.mom` file (one version), a `.momd` folder, a catalog file
    /// (`.json`), or a reference store (one version learned from its model cache, named after the
    /// file). Inputs without a telling extension are recognised by their content.
    ///
    /// ```swift
    /// let catalog = try Catalog.load(path: "Samples/Journal/catalog.json")
    /// for group in catalog.duplicateChecksums { print("indistinguishable:", group) }
    /// ```
    ///
    /// - Throws: `CatalogLoadError` when the input is missing or not recognised, otherwise the
    ///   error of the reader that handles it (`XCDataModelError`, `CompiledModelError`,
    ///   `CatalogFileError`, `StoreModelError`, `StoreAccessError`).
    public static func load(path: String) throws -> Catalog {
        let url = URL(fileURLWithPath: path)
        switch BoundedFile.kind(of: path) {
        case .missing:
            throw CatalogLoadError.missing(path: path)
        case .other:
            throw CatalogLoadError.unrecognized(path: path, reason: "is not a regular file or folder")
        case .directory:
            switch try folderKind(url) {
            case "xcdatamodeld": return try XCDataModelReader.readBundle(at: path)
            case "xcdatamodel":
                let name = url.deletingPathExtension().lastPathComponent
                let version = CatalogVersion(name: name, model: try XCDataModelReader.readVersion(at: path), origin: "xcdatamodel", sourcePath: path)
                return Catalog(name: name, versions: [version], sourcePath: path)
            case "momd": return try CompiledModelReader.readBundle(at: path)
            default:
                throw CatalogLoadError.unrecognized(path: path, reason: "is a folder but not a model folder (.xcdatamodeld, .xcdatamodel or .momd)")
            }
        case .regularFile:
            switch try fileKind(url) {
            case "json": return try CatalogFile.read(path: path).loadCatalog()
            case "mom": return try CompiledModelReader.readSingleModel(at: path)
            case "store": return try StoreModelReader.readCatalog(fromStore: path)
            default:
                throw CatalogLoadError.unrecognized(path: path, reason: "is neither a catalog file (JSON), a compiled model (.mom) nor an SQLite store")
            }
        }
    }

    /// A model folder's kind, by extension or else by what it holds.
    ///
    /// - Throws: `CatalogLoadError.tooManyOpenFiles` when no file descriptor is left to list the
    ///   folder: an `.xcdatamodeld` without its extension then read as "a folder but not a model
    ///   folder" (65). A folder that cannot be listed for another reason is still no model folder.
    private static func folderKind(_ url: URL) throws -> String? {
        if ["xcdatamodeld", "xcdatamodel", "momd"].contains(url.pathExtension) { return url.pathExtension }
        if BoundedFile.kind(of: url.appendingPathComponent("contents").path) == .regularFile { return "xcdatamodel" }
        if BoundedFile.kind(of: url.appendingPathComponent("VersionInfo.plist").path) == .regularFile { return "momd" }
        let children: [String]
        do {
            children = try BoundedFile.names(inFolder: url.path)
        } catch .tooManyOpenFiles {
            throw CatalogLoadError.tooManyOpenFiles(path: url.path)
        } catch {
            children = []
        }
        return children.contains { $0.hasSuffix(".xcdatamodel") } ? "xcdatamodeld" : nil
    }

    /// A file's kind, by extension or else by its first bytes.
    private static func fileKind(_ url: URL) throws -> String? {
        switch url.pathExtension {
        case "json": return "json"
        case "mom": return "mom"
        case "sqlite", "sqlite3", "store", "storedata", "db": return "store"
        default: break
        }
        let head: [UInt8]
        do {
            head = try BoundedFile.prefix(of: url.path, count: 16)
        } catch .tooManyOpenFiles {
            throw CatalogLoadError.tooManyOpenFiles(path: url.path)
        } catch {
            throw CatalogLoadError.unrecognized(path: url.path, reason: error.description)
        }
        if head.starts(with: Array("SQLite format 3".utf8) + [0]) { return "store" }
        if head.starts(with: Array("bplist00".utf8)) { return "mom" }
        let text = head.drop { [0xEF, 0xBB, 0xBF, 0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return text.first == UInt8(ascii: "{") ? "json" : nil
    }
}
