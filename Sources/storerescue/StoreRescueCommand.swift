import ArgumentParser
import Foundation
import StoreRescue

@main
struct StoreRescueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storerescue",
        abstract: "Inspect, back up, upgrade and recover Core Data / SwiftData SQLite stores.",
        subcommands: [
            InspectCommand.self, MatchCommand.self, CatalogCommand.self, CreateCommand.self, MigrateCommand.self, BackupCommand.self, VerifyCommand.self, RestoreCommand.self,
            SalvageCommand.self, UpgradeCommand.self, AdoptCommand.self,
        ]
    )

    /// Every command runs with SIGINT/SIGTERM/SIGHUP handled (`InterruptHandling`), SIGXFSZ
    /// ignored (a write past `ulimit -f` fails with EFBIG, reported as exit 74 with its
    /// temporaries removed, instead of killing the process: `create`, `catalog learn` and the
    /// private read copy of `inspect` or `match` write before any writer of their own would
    /// ignore it) and, in text mode, reports the stale temporaries of earlier runs it removed
    /// (JSON carries them itself).
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let json = arguments.contains("--json")
        SafeFileOutput.ignoreFileSizeLimitSignal()
        InterruptHandling.install(json: json)
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
            CommandOutput.reportRemovedStaleItems(json: json)
        } catch {
            CommandOutput.reportRemovedStaleItems(json: json)
            // A temporary still registered now is garbage (a published one is not registered).
            TemporaryItems.removeLiveItems(waitingAtMost: 0)
            exit(withError: error)
        }
        TemporaryItems.removeLiveItems(waitingAtMost: 0)
    }
}
