import Dispatch
import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Signals handled without a window in which one is lost: a C handler (`shim.h`,
/// `srsqlite_install_signal_pipe`) writes each signal's number into a pipe, a thread reads it, and
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

    /// Installs the handler for `signals` and calls `handler` on `queue` for each one that
    /// arrives, in order, from the moment this returns. A thread of its own waits on the pipe
    /// (a Dispatch read source would be made ready milliseconds later, as a signal source is).
    /// Once per process.
    ///
    /// - Throws: `InstallError` when the pipe cannot be made or a handler installed (the process
    ///   is out of file descriptors; a second call).
    public static func install(signals: [Int32], queue: DispatchQueue, handler: @escaping @Sendable (Int32) -> Void) throws {
        let readEnd = signals.withUnsafeBufferPointer { numbers in
            srsqlite_install_signal_pipe(numbers.baseAddress, Int32(numbers.count))
        }
        guard readEnd >= 0 else { throw InstallError.failed(errno: errno) }
        let reader = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    let number = Int32(byte)
                    queue.async { handler(number) }
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return  // the write end is never closed: not reached
                }
            }
        }
        reader.name = "storerescue.signals"
        reader.start()
    }
}
