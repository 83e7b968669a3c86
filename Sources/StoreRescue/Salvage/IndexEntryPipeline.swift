import Foundation

/// Runs the collectors of a table's indexes (`IndexKeyCollector.forEachEntry`: sorting the keys,
/// merging spilled runs, making each index record) on a thread of their own, and hands their
/// records to the caller's thread in chunks, in order — so that the index trees are written
/// (`IndexTreeBuilder`, on the caller's thread: it owns the `PageAppender`) while the next
/// records, and the next collector's sort, are being made on the other core.
///
/// Before this, both halves ran one after the other at the end of each bulk-loaded table: on
/// the benchmark store (Docs/SALVAGE.md, "Performance") the index work was a third of a
/// `--catalog` salvage's instructions, all of it on one core while the other was idle (the
/// output's check starts only once the bulk load is over).
///
/// Order is kept: collectors one after the other, each one's records in the order it gives
/// them. A chunk holds the records of one collector only; the last chunk of each says so, and
/// one is sent for a collector with no entry too.
///
/// Errors: an error of the collectors' thread (a spilled run that cannot be read back) ends it
/// and is thrown by `forEach` once the chunks before it are consumed. An error of the caller's
/// (a page that cannot be written, a cancellation) stops the other thread at its next chunk.
/// Either way `forEach` returns only once that thread has ended and let go of the collectors
/// (`JoinableThread.join`), so none is used, or released — closing and removing its spill
/// file — on the other thread after it. When the system refuses a thread, the collectors run
/// on the caller's thread.
///
/// Memory: at most `queueLimit` chunks waiting, one being filled, one being read and two spare,
/// each `chunkBytes` and room for one more record.
final class IndexEntryPipeline: @unchecked Sendable {
    /// The records of one collector, back to back: each as a two-byte length (little-endian),
    /// a flag byte (1: its values repeat the previous record's, with none NULL) and the record.
    /// Written in place in memory of its own (appending to an array, four calls per record,
    /// cost a third of the collectors' thread).
    private final class Chunk: @unchecked Sendable {
        let storage: UnsafeMutableRawBufferPointer
        var used = 0
        var collector = 0
        var endsCollector = false

        init(capacity: Int) { storage = .allocate(byteCount: capacity, alignment: 8) }
        deinit { storage.deallocate() }

        var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[..<used]) }

        /// Whether an entry of `recordSize` bytes fits after those in.
        func hasRoom(for recordSize: Int) -> Bool { used + 3 + recordSize <= storage.count }

        func append(_ record: UnsafeRawBufferPointer, repeatsValues: Bool) {
            precondition(hasRoom(for: record.count), "room for the entry")
            storage[used] = UInt8(truncatingIfNeeded: record.count)
            storage[used + 1] = UInt8(truncatingIfNeeded: record.count >> 8)
            storage[used + 2] = repeatsValues ? 1 : 0
            if let base = record.baseAddress { (storage.baseAddress! + used + 3).copyMemory(from: base, byteCount: record.count) }
            used += 3 + record.count
        }
    }

    /// The collectors' thread stopped because the caller's did.
    private struct Stopped: Error {}

    private let collectors: [any IndexKeyCollector]
    private let chunkBytes: Int
    private let queueLimit: Int

    // Shared by both threads, under `condition`.
    private let condition = NSCondition()
    private var queue: [Chunk] = []
    private var spare: [Chunk] = []
    private var isStopped = false
    private var isRunning = true
    private var failure: (any Error)?

    /// The longest record a chunk entry carries: the longest `IndexTreeBuilder` writes, on
    /// 64 KiB pages (about a quarter of a page; its length fits the entry's two bytes).
    static let maximumRecordSize = IndexTreeBuilder.maximumRecordSize(usableSize: 65_536)

    /// Starts the collectors' thread: `JoinableThread`, or in tests one that fails.
    private let startThread: (@escaping @Sendable () -> Void) -> JoinableThread?

    init(
        collectors: [any IndexKeyCollector], chunkBytes: Int = 64 << 10, queueLimit: Int = 4,
        startThread: @escaping (@escaping @Sendable () -> Void) -> JoinableThread? = { JoinableThread($0) }
    ) {
        self.collectors = collectors
        self.chunkBytes = chunkBytes
        self.queueLimit = queueLimit
        self.startThread = startThread
    }

    /// Calls `entry` for every record of every collector in order (`collector` is its position
    /// in `collectors`), and `collectorEnded` after each collector's last record (or at once for
    /// one with none). The collectors run on a thread of their own meanwhile.
    func forEach(
        _ entry: (_ collector: Int, _ record: UnsafeRawBufferPointer, _ repeatsValues: Bool) throws -> Void,
        collectorEnded: (_ collector: Int) throws -> Void
    ) throws {
        guard !collectors.isEmpty else { return }
        guard let thread = startThread({ [self] in produce() }) else {
            // The system refused a thread: the collectors run here, one record at a time, as
            // they did before this pipeline (slower, never a wait for a thread that never ran).
            for (position, collector) in collectors.enumerated() {
                try collector.forEachEntry { record, repeatsValues in try entry(position, record, repeatsValues) }
                try collectorEnded(position)
            }
            return
        }
        // The thread has ended, and let go of the collectors, before this returns.
        defer { thread.join() }
        do {
            while let chunk = try next() {
                let bytes = chunk.bytes
                var position = 0
                while position < bytes.count {
                    let length = Int(bytes[position]) | Int(bytes[position + 1]) << 8
                    let repeats = bytes[position + 2] != 0
                    let record = UnsafeRawBufferPointer(rebasing: bytes[(position + 3)..<(position + 3 + length)])
                    position += 3 + length
                    try entry(chunk.collector, record, repeats)
                }
                let (collector, ends) = (chunk.collector, chunk.endsCollector)
                recycle(chunk)
                if ends { try collectorEnded(collector) }
            }
        } catch {
            stop()
            throw error
        }
    }

    /// The next chunk in order; nil once the collectors are done; their error, if they failed.
    private func next() throws -> Chunk? {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && isRunning { condition.wait() }
        if !queue.isEmpty {
            let chunk = queue.removeFirst()
            condition.broadcast()
            return chunk
        }
        if let failure { throw failure }
        return nil
    }

    private func recycle(_ chunk: Chunk) {
        condition.lock()
        if spare.count < 2 { spare.append(chunk) }
        condition.unlock()
    }

    /// Stops the collectors' thread and waits for it to end.
    private func stop() {
        condition.lock()
        isStopped = true
        queue.removeAll()
        condition.broadcast()
        while isRunning { condition.wait() }
        condition.unlock()
    }

    // MARK: The collectors' thread

    private func produce() {
        // Room for a chunk's worth and one more entry of the longest record: an entry that
        // does not fit `chunkBytes` still goes in, alone.
        let capacity = chunkBytes + 3 + Self.maximumRecordSize
        var chunk = Chunk(capacity: capacity)
        var outcome: (any Error)?
        do {
            for (position, collector) in collectors.enumerated() {
                chunk.collector = position
                try collector.forEachEntry { record, repeatsValues in
                    precondition(record.count <= Self.maximumRecordSize, "an index record that fits a page")
                    if chunk.used > 0, chunk.used + 3 + record.count > chunkBytes {
                        chunk = try send(chunk, endsCollector: false, capacity: capacity)
                    }
                    chunk.append(record, repeatsValues: repeatsValues)
                }
                chunk = try send(chunk, endsCollector: true, capacity: capacity)
            }
        } catch {
            outcome = error
        }
        condition.lock()
        if let outcome, !(outcome is Stopped) { failure = outcome }
        isRunning = false
        condition.broadcast()
        condition.unlock()
    }

    /// Queues `chunk` (waiting while `queueLimit` chunks wait) and returns the next one, for
    /// the same collector: a spare one emptied, or a new one.
    private func send(_ chunk: Chunk, endsCollector: Bool, capacity: Int) throws -> Chunk {
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= queueLimit && !isStopped { condition.wait() }
        guard !isStopped else { throw Stopped() }
        chunk.endsCollector = endsCollector
        queue.append(chunk)
        condition.broadcast()
        let next = spare.popLast() ?? Chunk(capacity: capacity)
        next.used = 0
        next.collector = chunk.collector
        next.endsCollector = false
        return next
    }
}
