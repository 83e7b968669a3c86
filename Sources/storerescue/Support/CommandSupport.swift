import ArgumentParser
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
///
/// Printing the outcome (a result, an error, a report) first claims it
/// (`InterruptionLedger.claimOutcome`): when an interruption has claimed it already, the command
/// prints nothing and waits for `InterruptHandling` to end the process, so exactly one outcome —
/// and with `--json` exactly one JSON document — is ever printed.
enum CommandOutput {
    /// Prints `error` as the command's failure (`Error:`/`Try:` on stderr, or `{"error": …}` on
    /// stdout with `--json`) and returns the exit code to throw. After a signal, a failure the
    /// interruption explains is reported as the interruption (`InterruptHandling.interruption`).
    static func failure(_ error: any Error, json: Bool) -> ExitCode {
        let summary = summary(of: error)
        if let interruption = InterruptHandling.interruption(explaining: summary) {
            claimOutcome(exitStatus: interruption.exitStatus.rawValue)
            printInterruption(interruption, json: json)
            return ExitCode(interruption.exitStatus.rawValue)
        }
        claimOutcome(exitStatus: summary.exitStatus)
        if json {
            emitJSON(["error": summary])
        } else {
            emitError(message: summary.message, hint: summary.hint)
        }
        return ExitCode(summary.exitStatus)
    }

    /// Whether the command line asks for `--json`: the flag given before a `--` (after it,
    /// `--json` would be an operand, a file of that name). Decided from the words themselves, so
    /// that a command line argument-parser refuses still gets its error as JSON. A value given
    /// as `--out=--json` is one word and does not count; `--out --json` is refused by
    /// argument-parser (a missing value), with `--json` read as the flag.
    static func asksForJSON(_ arguments: [String]) -> Bool {
        arguments.prefix { $0 != "--" }.contains("--json")
    }

    /// `error` as the operator reads it; anything not operator-facing is a bug (70).
    static func summary(of error: any Error) -> ErrorSummary {
        if let error = error as? any OperatorFacingError { return ErrorSummary(error) }
        return ErrorSummary(
            message: "internal error: \(error)", hint: "report a bug with the command line that failed",
            exitStatus: ExitStatus.internalError.rawValue)
    }

    /// Prints an interruption, whoever claimed the outcome for it: `Error:` (or `Warning:` when
    /// the final result is in place) and `Try:`, or `{"error": …}` with `--json`.
    static func printInterruption(_ error: InterruptedError, json: Bool) {
        if json {
            emitJSON(["error": ErrorSummary(error)])
        } else {
            emitError(label: error.isAfterPublishing ? "Warning" : "Error", message: error.description, hint: error.recoverySuggestion)
        }
    }

    /// Claims the outcome for the command, which will exit with `exitStatus`. When the
    /// interruption claimed it first, never returns: the command prints nothing more and exits
    /// with no status of its own — `InterruptHandling` ends the process.
    static func claimOutcome(exitStatus: Int32) {
        guard TemporaryItems.ledger.claimOutcome(exitStatus: exitStatus) else { InterruptHandling.waitForTheEnd() }
    }

    /// Text for people, on stdout: the command's outcome (claimed with `exitStatus`), or more of
    /// it. Every text line the tool prints passes through here or `writeError`/`writeProblem`:
    /// control characters from file and entity names are escaped and runaway values cut
    /// (`TerminalText`), so nothing a file holds reaches the terminal raw.
    static func write(_ text: String, exitStatus: ExitStatus = .success) {
        claimOutcome(exitStatus: exitStatus.rawValue)
        FileHandle.standardOutput.write(Data(TerminalText.sanitized(text, keepingLineBreaks: true).utf8))
    }

    /// Text for people on stderr (a report of problems), sanitised as `write` does. A report
    /// that is the outcome claims it first (`claimOutcome`).
    static func writeProblem(_ text: String) {
        FileHandle.standardError.write(Data(TerminalText.sanitized(text, keepingLineBreaks: true).utf8))
    }

    /// `Error: <what failed, which file>` and `Try: <what to do>` on stderr, each one line: the
    /// command's outcome (claimed with `exitStatus`).
    static func writeError(message: String, hint: String?, exitStatus: Int32) {
        claimOutcome(exitStatus: exitStatus)
        emitError(message: message, hint: hint)
    }

    private static func emitError(label: String = "Error", message: String, hint: String?) {
        var text = "\(label): \(TerminalText.sanitized(message, keepingLineBreaks: false))\n"
        if let hint { text += "Try: \(TerminalText.sanitized(hint, keepingLineBreaks: false))\n" }
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Prints `value` as pretty JSON with sorted keys on stdout — the command's outcome, claimed
    /// with `exitStatus` — with `staleTemporariesRemoved` (what this run's sweeps removed,
    /// `TemporaryItems`) added to the object.
    static func printJSON(_ value: some Encodable, exitStatus: ExitStatus = .success) {
        guard let data = encodedJSON(value) else { return }
        claimOutcome(exitStatus: exitStatus.rawValue)
        FileHandle.standardOutput.write(data)
    }

    private static func emitJSON(_ value: some Encodable) {
        guard let data = encodedJSON(value) else { return }
        FileHandle.standardOutput.write(data)
    }

    private static func encodedJSON(_ value: some Encodable) -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(WithHousekeeping(value: value, removed: TemporaryItems.removedStaleItems)) else { return nil }
        return data + Data("\n".utf8)
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
        claimOutcome(exitStatus: 0)  // no-op for a command that has reported (it claimed first)
        emitRemovedStaleItems()
    }

    /// The lines of `reportRemovedStaleItems`, for whoever owns the outcome (the interruption
    /// too: it does not claim it again).
    static func emitRemovedStaleItems() {
        let removed = TemporaryItems.removedStaleItems
        guard !removed.isEmpty else { return }
        FileHandle.standardOutput.write(Data(TerminalText.sanitized(
            removed.map { "Removed a stale temporary left by an interrupted run: \(oneLine: $0)\n" }.joined(), keepingLineBreaks: true).utf8))
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

/// A result a command prints whole: JSON for jobs, text for people, or its error.
protocol CommandReport: Encodable {
    /// Set when the command failed: printed as `Error:`/`Try:` in text mode (replaced by the
    /// interruption when it explains the failure, `InterruptHandling.interruption`).
    var error: ErrorSummary? { get set }
    /// The status the command exits with (a report can fail without an error, e.g. `--deep`).
    var exitStatus: ExitStatus { get }
    var renderedText: String { get }
}

extension CommandOutput {
    /// Prints `report` — JSON with `--json`, otherwise its text or its error — and throws the
    /// exit code its status gives (nothing for success). After a signal, an error the
    /// interruption explains is reported as the interruption, in the report.
    static func finish<Report: CommandReport>(_ report: Report, json: Bool) throws {
        var report = report
        var interruption: InterruptedError?
        if let error = report.error, let explained = InterruptHandling.interruption(explaining: error) {
            interruption = explained
            report.error = ErrorSummary(explained)
        }
        if json {
            printJSON(report, exitStatus: report.exitStatus)
        } else if let interruption {
            claimOutcome(exitStatus: report.exitStatus.rawValue)
            printInterruption(interruption, json: false)
        } else if let error = report.error {
            writeError(message: error.message, hint: error.hint, exitStatus: report.exitStatus.rawValue)
        } else {
            write(report.renderedText, exitStatus: report.exitStatus)
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

