import Dispatch
import Foundation

extension SQLiteConnection {
    /// Runs `body`, whose statements on this connection stop with `SQLITE_INTERRUPT`
    /// (`SQLiteError.isInterrupt`) within about 20 ms of `cancellation` being set; with no
    /// `cancellation`, just runs it.
    ///
    /// A progress handler cannot do this for every statement: SQLite's `integrity_check` and
    /// `quick_check` run their b-tree check in one step of its program, between the handler's
    /// calls (on a 3 GB file it ran 1.6 s past a SIGTERM). So a watcher calls `sqlite3_interrupt`
    /// every 20 ms once `cancellation` is set, until `body` returns; it never interrupts a
    /// statement begun after that.
    func interruptible<T>(by cancellation: CancellationFlag?, _ body: () throws -> T) rethrows -> T {
        guard let cancellation else { return try body() }
        let watcher = InterruptWatcher(connection: self, cancellation: cancellation)
        defer { watcher.stop() }
        return try body()
    }
}

/// Interrupts a connection's running statement once `cancellation` is set, checking every 20 ms
/// until `stop` (after which it never interrupts).
private final class InterruptWatcher: @unchecked Sendable {
    private let lock = NSLock()
    private var isActive = true
    private let timer: any DispatchSourceTimer

    init(connection: SQLiteConnection, cancellation: CancellationFlag) {
        timer = DispatchSource.makeTimerSource(queue: .global(qos: .userInteractive))
        timer.schedule(deadline: .now(), repeating: .milliseconds(20))
        timer.setEventHandler { [unowned connection, lock] in
            guard cancellation.isCancelled else { return }
            lock.lock()
            defer { lock.unlock() }
            if self.isActive { connection.interrupt() }
        }
        timer.resume()
    }

    func stop() {
        lock.lock()
        isActive = false
        lock.unlock()
        timer.cancel()
    }
}
