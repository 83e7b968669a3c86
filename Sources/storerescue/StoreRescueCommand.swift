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
        let json = CommandOutput.asksForJSON(arguments)
        SafeFileOutput.ignoreFileSizeLimitSignal()
        limitMallocArenas()
        InterruptHandling.install(json: json)
        do {
            if let stray = OperandWords.shortOptionGroup(in: arguments) {
                throw CommandOutput.failure(stray, json: json)
            }
            var command = try parseAsRoot(arguments)
            try command.run()
            // Every command has printed its outcome by now; this only decides for one that did
            // not (and waits, should an interruption have claimed it: `CommandOutput.claimOutcome`).
            CommandOutput.claimOutcome(exitStatus: 0)
            CommandOutput.reportRemovedStaleItems(json: json)
        } catch {
            // A usage error, `--help`, or the exit code of an error already printed.
            let status = exitCode(for: error).rawValue
            CommandOutput.claimOutcome(exitStatus: status)
            if json, let summary = unprintedFailure(error, exitStatus: status) {
                // A job parsing stdout gets its one JSON document for a wrong command line too
                // (`--level 12`, a missing `--out`); the usage text stays on stderr.
                CommandOutput.printJSON(["error": summary], exitStatus: ExitStatus(rawValue: status) ?? .usage)
            }
            CommandOutput.reportRemovedStaleItems(json: json)
            // A temporary still registered now is garbage (a published one is not registered).
            TemporaryItems.removeLiveItems()
            exit(withError: error)
        }
        TemporaryItems.removeLiveItems()
    }

    /// The error object for a failure nothing has printed yet: argument-parser's parse and
    /// validation errors (64), or anything else a command threw without printing it. Nil for
    /// `--help` (a clean exit, printed by argument-parser) and for the `ExitCode` of an error a
    /// command has printed itself.
    private static func unprintedFailure(_ error: any Error, exitStatus: Int32) -> ErrorSummary? {
        // `--help` after an operand (`backup x --help`) reaches here as argument-parser's own
        // error type, not `CleanExit`, with status 0: it printed an "error" then (review rv10 #1).
        if error is ExitCode || error is CleanExit || exitStatus == 0 { return nil }
        // One line, as every error's message is.
        let what = Self.message(for: error).components(separatedBy: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
        // argument-parser's full message ends with the usage and "See '… --help' for more
        // information."; the hint is those lines, as one.
        let full = Self.fullMessage(for: error)
        let help = full.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let usage = help.drop { !$0.hasPrefix("Usage:") }.prefix { !$0.isEmpty && !$0.hasPrefix("See '") }
        let seeHelp = help.first { $0.hasPrefix("See '") }.map { "s" + $0.dropFirst() }
        var hint = [usage.joined(separator: " "), seeHelp ?? ""].filter { !$0.isEmpty }.joined(separator: "; ")
        if hint.isEmpty { hint = "see 'storerescue --help'" }
        return ErrorSummary(
            message: what.isEmpty ? "the command line is wrong" : what, hint: hint, exitStatus: exitStatus)
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
