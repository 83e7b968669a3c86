import ArgumentParser
import StoreRescue

@main
struct StoreRescueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storerescue",
        abstract: "Inspect, back up, upgrade and recover Core Data / SwiftData SQLite stores.",
        subcommands: [
            InspectCommand.self, MatchCommand.self, CatalogCommand.self, CreateCommand.self, BackupCommand.self, VerifyCommand.self, RestoreCommand.self,
            SalvageCommand.self,
        ]
    )
}
