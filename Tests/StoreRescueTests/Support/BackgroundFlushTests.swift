import Foundation
import Testing
@testable import StoreRescue

/// `BackgroundFlush` flushes a file on a thread of its own when asked, `finish` waits for what
/// was asked and throws a flush that failed (Linux reports a writeback error once per open file:
/// the publisher's later `fsync` might not see it), and a refused thread makes it do nothing.
@Suite struct BackgroundFlushTests {
    @Test func requestedFlushesAreMadeBeforeFinishReturns() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("file.bin")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 1 << 16)))
        let flush = BackgroundFlush(path: path)
        flush.request()
        try flush.finish()
        #expect(flush.flushes >= 1)
        // Requests after `finish` are ignored, not queued for a thread that has ended.
        flush.request()
        try flush.finish()
    }

    @Test func nothingAskedNothingFlushed() throws {
        let directory = try TemporaryDirectory()
        let flush = BackgroundFlush(path: directory.path("never-made.bin"))
        try flush.finish()
        #expect(flush.flushes == 0)
    }

    /// A flush the system refuses (`fdatasync` of a device that cannot be synchronised: EINVAL)
    /// is kept and thrown by `finish`.
    @Test func aFailedFlushIsThrownByFinish() throws {
        let flush = BackgroundFlush(path: "/dev/full")
        flush.request()
        let failure = #expect(throws: BackgroundFlush.Failure.self) { try flush.finish() }
        #expect(failure?.code == EINVAL)
    }

    /// A file that cannot be opened (here: missing; under `ulimit -n`, no descriptor left) is not
    /// flushed, and that is no failure: the publisher's `fsync` does it all, as without a thread.
    @Test func aFileThatCannotBeOpenedIsLeftToTheFsync() throws {
        let flush = BackgroundFlush(path: "/nonexistent-folder/file.bin")
        flush.request()
        try flush.finish()
        #expect(flush.flushes == 1)
    }

    @Test func withoutAThreadRequestsDoNothing() throws {
        let flush = BackgroundFlush(path: "/dev/full", startThread: { _ in nil })
        flush.request()
        try flush.finish()
        #expect(flush.flushes == 0)
    }

    /// `stop` returns once the thread has ended, whatever was still asked for.
    @Test func stopEndsTheThread() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("file.bin")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 4096)))
        let flush = BackgroundFlush(path: path)
        for _ in 0..<100 { flush.request() }
        flush.stop()
        let made = flush.flushes
        flush.request()
        #expect(flush.flushes == made)
    }
}
