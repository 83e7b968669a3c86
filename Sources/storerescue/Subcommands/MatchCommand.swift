import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue match STORE --catalog CATALOG`: which known version wrote a store, and what the
/// app's latest version will do with it.
struct MatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Match a store to the known versions of its app and predict what the app will do with it.",
        discussion: """
            Weighs the stored hashes, checksum and identifiers, the embedded model cache, the \
            physical schema against each version's exact layout, and (only to break ties) the data. \
            Outcome: exact, ambiguous, drifted, newer, unknown or notCoreData. Never writes \
            anything. Exit status 0 whenever the store was read and weighed, whatever the outcome \
            (read `outcome` from --json); 65/66 as for inspect when the store cannot be read; the \
            catalog's own status (65/66) when the catalog cannot be loaded.
            """)

    @Argument(help: "The store's main file.")
    var store: String

    @Option(help: "The catalog: a catalog file (.json), .xcdatamodeld, .momd, .mom or reference store.")
    var catalog: String

    @Flag(help: "Follow a symbolic link at the store path instead of refusing it.")
    var followSymlinks = false

    @Flag(help: "Print the result as JSON (the contract in Docs/JSON-OUTPUT.md).")
    var json = false

    func run() throws {
        let loaded: Catalog
        do {
            loaded = try Catalog.load(path: catalog)
        } catch {
            throw CommandOutput.failure(error, json: json)
        }
        let result = StoreMatcher.match(storePath: store, catalog: loaded, options: StoreOpenOptions(followsSymlinks: followSymlinks))
        if !json, result.isDamagedOnceMatched, let error = result.error {
            // What it was matched as on stdout, that it is damaged (exit 65) as every error is.
            CommandOutput.write(result.renderText(), exitStatus: result.exitStatus)
            CommandOutput.writeError(message: error.message, hint: error.hint, exitStatus: result.exitStatus.rawValue)
            throw ExitCode(result.exitStatus.rawValue)
        }
        try CommandOutput.finish(result, json: json)
    }
}
