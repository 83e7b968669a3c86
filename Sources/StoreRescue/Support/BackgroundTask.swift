import Foundation

/// A body run on its own thread, whose result (or error) `wait()` returns.
final class BackgroundTask<Value: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<Value, any Error>?

    /// Starts `body` on a thread of its own; when the system refuses one (`JoinableThread`),
    /// runs it here, before returning, so `wait()` never waits for a thread that never ran.
    ///
    /// - Parameter startThread: starts the thread (`JoinableThread`; tests pass one that fails).
    init(
        startThread: (@escaping @Sendable () -> Void) -> JoinableThread? = { JoinableThread($0) },
        _ body: @escaping @Sendable () throws -> Value
    ) {
        let started = startThread { [self] in
            let outcome = Result { try body() }
            condition.lock()
            result = outcome
            condition.broadcast()
            condition.unlock()
        }
        if started == nil { result = Result { try body() } }
    }

    /// Waits for the body to end; returns its value or throws its error.
    func wait() throws -> Value {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result { return try result.get() }
            condition.wait()
        }
    }

    /// Waits for the body to end, at most until `deadline`; true when it has ended.
    func hasEnded(waitingUntil deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while result == nil {
            if !condition.wait(until: deadline) { return result != nil }
        }
        return true
    }

    /// True once the body has ended.
    var isDone: Bool {
        condition.lock()
        defer { condition.unlock() }
        return result != nil
    }
}
