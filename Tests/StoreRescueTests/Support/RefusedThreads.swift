import Foundation
import Testing
@testable import StoreRescue

/// Thread starts for tests that play the system refusing threads (`RLIMIT_NPROC`, a pids limit).
final class RefusedThreads: @unchecked Sendable {
    private let lock = NSLock()
    private let isRefused: @Sendable (Int) -> Bool
    private var asked = 0

    /// Grants the first `granted` starts and refuses every later one (by default: all refused).
    init(granting granted: Int = 0) { isRefused = { $0 > granted } }

    /// Refuses the starts numbered in `refused` (from 1) and grants the others.
    init(refusing refused: Set<Int>) { isRefused = { refused.contains($0) } }

    /// Starts asked for so far, granted or not.
    var starts: Int { lock.withLock { asked } }

    /// A `JoinableThread.Start` that grants or refuses as above.
    var start: JoinableThread.Start {
        { body in
            let isGranted = self.lock.withLock {
                self.asked += 1
                return !self.isRefused(self.asked)
            }
            return isGranted ? JoinableThread(body) : nil
        }
    }

    /// Runs `body` on a thread of its own and waits at most `seconds` for it, so that a body that
    /// waits for a thread that never ran fails the test instead of blocking the suite (the hung
    /// thread is left behind). Returns the body's value, or nil after recording the hang.
    static func within<Value: Sendable>(
        _ seconds: TimeInterval, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: @escaping @Sendable () throws -> Value
    ) throws -> Value? {
        let task = BackgroundTask(startThread: { JoinableThread($0) }, body)
        guard task.hasEnded(waitingUntil: Date(timeIntervalSinceNow: seconds)) else {
            Issue.record("\(what) did not end within \(Int(seconds)) s: it waits for a thread that never ran", sourceLocation: sourceLocation)
            return nil
        }
        return try task.wait()
    }
}
