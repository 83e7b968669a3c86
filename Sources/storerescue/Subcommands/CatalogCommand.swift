import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue catalog …`: the app's known schema versions.
struct CatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Show or extend the catalog of an app's known model versions.",
        discussion: """
            A catalog lists every schema version an app has shipped, oldest first, from its \
            .xcdatamodeld, compiled .momd, reference stores, or inline definitions in a catalog \
            file (Docs/CATALOG.md).
            """,
        subcommands: [Show.self, Learn.self])

    /// `storerescue catalog show CATALOG [--json]`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a catalog's versions with their hashes, checksums, current version and stages.",
            discussion: """
                CATALOG is a catalog file (.json), an .xcdatamodeld or .xcdatamodel folder, a .momd \
                folder, a .mom file, or a store (one version, from its model cache). Versions whose \
                checksums are equal are reported as a warning: a staged migration cannot tell them \
                apart. Exit status 0 when the catalog loaded (warnings or not); 65 when it is \
                invalid; 66 when it or a file it names is missing; 74 when no file descriptor \
                was left to read it (ulimit -n).
                """)

        @Argument(help: "The catalog file, model folder, compiled model or store.")
        var catalog: String

        @Flag(help: "Print the report as JSON (the contract in Docs/CATALOG.md).")
        var json = false

        func run() throws {
            let report: CatalogReport
            do {
                report = CatalogReport(catalog: try Catalog.load(path: catalog), path: catalog)
            } catch let error as any OperatorFacingError {
                report = CatalogReport(failedPath: catalog, error: error)
            }
            try CommandOutput.finish(report, json: json)
        }
    }

    /// `storerescue catalog learn STORE --catalog FILE --name NAME [--app APP]`.
    struct Learn: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add the version a reference store was written by (its model cache) to a catalog file.",
            discussion: """
                Reads the store's own Z_MODELCACHE (never modifying the store) and appends it to the \
                catalog as an inline version named NAME, creating the catalog when --app is given. \
                Refuses a name the catalog already has (exit 73), a catalog that does not load, and a \
                store without a model cache (exit 65). The catalog is replaced atomically.
                """)

        @Argument(help: "The reference store's main file.")
        var store: String

        @Option(help: "The catalog file (JSON) to add the version to.")
        var catalog: String

        @Option(help: "The name of the new version (e.g. V3).")
        var name: String

        @Option(help: "The app's name: required to create the catalog; must match an existing one.")
        var app: String?

        @Flag(help: "Learn and check, but do not write the catalog.")
        var dryRun = false

        @Flag(help: "Follow a symbolic link at the store path instead of refusing it.")
        var followSymlinks = false

        @Flag(help: "Print the result as JSON (the contract in Docs/CATALOG.md).")
        var json = false

        func validate() throws {
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("--name must not be empty") }
            if let app, app.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--app must not be empty") }
        }

        func run() throws {
            let outcome: LearnOutcome
            do {
                let result = try CatalogLearner.learn(
                    store: store, catalog: catalog, name: name, app: app, dryRun: dryRun,
                    storeOptions: StoreOpenOptions(followsSymlinks: followSymlinks))
                outcome = LearnOutcome(result: result)
            } catch let error as any OperatorFacingError {
                outcome = LearnOutcome(catalog: catalog, error: error)
            }
            try CommandOutput.finish(outcome, json: json)
        }
    }
}

/// The result of `catalog learn`, for people and for `--json`.
struct LearnOutcome: CommandReport {
    var catalog: String
    @NullEncoded var version: CatalogReport.Version?
    var createdCatalog: Bool
    var written: Bool
    var warnings: [String]
    @NullEncoded var error: CatalogReport.ErrorSummary?

    init(result: CatalogLearnResult) {
        catalog = result.catalogPath
        let single = Catalog(name: "", versions: [result.version], sourcePath: result.catalogPath)
        version = CatalogReport(catalog: single, path: result.catalogPath).versions.first
        createdCatalog = result.createsCatalog
        written = result.wasWritten
        warnings = result.sameChecksumAs.isEmpty
            ? []
            : ["the learned version has the same checksum as \(result.sameChecksumAs.map { "\"\($0)\"" }.joined(separator: ", ")): a staged migration cannot tell them apart"]
        error = nil
    }

    init(catalog: String, error: any OperatorFacingError) {
        self.catalog = catalog
        version = nil
        createdCatalog = false
        written = false
        warnings = []
        self.error = CatalogReport.ErrorSummary(error)
    }

    var exitStatus: ExitStatus {
        guard let error else { return .success }
        return ExitStatus(rawValue: error.exitStatus) ?? .internalError
    }

    var renderedText: String {
        guard let version else { return "" }
        let action = written ? (createdCatalog ? "created" : "updated") : "dry run, not written; would have \(createdCatalog ? "created" : "updated")"
        var text = "\(oneLine: catalog): \(action)\n"
        text += "Added version \"\(oneLine: version.name)\" (\(version.entityCount) entities, identifiers \(oneLine: version.versionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", ")))\n"
        text += "  Checksum  \(version.versionChecksum)\n"
        for warning in warnings { text += "warning: \(oneLine: warning)\n" }
        return text
    }
}
