import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue migrate STORE --catalog CATALOG --out NEW_STORE`: a store taken to a later version
/// of its model, as the app's own migration would leave it, written to a new file.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate a store to a later version of its model, into a new file (the original is never written).",
        discussion: """
            The store's version comes from match (or --from); the hops from the catalog's stages \
            (Core Data's staged-migration rules; with no stages, one automatic lightweight hop). \
            Every hop and entity is listed with what is kept, added, renamed and discarded (with \
            counts), and every refusal with what to do. NEW_STORE must not exist; it appears \
            complete and verified or not at all. Exit status: 0 migrated (or, with --dry-run, can \
            migrate); 2 already at the target (nothing written); 3 refused (nothing written); 64 \
            usage; 65/66 the store or catalog cannot be read; 73 NEW_STORE exists or its folder is \
            unusable; 74 writing failed; 75 interrupted or the store changed meanwhile. See Docs/MIGRATE.md.
            """)

    @Argument(help: "The store's main file (never written).")
    var store: String

    @Option(help: "The catalog: a catalog file (.json), .xcdatamodeld, .momd, .mom or reference store.")
    var catalog: String

    @Option(name: .customLong("out"), help: ArgumentHelp("The new store's path (must not exist).", valueName: "new-store"))
    var output: String?

    @Option(help: "The version to migrate to (default: the latest the plan reaches).")
    var to: String?

    @Option(help: "The store's version, overriding what match finds.")
    var from: String?

    @Flag(help: "Plan and count; write nothing.")
    var dryRun = false

    @Flag(help: "Verify the result with the full integrity_check instead of quick_check.")
    var fullCheck = false

    @Flag(help: "Follow a symbolic link at the store path instead of refusing it.")
    var followSymlinks = false

    @Flag(help: "Print the report as JSON (the contract in Docs/JSON-OUTPUT.md).")
    var json = false

    func validate() throws {
        if output == nil && !dryRun { throw ValidationError("Give --out NEW_STORE (or --dry-run to only plan).") }
    }

    func run() throws {
        let options = MigrationOptions(
            targetVersion: to, sourceVersion: from, isDryRun: dryRun, followsSymlinks: followSymlinks, fullIntegrityCheck: fullCheck)
        let report = CommandOutput.withMigrationProgress(json: json) { progress, cancellation in
            StoreMigrator.migrate(store: store, catalogAt: catalog, to: output ?? "", options: options, progress: progress, cancellation: cancellation)
        }
        try CommandOutput.finish(report, json: json)
    }
}

extension MigrationReport: CommandReport {
    var renderedText: String { renderText() }
}
