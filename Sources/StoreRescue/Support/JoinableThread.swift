import Foundation

/// A thread whose start is checked and whose end can be waited for.
///
/// Foundation's `Thread.start()` on Linux ignores a failed `pthread_create`: when the system
/// refuses a thread — `RLIMIT_NPROC` for a service user, a container's pids limit, no memory for
/// its stack — the body never runs, and a caller waiting for what it would have done waits for
/// ever (a review hung a salvage that way: nothing but SIGKILL ended it). Here the start returns
/// nil instead, and the caller does the work itself or says why it cannot.
///
/// `join` waits until the thread has ended and let go of everything its body held, so objects
/// the body used are released on the caller's thread, in the caller's order (a spill file
/// removed by a late release on the other thread once raced the removal of its folder).
final class JoinableThread {
    private let handle: pthread_t
    private var isJoined = false

    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a thread of its own; nil when the system refuses one (`body` is then
    /// released unrun).
    init?(_ body: @escaping @Sendable () -> Void) {
        guard !Self.refusedForTests else { return nil }
        let box = Unmanaged.passRetained(Body(body))
        var handle = pthread_t()
        let started = pthread_create(&handle, nil, { context in
            // Taken back (and released) before the thread ends: `join` then knows the body is gone.
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, box.toOpaque())
        guard started == 0 else {
            box.release()
            return nil
        }
        self.handle = handle
    }

    /// **Test hook** — inert unless `STORERESCUE_TEST_REFUSE_THREADS` is `1`; never set it in
    /// production. Every start is then refused, as `ulimit -u` or a pids limit refuses them, so
    /// the end-to-end tests run the command's paths without a thread of its own (as root, which
    /// `RLIMIT_NPROC` does not limit).
    private static let refusedForTests = ProcessInfo.processInfo.environment["STORERESCUE_TEST_REFUSE_THREADS"] == "1"

    /// Waits for the thread to end (once; later calls return at once).
    func join() {
        guard !isJoined else { return }
        isJoined = true
        pthread_join(handle, nil)
    }

    deinit {
        if !isJoined { pthread_detach(handle) }
    }
}

extension JoinableThread {
    /// How a type starts its thread: `JoinableThread.init`, or in tests one that refuses, as the
    /// system may.
    typealias Start = (@escaping @Sendable () -> Void) -> JoinableThread?
}
