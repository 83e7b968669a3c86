import ArgumentParser
import Dispatch
import Foundation
import StoreRescue
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How every subcommand reports: results as text (people) or JSON (`--json`, jobs); errors as
/// `Error: …` / `Try: …` on stderr, or `{"error": {…}}` on stdout with `--json`; the exit status
/// from the error's `ExitStatus`.
enum CommandOutput {
    /// Prints `error` as the command's failure (`Error:`/`Try:` on stderr, or `{"error": …}` on
    /// stdout with `--json`) and returns the exit code to throw.
    static func failure(_ error: any Error, json: Bool) -> ExitCode {
        let summary: ErrorSummary
        if let error = error as? any OperatorFacingError {
            summary = ErrorSummary(error)
        } else {
            summary = ErrorSummary(
                message: "internal error: \(error)", hint: "report a bug with the command line that failed",
                exitStatus: ExitStatus.internalError.rawValue)
        }
        if json {
            printJSON(["error": summary])
        } else {
            writeError(message: summary.message, hint: summary.hint)
        }
        return ExitCode(summary.exitStatus)
    }

    /// Text for people, on stdout. Every text line the tool prints passes through here or
    /// `writeError`/`writeProblem`: control characters from file and entity names are escaped
    /// and runaway values cut (`TerminalText`), so nothing a file holds reaches the terminal raw.
    static func write(_ text: String) {
        outcomePrinted()
        FileHandle.standardOutput.write(Data(TerminalText.sanitized(text, keepingLineBreaks: true).utf8))
    }

    /// Text for people on stderr (a report of problems), sanitised as `write` does.
    static func writeProblem(_ text: String) {
        FileHandle.standardError.write(Data(TerminalText.sanitized(text, keepingLineBreaks: true).utf8))
    }

    /// `Error: <what failed, which file>` and `Try: <what to do>` on stderr, each one line.
    static func writeError(message: String, hint: String?) {
        outcomePrinted()
        var text = "Error: \(TerminalText.sanitized(message, keepingLineBreaks: false))\n"
        if let hint { text += "Try: \(TerminalText.sanitized(hint, keepingLineBreaks: false))\n" }
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Prints `value` as pretty JSON with sorted keys on stdout, with `staleTemporariesRemoved`
    /// (what this run's sweeps removed, `TemporaryItems`) added to the object.
    static func printJSON(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(WithHousekeeping(value: value, removed: TemporaryItems.removedStaleItems)) else { return }
        outcomePrinted()
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// Any JSON result, plus the stale temporaries this run removed.
    private struct WithHousekeeping<Value: Encodable>: Encodable {
        var value: Value
        var removed: [String]

        func encode(to encoder: any Encoder) throws {
            try value.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(removed, forKey: .staleTemporariesRemoved)
        }

        enum Keys: String, CodingKey { case staleTemporariesRemoved }
    }

    /// In text mode, one line on stdout per stale temporary this run removed (JSON carries them
    /// in `staleTemporariesRemoved`).
    static func reportRemovedStaleItems(json: Bool) {
        guard !json else { return }
        let removed = TemporaryItems.removedStaleItems
        guard !removed.isEmpty else { return }
        write(removed.map { "Removed a stale temporary left by an interrupted run: \($0)\n" }.joined())
    }

    private static let outcomeLock = NSLock()
    nonisolated(unsafe) private static var printedOutcome = false

    /// True once the command has started printing its result or error.
    static var hasPrintedOutcome: Bool {
        outcomeLock.lock()
        defer { outcomeLock.unlock() }
        return printedOutcome
    }

    private static func outcomePrinted() {
        outcomeLock.lock()
        printedOutcome = true
        outcomeLock.unlock()
    }

    /// `1.5 MB`, `217.2 MB`: decimal units, as `ls -h --si` and disk vendors count.
    static func size(_ bytes: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}

/// A step of a long command, as the progress bar shows it.
protocol ProgressReporting {
    var phaseLabel: String { get }
    var fraction: Double { get }
}

extension BackupProgress: ProgressReporting {
    var phaseLabel: String { phase.rawValue }
}

/// `UpgradeProgress` as the progress bar shows it (its fraction is optional: unknown is 0).
struct UpgradeProgressLine: ProgressReporting {
    var phaseLabel: String
    var fraction: Double

    init(_ progress: UpgradeProgress) {
        phaseLabel = progress.phase.rawValue
        fraction = progress.fraction ?? 0
    }
}

extension SalvageProgress: ProgressReporting {
    var phaseLabel: String { phase.rawValue }
}

/// A one-line progress bar on stderr, only when stderr is a terminal (never in a pipe or a log).
final class ProgressBar {
    private var lastDrawn = -1
    private var lastPhase = ""

    /// A bar, or nil when stderr is not a terminal or JSON output was asked for.
    static func make(json: Bool) -> ProgressBar? {
        !json && isatty(STDERR_FILENO) == 1 ? ProgressBar() : nil
    }

    func update(_ progress: some ProgressReporting) {
        let percent = Int(progress.fraction * 100)
        guard percent != lastDrawn || progress.phaseLabel != lastPhase else { return }
        lastDrawn = percent
        lastPhase = progress.phaseLabel
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        let label = progress.phaseLabel.padding(toLength: 10, withPad: " ", startingAt: 0)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(percent)%".utf8))
    }

    /// Erases the bar so that what follows starts on a clean line.
    func clear() {
        guard lastDrawn >= 0 else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        lastDrawn = -1
    }
}

/// SIGINT, SIGTERM and SIGHUP, for every command: the first sets `cancellation`, which long jobs
/// poll to stop at their next step and remove their partial files (exit 75). A command that does
/// not stop within `grace` — blocked in a read or inside SQLite — and any second signal end the
/// process from here: running publish steps are let finish (`TemporaryItems.uninterruptible`),
/// every live temporary is removed, the error is printed and the exit status is 75.
enum InterruptHandling {
    /// Set by the first signal.
    static let cancellation = CancellationFlag()
    /// How long a command has to stop by itself after the first signal.
    static let grace: TimeInterval = 1
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    nonisolated(unsafe) private static var received = 0
    nonisolated(unsafe) private static var isJSON = false
    private static let queue = DispatchQueue(label: "storerescue.interrupts")

    static func install(json: Bool) {
        isJSON = json
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                received += 1
                cancellation.cancel()
                if received == 1 {
                    queue.asyncAfter(deadline: .now() + grace) { terminate(signal: number) }
                } else {
                    terminate(signal: number)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Ends the process on an interruption the command did not handle itself.
    private static func terminate(signal number: Int32) {
        guard !CommandOutput.hasPrintedOutcome else { return }  // the command is ending by itself
        TemporaryItems.removeLiveItems()
        let name = [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"][number] ?? "signal \(number)"
        let error = InterruptedError(signalName: name)
        _ = CommandOutput.failure(error, json: isJSON)
        _exit(error.exitStatus.rawValue)
    }
}

/// A command stopped by a signal before it finished.
struct InterruptedError: OperatorFacingError {
    var signalName: String
    var description: String { "interrupted by \(signalName); temporary files were removed and nothing was replaced" }
    var recoverySuggestion: String? { "run the command again when it can finish" }
    var exitStatus: ExitStatus { .temporaryFailure }
}

/// A result a command prints whole: JSON for jobs, text for people, or its error.
protocol CommandReport: Encodable {
    /// Set when the command failed: printed as `Error:`/`Try:` in text mode.
    var error: ErrorSummary? { get }
    /// The status the command exits with (a report can fail without an error, e.g. `--deep`).
    var exitStatus: ExitStatus { get }
    var renderedText: String { get }
}

extension CommandOutput {
    /// Prints `report` — JSON with `--json`, otherwise its text or its error — and throws the
    /// exit code its status gives (nothing for success).
    static func finish(_ report: some CommandReport, json: Bool) throws {
        if json {
            printJSON(report)
        } else if let error = report.error {
            writeError(message: error.message, hint: error.hint)
        } else {
            write(report.renderedText)
        }
        if report.exitStatus != .success { throw ExitCode(report.exitStatus.rawValue) }
    }
}

extension InspectionReport: CommandReport {
    var renderedText: String { renderText() }
}

extension MatchResult: CommandReport {
    var renderedText: String { renderText() }
}

extension CatalogReport: CommandReport {
    var renderedText: String { renderText() }
}

extension CommandOutput {
    /// Runs a long job with a progress bar on a terminal (none on a pipe or with `--json`) and
    /// Ctrl-C wired to its cancellation flag. The bar is erased before anything else is printed;
    /// a failure is printed as the command's error and comes back as its exit code.
    static func withProgress<Result, Progress: ProgressReporting>(
        json: Bool, _ work: (_ progress: ((Progress) -> Void)?, _ cancellation: CancellationFlag) throws -> Result
    ) throws -> Result {
        let cancellation = InterruptHandling.cancellation
        let bar = ProgressBar.make(json: json)
        do {
            let result = try work(bar.map { bar in { bar.update($0) } }, cancellation)
            bar?.clear()
            return result
        } catch {
            bar?.clear()
            throw failure(error, json: json)
        }
    }
}

extension CommandOutput {
    /// Runs a migration with a phase line on a terminal (none on a pipe or with `--json`) and
    /// Ctrl-C wired to its cancellation flag.
    static func withMigrationProgress<Result>(
        json: Bool, _ work: (_ progress: ((MigrationProgress) -> Void)?, _ cancellation: CancellationFlag) -> Result
    ) -> Result {
        let cancellation = InterruptHandling.cancellation
        let isTerminal = !json && isatty(STDERR_FILENO) == 1
        var last = ""
        let result = work(isTerminal ? { progress in
            let line = "\r\(progress.phase.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) \(progress.completed)/\(progress.total)"
            guard line != last else { return }
            last = line
            FileHandle.standardError.write(Data(line.utf8))
        } : nil, cancellation)
        if isTerminal, !last.isEmpty { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        return result
    }
}

