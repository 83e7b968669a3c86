import Foundation

/// A catalog file: the JSON document that lists an app's known versions, each taken from a
/// model folder, a compiled model, a reference store, or defined inline (Docs/CATALOG.md).
///
/// Reading checks the document's shape (types, unknown keys, one source per version) and
/// decodes inline definitions; `loadCatalog()` then resolves every reference (relative paths
/// against the file's folder) into a `Catalog`. The parsed document is kept, so appending a
/// version and writing back changes nothing else in the file but indentation.
///
/// ```swift
/// let catalog = try CatalogFile.read(path: "Samples/Journal/catalog.json").loadCatalog()
/// ```
public struct CatalogFile: Sendable, Equatable {
    /// The format this tool writes and the newest it reads.
    public static let formatVersion = 1
    /// The largest catalog file read.
    public static let maximumBytes = 32 << 20

    static let topLevelKeys = ["formatVersion", "app", "current", "notes", "versions", "stages"]
    static let versionKeys = [
        "name", "notes", "versionChecksum", "xcdatamodeld", "xcdatamodel", "momd", "mom", "store", "version",
        "identifiers", "compiled", "entities",
    ]
    static let sourceKeys = ["xcdatamodeld", "xcdatamodel", "momd", "mom", "store", "entities"]

    /// Where a version's model comes from.
    public enum Source: Sendable, Equatable {
        /// Every version of a model folder, or only `version`.
        case xcdatamodeld(path: String, version: String?)
        case xcdatamodel(path: String)
        /// Every version of a compiled model folder, or only `version`.
        case momd(path: String, version: String?)
        case mom(path: String)
        /// A reference store's model cache.
        case store(path: String)
        case inline(ManagedObjectModel)
    }

    /// One element of `versions`.
    public struct Entry: Sendable, Equatable {
        /// The version's name; nil for an entry importing every version of a folder under its own names.
        public var name: String?
        public var source: Source
        /// The checksum the version must have, when declared.
        public var versionChecksum: String?
        public var notes: String?
        /// Where the entry is in the file (`versions[2]`).
        public var jsonPath: String
    }

    /// The file's path, as given.
    public let path: String
    public internal(set) var app: String
    public internal(set) var currentVersionName: String?
    public internal(set) var entries: [Entry]
    public internal(set) var stages: [CatalogStage]
    /// The document as read, for writing back.
    var document: [JSONMember]
    /// The file as it was when read (nil for a new catalog), so a concurrent change is noticed on write.
    var readFingerprint: FileFingerprint?

    /// A new, empty catalog for `app`, to be written at `path`.
    public init(newAt path: String, app: String) {
        self.path = path
        self.app = app
        currentVersionName = nil
        entries = []
        stages = []
        readFingerprint = nil
        document = [
            JSONMember("formatVersion", .number(String(Self.formatVersion))), JSONMember("app", .string(app)),
            JSONMember("versions", .array([])),
        ]
    }

    /// Reads and checks the catalog file at `path` (at most `maximumBytes`).
    ///
    /// - Throws: `CatalogFileError` naming the file and, for content problems, the line or JSON path.
    public static func read(path: String) throws -> CatalogFile {
        let fingerprint = FileFingerprint(path: path)
        let data: Data
        do {
            data = try BoundedFile.contents(of: path, limit: maximumBytes)
        } catch .tooManyOpenFiles {
            throw CatalogFileError.tooManyOpenFiles(path: path)
        } catch {
            throw CatalogFileError.unreadable(path: path, reason: error.description, status: error.exitStatus)
        }
        var file = try parse(data, path: path)
        file.readFingerprint = fingerprint
        return file
    }

    /// Parses catalog JSON; `path` names the file in errors and anchors relative paths.
    public static func parse(_ data: Data, path: String) throws -> CatalogFile {
        let root: JSONValue
        do {
            root = try JSONParser.parse(data)
        } catch {
            throw CatalogFileError.malformedJSON(path: path, line: error.line, column: error.column, reason: error.reason)
        }
        let object = try JSONObjectReader(root, path: "", file: path, allowedKeys: topLevelKeys)
        if let format = object.value("formatVersion") {
            guard case .number(let literal) = format, let number = Int(literal), number >= 1 else {
                throw object.invalid("formatVersion", "expected a whole number from 1, found \(JSONWriter.compactForm(format))")
            }
            guard number <= formatVersion else { throw CatalogFileError.unsupportedFormatVersion(path: path, found: literal) }
        }
        var file = CatalogFile(newAt: path, app: try object.string("app"))
        file.document = object.members
        file.currentVersionName = try object.optionalString("current")
        guard let versions = try object.array("versions") else { throw object.invalid("versions", "required, and missing (an array of versions)") }
        let decoder = InlineModelDecoder(file: path)
        file.entries = try versions.map { try entry($0.value, path: $0.path, decoder: decoder) }
        let stageReader = CatalogStageReader(file: path)
        file.stages = try (object.array("stages") ?? []).map { try stageReader.stage($0.value, path: $0.path) }
        return file
    }

    private static func entry(_ value: JSONValue, path: String, decoder: InlineModelDecoder) throws -> Entry {
        let object = try JSONObjectReader(value, path: path, file: decoder.file, allowedKeys: versionKeys)
        let present = sourceKeys.filter { object.value($0) != nil }
        guard present.count == 1, let kind = present.first else {
            let reason = present.isEmpty
                ? "a version needs one source: \(sourceKeys.dropLast().joined(separator: ", ")) or entities (an inline definition)"
                : "a version has one source, this one has \(present.joined(separator: " and "))"
            throw CatalogFileError.invalidValue(path: decoder.file, jsonPath: path, reason: reason)
        }
        let version = try object.optionalString("version")
        if version != nil && kind != "xcdatamodeld" && kind != "momd" {
            throw object.invalid("version", "only an xcdatamodeld or momd source has versions to pick from")
        }
        for key in ["identifiers", "compiled"] where kind != "entities" && object.value(key) != nil {
            throw object.invalid(key, "only an inline definition (entities) takes \(key); other sources carry their own")
        }
        let source: Source
        switch kind {
        case "xcdatamodeld": source = .xcdatamodeld(path: try object.string(kind), version: version)
        case "xcdatamodel": source = .xcdatamodel(path: try object.string(kind))
        case "momd": source = .momd(path: try object.string(kind), version: version)
        case "mom": source = .mom(path: try object.string(kind))
        case "store": source = .store(path: try object.string(kind))
        default:
            guard let entities = try object.array("entities") else { throw object.invalid("entities", "required") }
            let model = try decoder.model(
                entities: entities, identifiers: try object.stringArray("identifiers") ?? [],
                isCompiled: try object.bool("compiled", default: false))
            source = .inline(model)
        }
        let name = try object.optionalString("name")
        let importsAll: Bool
        switch source {
        case .xcdatamodeld(_, nil), .momd(_, nil): importsAll = true
        default: importsAll = false
        }
        if importsAll && name != nil {
            throw object.invalid("name", "an entry importing every version of \(kind) keeps their own names; add \"version\" to pick one and name it")
        }
        if importsAll && object.value("versionChecksum") != nil {
            throw object.invalid("versionChecksum", "applies to one version; add \"version\" to pick it")
        }
        if case .inline = source, name == nil { throw object.invalid("name", "required, and missing (an inline version needs a name)") }
        return Entry(
            name: name, source: source, versionChecksum: try object.optionalString("versionChecksum"),
            notes: try object.optionalStringAllowingEmpty("notes"), jsonPath: path)
    }
}
