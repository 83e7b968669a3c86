import Crypto
import Foundation

/// Hashes and writes decompressed bytes on its own thread, so that inflating (single-threaded by
/// nature) keeps one core busy and SHA-256 plus the write use the other. Holds at most
/// `capacity` chunks; `push` waits when the writer falls behind.
///
/// When the system refuses the thread (`JoinableThread`: `RLIMIT_NPROC`, a container's pids
/// limit), `push` hashes and writes each chunk itself, in the same order: the same file and sum.
/// (With Foundation's `Thread`, the refusal went unnoticed and `push` waited for ever once
/// `capacity` chunks were queued.)
final class HashingFileSink: @unchecked Sendable {
    /// nil: hash only (checking a backup against a snapshot already on disk).
    private let output: SafeFileOutput?
    private let capacity: Int
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var isClosed = false
    private var isRunning = true
    private var failure: (any Error)?
    private var hasher = SHA256()
    /// The hashing thread; nil when the system refused one (`push` hashes and writes).
    private var thread: JoinableThread?

    /// - Parameter startThread: starts the thread (`JoinableThread`; tests pass one that fails).
    init(output: SafeFileOutput?, capacity: Int = 8, startThread: JoinableThread.Start = { JoinableThread($0) }) {
        self.output = output
        self.capacity = capacity
        thread = startThread { [self] in run() }
        if thread == nil { isRunning = false }
    }

    /// Queues a copy of `bytes`. Throws the writer's error (disk full, …) once there is one.
    func push(_ bytes: UnsafeRawBufferPointer) throws {
        guard thread != nil else { return try consumeHere(bytes) }
        let chunk = [UInt8](bytes)
        condition.lock()
        defer { condition.unlock() }
        while chunks.count >= capacity && failure == nil { condition.wait() }
        if let failure { throw failure }
        chunks.append(chunk)
        condition.broadcast()
    }

    /// Waits for everything queued to be written; returns the SHA-256 of all of it.
    func finish() throws -> String {
        condition.lock()
        isClosed = true
        condition.broadcast()
        while isRunning { condition.wait() }
        let failure = self.failure
        condition.unlock()
        thread?.join()
        if let failure { throw failure }
        return hasher.finalize().hexString
    }

    /// Stops the thread without writing what is still queued.
    func stop() {
        condition.lock()
        if failure == nil { failure = CancellationError() }
        chunks.removeAll()
        condition.broadcast()
        while isRunning { condition.wait() }
        condition.unlock()
        thread?.join()
    }

    /// Without a thread: hashes and writes `bytes` now; an error is kept and thrown again.
    private func consumeHere(_ bytes: UnsafeRawBufferPointer) throws {
        if let failure { throw failure }
        hasher.update(bufferPointer: bytes)
        do {
            try output?.write(bytes)
        } catch {
            failure = error
            throw error
        }
    }

    private func run() {
        while true {
            condition.lock()
            while chunks.isEmpty && !isClosed && failure == nil { condition.wait() }
            if failure != nil || chunks.isEmpty {
                isRunning = false
                condition.broadcast()
                condition.unlock()
                return
            }
            let chunk = chunks.removeFirst()
            condition.broadcast()
            condition.unlock()
            do {
                try chunk.withUnsafeBytes { bytes in
                    hasher.update(bufferPointer: bytes)
                    try output?.write(bytes)
                }
            } catch {
                condition.lock()
                if self.failure == nil { self.failure = error }
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}
