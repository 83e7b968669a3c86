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

    /// Text for people, on stdout.
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// `Error: <what failed, which file>` and `Try: <what to do>` on stderr.
    static func writeError(message: String, hint: String?) {
        var text = "Error: \(message)\n"
        if let hint { text += "Try: \(hint)\n" }
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Prints `value` as pretty JSON with sorted keys on stdout.
    static func printJSON(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
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

/// Turns SIGINT, SIGTERM and SIGHUP into a `CancellationFlag`, so that an interrupted command
/// stops at its next check and removes its partial files instead of dying with them in place.
enum InterruptHandling {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    static func install() -> CancellationFlag {
        let flag = CancellationFlag()
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { flag.cancel() }
            source.resume()
            sources.append(source)
        }
        return flag
    }
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
        let cancellation = InterruptHandling.install()
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
