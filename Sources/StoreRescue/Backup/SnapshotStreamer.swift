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
final class SnapshotStreamer: @unchecked Sendable {
    private let path: String
    private let startOffset: Int64
    private let writer: ParallelGzipWriter
    private let chunkSize: Int
    private let condition = NSCondition()
    private var finalEnd: Int64 = 0
    private var isComplete = false
    private var failure: (any Error)?
    private var isRunning = false
    private var consumed: Int64 = 0

    /// - Parameters:
    ///   - startOffset: where in the file to start (the bytes before are handed over separately).
    init(path: String, startOffset: Int64, writer: ParallelGzipWriter, chunkSize: Int = 1 << 20) {
        self.path = path
        self.startOffset = startOffset
        self.writer = writer
        self.chunkSize = chunkSize
    }

    func start() {
        condition.lock()
        isRunning = true
        condition.unlock()
        Thread { [self] in run() }.start()
    }

    /// The file's bytes below `end` are final; `isComplete` says no more will come.
    func publish(finalEnd end: Int64, isComplete complete: Bool) {
        condition.lock()
        finalEnd = max(finalEnd, end)
        isComplete = complete
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the thread at its next chance and waits for it.
    func abort(_ error: any Error) {
        condition.lock()
        if failure == nil { failure = error }
        condition.broadcast()
        while isRunning { condition.wait() }
        condition.unlock()
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
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while isRunning && failure == nil {
            if !condition.wait(until: deadline) { break }
        }
        if let failure { throw failure }
        return !isRunning
    }

    private func run() {
        do {
            try stream()
        } catch {
            condition.lock()
            if failure == nil { failure = error }
            condition.unlock()
        }
        condition.lock()
        isRunning = false
        condition.broadcast()
        condition.unlock()
    }

    private func stream() throws {
        var descriptor: Int32 = -1
        defer { if descriptor >= 0 { close(descriptor) } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset = startOffset
        while true {
            condition.lock()
            while finalEnd - offset < Int64(chunkSize) && !isComplete && failure == nil { condition.wait() }
            let end = finalEnd
            let complete = isComplete
            let stop = failure != nil
            condition.unlock()
            if stop { return }
            if offset >= end && complete { return }
            if descriptor < 0 {
                descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else {
                    throw BackupError.snapshotFailed(source: path, detail: "cannot read the snapshot: \(SafeFileOutput.describe(errno))")
                }
            }
            let want = Int(min(Int64(chunkSize), end - offset))
            let count = pread(descriptor, buffer.baseAddress, want, off_t(offset))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let reason = count < 0 ? SafeFileOutput.describe(errno) : "it is shorter than SQLite reported"
                throw BackupError.snapshotFailed(source: path, detail: "cannot read the snapshot: \(reason)")
            }
            try writer.append(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
            offset += Int64(count)
            condition.lock()
            consumed = offset - startOffset
            condition.unlock()
        }
    }
}
