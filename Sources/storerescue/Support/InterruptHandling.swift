import Dispatch
import Foundation
import StoreRescue
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT, SIGTERM and SIGHUP, for every command (one the parent set to be ignored stays ignored:
/// `SignalPipe`): the first sets `cancellation`, which long jobs poll to stop at their next step
/// and remove their partial files (exit 75). A command that does
/// not stop within `grace` — blocked in a read or inside SQLite — and any second signal end the
/// process from here, through `InterruptionLedger.terminate`: running publish sections are let
/// finish (at most `sectionTimeout`); a command whose final result is in place, or that has
/// started printing its outcome, is let finish and report (at most `commandGrace`); otherwise
/// every live temporary is removed, the interruption is printed (`InterruptedError`) and the
/// process exits — 75, or the result's own status when the result is in place.
///
/// Exactly one side prints the outcome: whichever claims it first (`CommandOutput.claimOutcome`).
enum InterruptHandling {
    /// Set by the first signal.
    static let cancellation = CancellationFlag()
    /// How long a command has to stop by itself after the first signal.
    static let grace: TimeInterval = 1
    /// How long an ending process waits for running publish sections.
    static let sectionTimeout: TimeInterval = 10
    /// How long a command whose final result is in place, or that has claimed its outcome, has
    /// to report and exit once the process is to end.
    static let commandGrace: TimeInterval = 10
    nonisolated(unsafe) private static var received = 0
    nonisolated(unsafe) private static var firstSignal: Int32 = 0
    nonisolated(unsafe) private static var isJSON = false
    private static let state = NSLock()
    private static let queue = DispatchQueue(label: "storerescue.interrupts")

    /// Installs the handling (`SignalPipe`: from the moment this returns, no signal is lost).
    /// Should the pipe not be made (no file descriptor left) or the thread reading it not be
    /// started (`ulimit -u`, a pids limit), the signals keep their default action: the process
    /// ends at once, and its temporaries are removed by the next run as stale ones.
    static func install(json: Bool) {
        isJSON = json
        _ = try? SignalPipe.install(signals: [SIGINT, SIGTERM, SIGHUP], queue: queue) { number in
            received += 1
            if received == 1 {
                state.lock()
                firstSignal = number
                state.unlock()
            }
            cancellation.cancel()
            if received == 1 {
                queue.asyncAfter(deadline: .now() + grace) { terminate() }
            } else {
                terminate()
            }
        }
        signalSelfForTests()
    }

    /// **Test hook** — inert unless `STORERESCUE_TEST_SIGNAL_AFTER_INSTALL` is set to a signal's
    /// number; never set it in production. The process sends itself that signal the instant
    /// `install` returns, as a user's Ctrl-C at that moment would: with a Dispatch signal source,
    /// that signal was dropped and the command ran to its end (`SignalPipeTests`).
    private static func signalSelfForTests() {
        guard let value = ProcessInfo.processInfo.environment["STORERESCUE_TEST_SIGNAL_AFTER_INSTALL"],
              let number = Int32(value), [SIGINT, SIGTERM, SIGHUP].contains(number)
        else { return }
        kill(getpid(), number)
    }

    /// The first signal's name, once one has arrived: the one that interrupted the command.
    static var signalName: String? {
        state.lock()
        defer { state.unlock() }
        guard firstSignal != 0 else { return nil }
        return [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"][firstSignal] ?? "signal \(firstSignal)"
    }

    /// The interruption to report instead of a failure the command is about to print, when a
    /// signal has arrived and the interruption explains the failure
    /// (`InterruptionLedger.isExplainedByInterruption`: its temporaries removed under it, SQLite
    /// interrupted, a write cut short, the job's own "interrupted"); nil otherwise, and always
    /// for a failure the input or the command line decides (64, 65, 73, a refusal).
    static func interruption(explaining failure: ErrorSummary) -> InterruptedError? {
        let published = TemporaryItems.ledger.publishedResult
        guard let name = signalName, InterruptionLedger.isExplainedByInterruption(failure, afterPublishing: published != nil) else { return nil }
        return InterruptedError(signalName: name, state: published.map { .published($0) } ?? .nothingReplaced)
    }

    /// For a command that lost the outcome to the interruption: blocks until the interruption
    /// ends the process (`_exit`), so that it prints nothing and exits with no status of its own.
    static func waitForTheEnd() -> Never {
        while true { sleep(3600) }
    }

    /// Ends the process on an interruption the command did not handle itself (see the type).
    private static func terminate() {
        let name = signalName ?? "a signal"
        switch TemporaryItems.ledger.terminate(sectionTimeout: sectionTimeout, commandGrace: commandGrace) {
        case .commandReports:
            // The command is printing its own outcome and exits by itself. Blocked on a pipe
            // nobody reads, it waits for the reader, as any writer does: ending it there would
            // leave the reader a cut-off report (half a JSON document) under a status that
            // says all went well. SIGKILL ends it.
            return
        case .interrupted(_, let unfinished):
            end(InterruptedError(signalName: name, state: unfinished.map { .publishUnfinished($0) } ?? .nothingReplaced))
        case .interruptedAfterPublishing(let result, _):
            end(InterruptedError(signalName: name, state: .published(result)))
        }
    }

    /// How long the interruption's own message may take to be written (a pipe nobody reads, a
    /// stopped terminal) before the process ends without it.
    static let printGrace: TimeInterval = 2

    /// Prints the interruption (text mode: with the stale temporaries this run removed, as any
    /// outcome lists them) and ends the process. The print has `printGrace`: this queue is the
    /// one that would end the process, so a write blocked on a full pipe must not keep it from
    /// ending (a hang only SIGKILL ended, every later signal ignored).
    private static func end(_ error: InterruptedError) -> Never {
        let status = error.exitStatus.rawValue
        DispatchQueue.global().asyncAfter(deadline: .now() + printGrace) { _exit(status) }
        CommandOutput.printInterruption(error, json: isJSON)
        if !isJSON { CommandOutput.emitRemovedStaleItems() }
        _exit(status)
    }
}

/// A command stopped by a signal before it reported.
///
/// Its exit status is 75 (try again later) unless the command's final result was already in
/// place: then it is the status the command gives that result (0; `upgrade` 4 or 5), since the
/// result is there and running the command again would not redo it.
struct InterruptedError: OperatorFacingError {
    enum State {
        /// The final result was not put in place: what was there is unchanged.
        case nothingReplaced
        /// The step putting the final result in place had not finished within
        /// `InterruptHandling.sectionTimeout`: the path holds the old file or the new one, whole.
        case publishUnfinished(PublishedResult)
        /// The final result is in place; the command's report was not printed.
        case published(PublishedResult)
    }

    var signalName: String
    var state: State = .nothingReplaced

    var isAfterPublishing: Bool {
        if case .published = state { return true }
        return false
    }

    var description: String {
        switch state {
        case .nothingReplaced:
            return "interrupted by \(signalName); temporary files were removed and nothing was replaced"
        case .publishUnfinished(let result):
            return "interrupted by \(signalName) while \(result.description) was being put in place at \(result.path), which had not finished after \(Int(InterruptHandling.sectionTimeout)) s; temporary files were removed, and \(result.path) is either as it was or \(result.description), complete"
        case .published(let result):
            return "interrupted by \(signalName) after \(result.description) was put in place: \(result.path) is complete, but the command's report was not printed"
        }
    }

    var recoverySuggestion: String? {
        switch state {
        case .nothingReplaced: return "run the command again when it can finish"
        case .publishUnfinished(let result): return "look at \(result.path) before running the command again"
        case .published(let result): return result.nextStep ?? "the result is in place: check \(result.path) instead of running the command again"
        }
    }

    var exitStatus: ExitStatus {
        if case .published(let result) = state { return result.exitStatus }
        return .temporaryFailure
    }
}
