import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue inspect STORE`: say what a file is, without changing a byte of it.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Read a store without altering it and report what it is and what is wrong.",
        discussion: """
            Never writes next to the input: a store whose -wal or -journal holds data is read \
            through a private copy; otherwise the original is opened immutably. Exit status 0 \
            when the input was read (findings or not); 65 when it is not a readable store; 66 \
            when it is missing, unreadable, a directory or a refused symlink; 64 on usage errors.
            """)

    @Argument(help: "The store's main file (e.g. default.store, Model.sqlite).")
    var store: String

    @Flag(help: "Count rows per entity and per table (reads the data, not only the schema).")
    var counts = false

    @Flag(help: "Run SQLite's quick_check over every page.")
    var deep = false

    @Flag(help: "Follow a symbolic link at the store path instead of refusing it.")
    var followSymlinks = false

    @Flag(help: "Print the report as JSON (the contract in Docs/JSON-OUTPUT.md).")
    var json = false

    func run() throws {
        let options = InspectOptions(
            countsRows: counts, checksIntegrity: deep, open: StoreOpenOptions(followsSymlinks: followSymlinks))
        let report = StoreInspector.inspect(path: store, options: options)
        try CommandOutput.finish(report, json: json)
    }
}
