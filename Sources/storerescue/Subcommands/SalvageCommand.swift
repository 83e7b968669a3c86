import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue salvage STORE --out NEW_STORE [--catalog CATALOG [--version V]] [--json]`
struct SalvageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Recover every readable row of a damaged store, page by page, into a new store.",
        discussion: """
            Reads STORE (and its -wal, where the frames' checksums hold) without changing a byte \
            and without SQLite, so it works on stores SQLite refuses to open. With --catalog, \
            NEW_STORE is a Core Data store of the version the store was (or --version), ready \
            for an upgrade; without, a plain SQLite database with one table per recovered table \
            and lost_and_found_<n> / deleted_and_found_<n> tables. NEW_STORE is built privately \
            and appears complete or not at all; it must not exist (there is no --force). Exit \
            status 0 when salvaged (read the report for what was lost); 65 when the input holds \
            no SQLite page or its version cannot be told; 66 when it is missing; 73 when \
            NEW_STORE is in the way; 74 when writing failed; 75 when interrupted. See \
            Docs/SALVAGE.md.
            """)

    @Argument(help: "The damaged store's main file (e.g. default.store), not its -wal or -shm.")
    var store: String

    @Option(name: .customLong("out"), help: ArgumentHelp("The new store's path. Must not exist, nor its -wal, -shm or -journal.", valueName: "new-store"))
    var output: String

    @Option(help: "The app's catalog (.xcdatamodeld, .momd, catalog JSON, reference store): write a Core Data store.")
    var catalog: String?

    @Option(help: "The catalog version to rebuild (default: the one the store's metadata, model cache or schema names).")
    var version: String?

    @Flag(help: "Read the store through a symbolic link at its path (refused by default).")
    var followSymlinks = false

    @Flag(help: "Print the report (or the error) as JSON on stdout.")
    var json = false

    func validate() throws {
        if version != nil, catalog == nil { throw ValidationError("--version goes with --catalog.") }
    }

    func run() throws {
        // A link followed is read as its target, with the target's -wal (as SQLite would).
        let source = followSymlinks ? InputProbe.followingSymlink(at: store) : store
        let report = try CommandOutput.withProgress(json: json) { (progress: ((SalvageProgress) -> Void)?, cancellation) in
            // Refuse an occupied output before loading any catalog: cheap, and independent of it.
            try Salvager.checkOutput(output, store: source)
            let options = SalvageOptions(
                catalog: try catalog.map { try Catalog.load(path: $0) }, versionName: version, followsSymlinks: followSymlinks)
            return try Salvager.salvage(store: source, into: output, options: options, progress: progress, cancellation: cancellation)
        }
        if json {
            CommandOutput.printJSON(report)
        } else {
            CommandOutput.write(report.renderText())
        }
    }
}
