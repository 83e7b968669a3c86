import Foundation
import Testing
@testable import StoreRescue

/// `BackgroundTask` hands back its body's value or error, whether the body ran on a thread of
/// its own or — the system refusing a thread (`RLIMIT_NPROC`, a pids limit) — on the caller's,
/// before `init` returned: `wait()` never waits for a thread that never ran.
@Suite struct BackgroundTaskTests {
    struct Refused: Error, Equatable {}

    @Test(arguments: [true, false]) func theBodysValueOrErrorComesBack(thread: Bool) throws {
        let start: (@escaping @Sendable () -> Void) -> JoinableThread? = { thread ? JoinableThread($0) : nil }
        let value = BackgroundTask(startThread: start) { (1...1_000).reduce(0, +) }
        #expect(try value.wait() == 500_500)
        #expect(value.isDone)
        let failing = BackgroundTask(startThread: start) { () throws -> Int in throw Refused() }
        #expect(throws: Refused.self) { try failing.wait() }
    }

    @Test func withoutAThreadTheBodyHasRunWhenInitReturns() {
        let task = BackgroundTask(startThread: { _ in nil }) { 42 }
        #expect(task.isDone)
        #expect(task.hasEnded(waitingUntil: Date()))
    }
}
