import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Feeds a snapshot file into a `ParallelGzipWriter` on its own thread while the snapshot is still
/// being written: the snapshotter publishes how far the file is final, the streamer reads up to
/// there and waits for more. Snapshotting and compressing overlap instead of running one after
/// the other.
///
/// When the system refuses the thread (`JoinableThread`: `RLIMIT_NPROC`, a container's pids
/// limit), `publish` hands what is final to the compressor on the caller's thread before it
/// returns: the same bytes in the same order, one after the other instead of overlapped. (With
/// Foundation's `Thread`, the refusal went unnoticed and the backup waited for ever.)
final class SnapshotStreamer: @unchecked Sendable {
    private let path: String
    private let startOffset: Int64
    private let writer: ParallelGzipWriter
    private let chunkSize: Int
    private let startThread: JoinableThread.Start
    private let condition = NSCondition()
    private var finalEnd: Int64 = 0
    private var isComplete = false
    private var failure: (any Error)?
    private var isRunning = false
    private var consumed: Int64 = 0
    /// The streaming thread; nil before `start`, and when the system refused one.
    private var thread: JoinableThread?
    /// No thread: `publish` streams on the caller's thread.
    private var isSerial = false

    // The reading position: the streaming thread's, or the caller's when there is none.
    private var offset: Int64
    private var descriptor: Int32 = -1
    private var buffer: UnsafeMutableRawBufferPointer?

    /// - Parameters:
    ///   - startOffset: where in the file to start (the bytes before are handed over separately).
    ///   - startThread: starts the streaming thread (`JoinableThread`; tests pass one that fails).
    init(path: String, startOffset: Int64, writer: ParallelGzipWriter, chunkSize: Int = 1 << 20,
         startThread: @escaping JoinableThread.Start = { JoinableThread($0) }) {
        self.path = path
        self.startOffset = startOffset
        self.offset = startOffset
        self.writer = writer
        self.chunkSize = chunkSize
        self.startThread = startThread
    }

    deinit {
        closeFile()
    }

    func start() {
        condition.lock()
        isRunning = true
        condition.unlock()
        thread = startThread { [self] in run() }
        guard thread == nil else { return }
        condition.lock()
        isRunning = false
        isSerial = true
        condition.unlock()
    }

    /// The file's bytes below `end` are final; `isComplete` says no more will come. Without a
    /// thread, they are handed to the compressor here (an error is kept for `error` and `wait`).
    func publish(finalEnd end: Int64, isComplete complete: Bool) {
        condition.lock()
        finalEnd = max(finalEnd, end)
        isComplete = complete
        condition.broadcast()
        let serial = isSerial && failure == nil
        condition.unlock()
        guard serial else { return }
        do {
            while try streamNext(waiting: false) {}
        } catch {
            record(error)
        }
        if complete { closeFile() }
    }

    /// Stops the thread at its next chance and waits for it.
    func abort(_ error: any Error) {
        condition.lock()
        if failure == nil { failure = error }
        condition.broadcast()
        while isRunning { condition.wait() }
        condition.unlock()
        thread?.join()
        closeFile()
    }

    /// The first error of the streaming thread, if any.
    var error: (any Error)? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

    /// Bytes handed to the compressor so far.
    var bytesConsumed: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return consumed
    }

    /// Waits up to `timeout` for the thread to end; true when it has. Throws its error.
    func wait(timeout: TimeInterval) throws -> Bool {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while isRunning && failure == nil {
            if !condition.wait(until: deadline) { break }
        }
        let (failure, isRunning) = (self.failure, self.isRunning)
        condition.unlock()
        if let failure { throw failure }
        if !isRunning { thread?.join() }
        return !isRunning
    }

    private func run() {
        do {
            while try streamNext(waiting: true) {}
        } catch {
            record(error)
        }
        closeFile()
        condition.lock()
        isRunning = false
        condition.broadcast()
        condition.unlock()
    }

    /// Closes the snapshot and lets go of the buffer (the streaming side only, or once it ended).
    private func closeFile() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        buffer?.deallocate()
        buffer = nil
    }

    private func record(_ error: any Error) {
        condition.lock()
        if failure == nil { failure = error }
        condition.unlock()
    }

    /// Hands the next chunk that is final to the compressor: a whole `chunkSize`, or what is
    /// left once the file is complete. Waits for one (the thread), or returns false when there
    /// is none yet (the caller's thread); false too once the file is done or stopped.
    private func streamNext(waiting: Bool) throws -> Bool {
        condition.lock()
        while waiting && finalEnd - offset < Int64(chunkSize) && !isComplete && failure == nil { condition.wait() }
        let end = finalEnd
        let complete = isComplete
        let stop = failure != nil
        condition.unlock()
        if stop { return false }
        if offset >= end && complete { return false }
        if end - offset < Int64(chunkSize) && !complete { return false }
        if descriptor < 0 {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                let code = errno
                if code == EMFILE || code == ENFILE { throw BackupError.tooManyOpenFiles(path: path, reason: SafeFileOutput.describe(code)) }
                throw BackupError.snapshotFailed(source: path, detail: "cannot read the snapshot: \(SafeFileOutput.describe(code))")
            }
        }
        let buffer = self.buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        self.buffer = buffer
        let want = Int(min(Int64(chunkSize), end - offset))
        let count = pread(descriptor, buffer.baseAddress, want, off_t(offset))
        if count < 0 && errno == EINTR { return true }
        guard count > 0 else {
            let reason = count < 0 ? SafeFileOutput.describe(errno) : "it is shorter than SQLite reported"
            throw BackupError.snapshotFailed(source: path, detail: "cannot read the snapshot: \(reason)")
        }
        try writer.append(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
        offset += Int64(count)
        condition.lock()
        consumed = offset - startOffset
        condition.unlock()
        return true
    }
}
