import Dispatch
import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Signals handled without a window in which one is lost: a C handler (`shim.h`,
/// `srsqlite_route_signals`) writes each signal's number into a pipe, a thread reads it, and
/// `handler` is called for it on `queue`.
///
/// Why not a Dispatch signal source: it needs the signal's disposition set to `SIG_IGN` (or a
/// thread that does not block it takes the default action and the process dies), and the source
/// is made ready on Dispatch's own thread some milliseconds later; a signal in between was
/// dropped. Sent 7–15 ms after `storerescue salvage` started, SIGTERM was ignored in 15 of 300
/// runs: the salvage ran to its end and published (exit 0). Here the disposition is the handler
/// from the moment `install` returns, and a signal waits in the pipe until it is read. A signal
/// before `install` has its default action (for SIGINT, SIGTERM, SIGHUP: the process ends, before
/// it has made anything).
///
/// A signal already ignored when `install` runs (the parent's `SIG_IGN`, as `nohup` sets for
/// SIGHUP) is left ignored, as Unix programs leave it.
///
/// The handler is installed with `SA_RESTART`: a system call it interrupts is restarted where the
/// system allows, and the project's reads and writes loop over `EINTR` where it does not.
public enum SignalPipe {
    public enum InstallError: Error, CustomStringConvertible {
        case failed(errno: Int32)

        public var description: String {
            switch self {
            case .failed(let number): return "cannot install the signal handlers: \(String(cString: strerror(number)))"
            }
        }
    }

    /// How the signals are dealt with once `install` returns.
    public enum Delivery: Sendable, Equatable {
        /// Through the pipe to the handler: the command stops cleanly.
        case handler
        /// The system refused the thread that reads the pipe: the signals keep their default
        /// action (the process ends at once), as they have before `install`.
        case defaultAction
    }

    /// Installs the handler for `signals` and calls `handler` on `queue` for each one that
    /// arrives, in order, from the moment this returns. A thread of its own waits on the pipe
    /// (a Dispatch read source would be made ready milliseconds later, as a signal source is).
    /// Once per process.
    ///
    /// When the system refuses that thread (`RLIMIT_NPROC` for a service user, a container's pids
    /// limit), no handler is installed and the signals keep their default action: SIGINT,
    /// SIGTERM or SIGHUP ends the process at once, as `kill -9` would, or a signal before
    /// `install`. A handler would write each signal into a pipe nobody reads, and the command
    /// would run to its end whatever the operator sent (Foundation's `Thread.start()` ignored
    /// the refusal, so it did). Polling instead needs a thread as well, or every long job
    /// reading the pipe, and what the handler then does (the grace period, removing the
    /// temporaries, printing the interruption) runs on Dispatch's threads, which the same limit
    /// refuses. Ending at once is safe: every replacement is a rename, so nothing is left half
    /// replaced, and the temporaries the run leaves are named, locked and removed by the next
    /// run in their folder once stale (Docs/CLI.md, "Interruptions and temporary files"). They
    /// are unblocked all the same, so a parent's blocked mask cannot make them ignored.
    ///
    /// - Returns: how the signals are dealt with from now on.
    /// - Throws: `InstallError` when the pipe cannot be made or a handler installed (the process
    ///   is out of file descriptors; a second call).
    @discardableResult
    public static func install(signals: [Int32], queue: DispatchQueue, handler: @escaping @Sendable (Int32) -> Void) throws -> Delivery {
        try install(signals: signals, queue: queue, handler: handler, startThread: { JoinableThread($0) })
    }

    /// `install`, its reader thread started by `startThread` (tests pass one that refuses).
    static func install(signals: [Int32], queue: DispatchQueue, handler: @escaping @Sendable (Int32) -> Void,
                        startThread: JoinableThread.Start) throws -> Delivery {
        let readEnd = srsqlite_make_signal_pipe()
        guard readEnd >= 0 else { throw InstallError.failed(errno: errno) }
        // The reader first: a handler is installed only once something reads what it writes.
        let reader = startThread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    let number = Int32(byte)
                    // On this thread, as a block of `queue`: `async` needs a Dispatch worker
                    // thread, which the limit that leaves this one the last may refuse
                    // (libdispatch then retries for ever, and the signal was never handled).
                    queue.sync { handler(number) }
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return  // the write end is never closed while it runs: not reached
                }
            }
        }
        let delivery: Delivery = reader == nil ? .defaultAction : .handler
        if reader == nil { srsqlite_close_signal_pipe(readEnd) }
        let routed = signals.withUnsafeBufferPointer { numbers in
            srsqlite_route_signals(numbers.baseAddress, Int32(numbers.count), delivery == .handler ? 1 : 0)
        }
        guard routed == 0 else { throw InstallError.failed(errno: errno) }
        return delivery
    }
}
