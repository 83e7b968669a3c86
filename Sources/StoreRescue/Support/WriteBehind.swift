import Foundation

/// Positioned writes to one file, gathered into runs of consecutive bytes and written by a thread
/// of their own, so that the caller's work (salvage decoding pages) keeps one core while the
/// kernel copies the bytes on the other, and a file written page by page costs one `pwrite` per
/// run (1 MiB) instead of one per page.
///
/// Order is kept: runs are written in the order they were handed over, so a later write of the
/// same bytes wins, as it would have written directly. A caller that reads the file back calls
/// `drain()` first. Bytes written to an offset that does not follow the current run end that run.
///
/// Errors: a failed `pwrite` (disk full, `EFBIG` past the file-size limit, an I/O error) stops the
/// thread; the next `write`, `drain` or `finish` throws it, with the system's `errno`. When the
/// system refuses the thread (`JoinableThread`), each run is written by the caller as it is
/// handed over, its error thrown there.
///
/// Memory: the run being gathered, at most `queueLimit` runs waiting and the one being written,
/// each `runBytes`.
///
/// The thread holds the writer until it ends: the owner calls `finish` or `stop` (before closing
/// the descriptor) on every path, as `PageAppender` does in `finish` and `deinit`.
final class WriteBehind: @unchecked Sendable {
    /// Why a write failed: the `errno` of the `pwrite` that stopped the thread.
    struct Failure: Error {
        var code: Int32
    }

    let descriptor: Int32
    private let runBytes: Int
    private let queueLimit: Int
    /// Bytes written between `Writeback` hints (0: none).
    private let writebackInterval: Int
    /// Called with each hint, on the thread that wrote (`BackgroundFlush.request`).
    private let onWriteback: (@Sendable () -> Void)?

    // The run being gathered (the caller's thread only).
    private var run: [UInt8] = []
    private var runOffset: Int64 = 0

    // Shared with the writer thread, under `condition`.
    private let condition = NSCondition()
    private var queue: [(offset: Int64, bytes: [UInt8])] = []
    private var spare: [[UInt8]] = []
    private var isWriting = false
    private var isClosed = false
    private var isRunning = true
    private var failure: Int32?
    /// The writer thread; nil when the system refused one (the caller's thread writes).
    private var thread: JoinableThread?
    /// Bytes written by the caller's thread since the last `Writeback` hint (no writer thread).
    private var writtenSinceHint = 0

    /// Starts the writer thread for `descriptor` (which the caller keeps open until `finish` or
    /// `stop` returns).
    /// - Parameter startThread: starts the writer thread (`JoinableThread`; tests pass one that
    ///   fails, as the system may).
    init(
        descriptor: Int32, runBytes: Int = 1 << 20, queueLimit: Int = 3, writebackInterval: Int = 8 << 20,
        onWriteback: (@Sendable () -> Void)? = nil,
        startThread: (@escaping @Sendable () -> Void) -> JoinableThread? = { JoinableThread($0) }
    ) {
        self.descriptor = descriptor
        self.runBytes = runBytes
        self.queueLimit = queueLimit
        self.writebackInterval = writebackInterval
        self.onWriteback = onWriteback
        run.reserveCapacity(runBytes)
        // A thread the system refuses (`JoinableThread`) leaves the runs to be written by the
        // caller, each as it is handed over.
        thread = startThread { [self] in writeRuns() }
        if thread == nil { isRunning = false }
    }

    /// Writes `bytes` at `offset`: added to the current run when it follows it, else the run is
    /// handed to the thread and a new one starts here.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        guard bytes.count > 0 else { return }
        if !run.isEmpty, offset == runOffset + Int64(run.count), run.count + bytes.count <= runBytes {
            run.append(contentsOf: bytes)
            return
        }
        try handOver()
        runOffset = offset
        run.append(contentsOf: bytes)
        if run.count >= runBytes { try handOver() }
    }

    /// Waits until every byte handed over so far is written (the file may then be read back).
    func drain() throws {
        try handOver()
        condition.lock()
        defer { condition.unlock() }
        while (!queue.isEmpty || isWriting) && failure == nil { condition.wait() }
        if let failure { throw Failure(code: failure) }
    }

    /// Writes what is left and ends the thread.
    func finish() throws {
        try drain()
        stop()
    }

    /// Ends the thread without writing what is still queued (a failed or abandoned file).
    func stop() {
        condition.lock()
        isClosed = true
        queue.removeAll()
        condition.broadcast()
        while isRunning { condition.wait() }
        condition.unlock()
        thread?.join()
        thread = nil
    }

    /// Queues the current run (waiting while `queueLimit` runs are queued) and takes a spare
    /// buffer for the next one.
    private func handOver() throws {
        guard !run.isEmpty else { return }
        guard thread != nil else { return try writeHere() }
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= queueLimit && failure == nil && !isClosed { condition.wait() }
        if let failure { throw Failure(code: failure) }
        precondition(!isClosed, "no write after finish or stop")
        queue.append((runOffset, run))
        condition.broadcast()
        run = spare.popLast() ?? []
        run.removeAll(keepingCapacity: true)
        if run.capacity < runBytes { run.reserveCapacity(runBytes) }
    }

    /// Without a writer thread: writes the current run now.
    private func writeHere() throws {
        precondition(!isClosed, "no write after finish or stop")
        if let failure { throw Failure(code: failure) }
        let code = run.withUnsafeBytes { PositionedWrite.write(descriptor, $0, at: runOffset) }
        guard code == 0 else {
            failure = code
            throw Failure(code: code)
        }
        writtenSinceHint += run.count
        if writebackInterval > 0, writtenSinceHint >= writebackInterval {
            writtenSinceHint = 0
            Writeback.start(descriptor)
            onWriteback?()
        }
        run.removeAll(keepingCapacity: true)
    }

    private func writeRuns() {
        var sinceHint = 0
        condition.lock()
        while true {
            while queue.isEmpty && !isClosed { condition.wait() }
            if queue.isEmpty || failure != nil {
                if isClosed { break }
                condition.wait()
                continue
            }
            var item = queue.removeFirst()
            isWriting = true
            condition.unlock()
            let code = item.bytes.withUnsafeBytes { PositionedWrite.write(descriptor, $0, at: item.offset) }
            sinceHint += item.bytes.count
            if code == 0, writebackInterval > 0, sinceHint >= writebackInterval {
                sinceHint = 0
                Writeback.start(descriptor)
                onWriteback?()
            }
            item.bytes.removeAll(keepingCapacity: true)
            condition.lock()
            isWriting = false
            if code != 0 {
                failure = code
                queue.removeAll()
            }
            if spare.count < queueLimit { spare.append(item.bytes) }
            condition.broadcast()
        }
        isRunning = false
        condition.broadcast()
        condition.unlock()
    }
}
