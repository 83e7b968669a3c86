import ArgumentParser
import Foundation
import StoreRescue
import SRSQLite

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

    /// Every command runs with SIGINT/SIGTERM/SIGHUP handled (`InterruptHandling`: the command or
    /// the interruption, whichever claims the outcome first, prints it and sets the status), SIGXFSZ
    /// ignored (a write past `ulimit -f` fails with EFBIG, reported as exit 74 with its
    /// temporaries removed, instead of killing the process: `create`, `catalog learn` and the
    /// private read copy of `inspect` or `match` write before any writer of their own would
    /// ignore it) and, in text mode, reports the stale temporaries of earlier runs it removed
    /// (JSON carries them itself).
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let json = arguments.contains("--json")
        SafeFileOutput.ignoreFileSizeLimitSignal()
        limitMallocArenas()
        InterruptHandling.install(json: json)
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
            // Every command has printed its outcome by now; this only decides for one that did
            // not (and waits, should an interruption have claimed it: `CommandOutput.claimOutcome`).
            CommandOutput.claimOutcome(exitStatus: 0)
            CommandOutput.reportRemovedStaleItems(json: json)
        } catch {
            // A usage error, `--help`, or the exit code of an error already printed.
            CommandOutput.claimOutcome(exitStatus: exitCode(for: error).rawValue)
            CommandOutput.reportRemovedStaleItems(json: json)
            // A temporary still registered now is garbage (a published one is not registered).
            TemporaryItems.removeLiveItems()
            exit(withError: error)
        }
        TemporaryItems.removeLiveItems()
    }

    /// One malloc arena for every thread, unless `MALLOC_ARENA_MAX` says otherwise. glibc gives
    /// each thread that allocates an arena of its own, and memory freed in one is not reused by
    /// another: `upgrade`'s backup verification, running beside the migration, peaked 59.6-61.3 MB
    /// (once 65.5 MiB, past the 64 MB target) against 55.7-58.1 MB with one arena, on the 796 MB
    /// bench-upgrade store (wall time 26.2-26.8 s against 26.7-29.0 s, within its budget);
    /// salvage's time did not move (hyperfine, 12 runs: --catalog 360.0 against 362.7 ms).
    private static func limitMallocArenas() {
        if getenv("MALLOC_ARENA_MAX") == nil { _ = srsqlite_limit_malloc_arenas(1) }
    }
}
