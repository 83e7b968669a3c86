import Foundation

extension SQLiteConnection {
    /// Runs `body`, whose statements on this connection stop with `SQLITE_INTERRUPT`
    /// (`SQLiteError.isInterrupt`) within about 20 ms of `cancellation` being set; with no
    /// `cancellation`, just runs it.
    ///
    /// A progress handler cannot do this for every statement: SQLite's `integrity_check` and
    /// `quick_check` run their b-tree check in one step of its program, between the handler's
    /// calls (on a 3 GB file it ran 1.6 s past a SIGTERM). So a watcher on a thread of its own
    /// calls `sqlite3_interrupt` every 20 ms once `cancellation` is set, until `body` returns; it
    /// never interrupts a statement begun after that.
    ///
    /// When the system refuses the watcher's thread (`JoinableThread`: `RLIMIT_NPROC`, a pids
    /// limit), `body` runs without it: a check then runs to its end past a cancellation, and the
    /// caller stops at its next look. (The watcher was a Dispatch timer: libdispatch retries a
    /// refused thread for ever, and an `upgrade` under `ulimit -u 1` waited here for ever.)
    func interruptible<T>(by cancellation: CancellationFlag?, _ body: () throws -> T) rethrows -> T {
        try interruptible(by: cancellation, startThread: { JoinableThread($0) }, body)
    }

    /// `interruptible(by:_:)`, the watcher's thread started by `startThread` (tests pass one
    /// that refuses).
    func interruptible<T>(by cancellation: CancellationFlag?, startThread: JoinableThread.Start, _ body: () throws -> T) rethrows -> T {
        guard let cancellation else { return try body() }
        let watcher = InterruptWatcher(connection: self, cancellation: cancellation, startThread: startThread)
        defer { watcher.stop() }
        return try body()
    }
}

/// Interrupts a connection's running statement once `cancellation` is set, checking every 20 ms
/// on a thread of its own until `stop` (after which it never interrupts); nothing when the
/// system refuses the thread.
private final class InterruptWatcher: @unchecked Sendable {
    private let condition = NSCondition()
    private var isActive = true
    private var thread: JoinableThread?
    /// The connection, used by the watcher's thread only while `isActive` (under `condition`).
    private unowned let connection: SQLiteConnection

    init(connection: SQLiteConnection, cancellation: CancellationFlag, startThread: JoinableThread.Start) {
        self.connection = connection
        thread = startThread { [self] in watch(cancellation) }
    }

    private func watch(_ cancellation: CancellationFlag) {
        condition.lock()
        defer { condition.unlock() }
        while isActive {
            if cancellation.isCancelled { connection.interrupt() }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.02))
        }
    }

    /// Ends the watching; once this returns, the connection is never interrupted by it.
    func stop() {
        condition.lock()
        isActive = false
        condition.broadcast()
        condition.unlock()
        thread?.join()
        thread = nil
    }
}
