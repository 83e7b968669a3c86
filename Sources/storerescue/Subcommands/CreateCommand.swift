import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue create`: write an empty store laid out exactly as Core Data lays out one model
/// version, stamped as that version.
struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create an empty store laid out exactly as Core Data would for one model version.",
        discussion: """
            The model comes from a catalog version (--catalog CATALOG --version NAME) or from a \
            single file (--model PATH: a compiled .mom, or a store whose Z_MODELCACHE holds its \
            model). The store is built privately in the destination folder and appears at OUT \
            complete or not at all. OUT must not exist, nor OUT-wal, OUT-shm or OUT-journal: \
            create never overwrites and has no --force. Exit status 0 when created; 73 when OUT \
            or a sidecar exists, OUT is a symbolic link or its folder is unusable; 74 when \
            writing failed; 65 when the model is unreadable or cannot be laid out; 66 when the \
            model file is missing; 64 on usage errors.
            """)

    @Option(help: "The catalog to take the version from.")
    var catalog: String?

    @Option(help: "The version's name in the catalog (with --catalog).")
    var version: String?

    @Option(help: "A compiled model (.mom) or a store whose model cache holds the model (instead of --catalog).")
    var model: String?

    @Argument(help: "The new store's path. Must not exist, nor its -wal, -shm or -journal.")
    var output: String

    @Flag(help: "Add the persistent history tables (SwiftData stores and apps tracking history have them).")
    var history = false

    @Option(help: "The NSPersistenceFrameworkVersion to stamp; it decides which metadata keys are written.")
    var frameworkVersion = StoreMetadataWriter.defaultFrameworkVersion

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        switch (catalog, model) {
        case (nil, nil): throw ValidationError("Give --catalog CATALOG --version NAME, or --model PATH.")
        case (.some, .some): throw ValidationError("Give either --catalog or --model, not both.")
        case (.some, nil) where version == nil: throw ValidationError("--catalog needs --version NAME.")
        case (nil, .some) where version != nil: throw ValidationError("--version goes with --catalog, not --model.")
        default: break
        }
        guard (1...99_999).contains(frameworkVersion) else {
            throw ValidationError("--framework-version must be a framework build number such as 1523.")
        }
    }

    func run() throws {
        do {
            // Refuse an occupied target before reading any model: cheap, and independent of the source.
            try StoreCreator.checkTarget(output)
            let source = try resolveSource()
            let result = try StoreCreator.create(
                model: source.model, versionIdentifiers: source.versionIdentifiers, at: output,
                options: StoreCreationOptions(includesPersistentHistory: history, frameworkVersion: frameworkVersion))
            if json {
                CommandOutput.printJSON(CreateReport(result: result, source: source.description))
            } else {
                CommandOutput.write(Self.renderText(result, source: source.description))
            }
        } catch {
            throw CommandOutput.failure(error, json: json)
        }
    }

    struct ResolvedSource {
        var model: ManagedObjectModel
        var versionIdentifiers: [String]?
        var description: CreateReport.Source
    }

    private func resolveSource() throws -> ResolvedSource {
        if let catalog, let version {
            let loaded = try Catalog.load(path: catalog)
            guard let entry = loaded.version(named: version) else {
                throw CreateInputError.unknownVersion(catalog: catalog, version: version, available: loaded.versions.map(\.name))
            }
            return ResolvedSource(
                model: entry.model, versionIdentifiers: entry.versionIdentifiers,
                description: .init(kind: "catalog", path: catalog, version: entry.name))
        }
        let path = model ?? ""
        return ResolvedSource(
            model: try ModelFileLoader.load(path: path), versionIdentifiers: nil,
            description: .init(kind: "model", path: path, version: nil))
    }

    static func renderText(_ result: StoreCreationResult, source: CreateReport.Source) -> String {
        let from = source.version.map { "catalog \(oneLine: source.path), version \"\(oneLine: $0)\"" } ?? "model \(oneLine: source.path)"
        let userTables = result.tables.count - 3 - (result.includesPersistentHistory ? 3 : 0)
        return """
            Created \(oneLine: result.path)
              from:        \(from)
              entities:    \(result.entityCount) in \(userTables) table\(userTables == 1 ? "" : "s"), \(result.indexCount) index\(result.indexCount == 1 ? "" : "es")
              history:     \(result.includesPersistentHistory ? "ACHANGE, ATRANSACTION, ATRANSACTIONSTRING" : "none")
              identifiers: \(oneLine: result.versionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", "))
              framework:   \(result.frameworkVersion)
              checksum:    \(result.versionChecksum)\(result.frameworkVersion < 1333 ? " (not stamped: framework \(result.frameworkVersion) predates NSStoreModelVersionChecksumKey)" : "")
              store UUID:  \(result.uuid)
            Z_MODELCACHE is left empty; Core Data fills it the next time the app saves.

            """
    }
}

/// `create --json` output: the creation result and where the model came from.
struct CreateReport: Encodable {
    struct Source: Encodable {
        /// `catalog` or `model`.
        var kind: String
        var path: String
        @NullEncoded var version: String?
    }

    var result: StoreCreationResult
    var source: Source

    func encode(to encoder: any Encoder) throws {
        try result.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(source, forKey: .source)
        try container.encodeNil(forKey: .error)
    }

    enum Keys: String, CodingKey { case source, error }
}

/// A command line naming something the input does not have.
enum CreateInputError: OperatorFacingError {
    case unknownVersion(catalog: String, version: String, available: [String])

    var description: String {
        switch self {
        case .unknownVersion(let catalog, let version, _): return "catalog \(catalog) has no version \"\(version)\""
        }
    }

    var recoverySuggestion: String? {
        switch self {
        case .unknownVersion(_, _, let available):
            return available.isEmpty ? "the catalog lists no versions" : "use one of: \(available.map { "\"\($0)\"" }.joined(separator: ", "))"
        }
    }

    var exitStatus: ExitStatus { .usage }
}
