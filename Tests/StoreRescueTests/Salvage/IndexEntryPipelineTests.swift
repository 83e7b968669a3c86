import Foundation
import Testing
@testable import StoreRescue

/// `IndexEntryPipeline` runs index key collectors on a thread of their own and hands their
/// records back in order: every record of every collector, each collector's end after its last
/// record, an error of either side where it belongs, and no collector still running once
/// `forEach` has returned.
@Suite struct IndexEntryPipelineTests {
    /// A collector that gives `records` (their flag: the record's first byte is odd), and
    /// throws `failure` after `failAfter` of them.
    class ScriptedCollector: IndexKeyCollector, @unchecked Sendable {
        struct Failure: Error, Equatable { var name: String }
        let records: [[UInt8]]
        let failAfter: Int?
        private let lock = NSLock()
        private var running = false
        private var given = 0

        init(records: [[UInt8]], failAfter: Int? = nil) {
            self.records = records
            self.failAfter = failAfter
        }

        var indexes: [BulkIndex] { [] }
        var isAbandoned: Bool { false }
        var bytesHeld: Int { 0 }
        func add(rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer) {}
        func spill() throws {}

        /// True while `forEachEntry` runs.
        var isRunning: Bool { lock.withLock { running } }
        /// Records handed out so far.
        var recordsGiven: Int { lock.withLock { given } }

        func forEachEntry(_ body: (UnsafeRawBufferPointer, Bool) throws -> Void) throws {
            lock.withLock { running = true }
            defer { lock.withLock { running = false } }
            for (number, record) in records.enumerated() {
                if number == failAfter { throw Failure(name: "collector failed") }
                try record.withUnsafeBytes { try body($0, record[0] & 1 == 1) }
                lock.withLock { given += 1 }
            }
        }
    }

    /// Records of lengths 1 to `maximum`, their bytes from `seed`.
    static func records(count: Int, seed: Int, maximum: Int = 700) -> [[UInt8]] {
        (0..<count).map { number in
            let length = 1 + (number * 37 + seed) % maximum
            return (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ number &+ seed) }
        }
    }

    /// What the consumer saw, in order: `.record(collector, bytes, flag)` and `.ended(collector)`.
    enum Event: Equatable {
        case record(Int, [UInt8], Bool)
        case ended(Int)
    }

    static func expected(_ collectors: [ScriptedCollector]) -> [Event] {
        collectors.enumerated().flatMap { position, collector in
            collector.records.map { Event.record(position, $0, $0[0] & 1 == 1) } + [.ended(position)]
        }
    }

    @Test(arguments: [(64 << 10, 4), (700, 1), (4_096, 2)])
    func everyRecordComesBackInOrderWithItsCollectorsEnd(chunkBytes: Int, queueLimit: Int) throws {
        // An empty collector, one whose records fill many chunks, one whose record is larger
        // than a chunk of 700 bytes can hold beside another, and a small one.
        let collectors = [
            ScriptedCollector(records: []),
            ScriptedCollector(records: Self.records(count: 5_000, seed: 1)),
            ScriptedCollector(records: [[UInt8](repeating: 3, count: 697), [2], [UInt8](repeating: 5, count: 697)]),
            ScriptedCollector(records: Self.records(count: 3, seed: 2)),
        ]
        var events: [Event] = []
        try IndexEntryPipeline(collectors: collectors, chunkBytes: chunkBytes, queueLimit: queueLimit).forEach { collector, record, repeats in
            events.append(.record(collector, Array(record), repeats))
        } collectorEnded: { collector in
            events.append(.ended(collector))
        }
        #expect(events.count == Self.expected(collectors).count)
        #expect(events == Self.expected(collectors))
    }

    @Test func aCollectorsErrorIsThrownAfterTheRecordsBeforeIt() throws {
        let first = ScriptedCollector(records: Self.records(count: 300, seed: 3))
        let failing = ScriptedCollector(records: Self.records(count: 2_000, seed: 4), failAfter: 1_500)
        let never = ScriptedCollector(records: Self.records(count: 10, seed: 5))
        var events: [Event] = []
        let error = #expect(throws: ScriptedCollector.Failure.self) {
            try IndexEntryPipeline(collectors: [first, failing, never], chunkBytes: 2_048, queueLimit: 2).forEach { collector, record, repeats in
                events.append(.record(collector, Array(record), repeats))
            } collectorEnded: { collector in
                events.append(.ended(collector))
            }
        }
        #expect(error == ScriptedCollector.Failure(name: "collector failed"))
        // Everything before the failure that reached a full chunk was handed over, in order;
        // the failing collector never ended, and the one after it never ran.
        let expected = Self.expected([first]) + failing.records.prefix(1_500).map { Event.record(1, $0, $0[0] & 1 == 1) }
        #expect(events.count <= expected.count)
        #expect(Array(expected.prefix(events.count)) == events)
        #expect(events.contains(.ended(0)))
        #expect(!events.contains(.ended(1)))
        #expect(never.recordsGiven == 0)
    }

    @Test func anErrorOfTheConsumerStopsTheCollectorsBeforeForEachReturns() throws {
        struct WriteFailed: Error {}
        let collector = ScriptedCollector(records: Self.records(count: 200_000, seed: 6, maximum: 40))
        var seen = 0
        #expect(throws: WriteFailed.self) {
            try IndexEntryPipeline(collectors: [collector], chunkBytes: 1_024, queueLimit: 2).forEach { _, _, _ in
                seen += 1
                if seen == 1_000 { throw WriteFailed() }
            } collectorEnded: { _ in
                Issue.record("the collector never ends: the consumer stopped it")
            }
        }
        #expect(seen == 1_000)
        #expect(!collector.isRunning, "the collector's thread has ended when forEach returns")
        // It stopped at a chunk it could not hand over: a few chunks past what was read,
        // far short of its 200,000 records.
        #expect(collector.recordsGiven < 10_000, "stopped early: \(collector.recordsGiven)")
    }

    /// When the system refuses a thread (`RLIMIT_NPROC`, a pids limit), the collectors run on
    /// the caller's thread: every record, in order — where `Thread.start()` failed silently and
    /// `forEach` waited for ever (a review's salvage under `ulimit -u 3`).
    @Test func withoutAThreadTheCollectorsRunOnTheCallersThread() throws {
        let collectors = [
            ScriptedCollector(records: Self.records(count: 2_000, seed: 7)),
            ScriptedCollector(records: []),
            ScriptedCollector(records: Self.records(count: 30, seed: 8)),
        ]
        var events: [Event] = []
        var starts = 0
        try IndexEntryPipeline(collectors: collectors, startThread: { _ in
            starts += 1
            return nil
        }).forEach { collector, record, repeats in
            events.append(.record(collector, Array(record), repeats))
        } collectorEnded: { collector in
            events.append(.ended(collector))
        }
        #expect(starts == 1)
        #expect(events == Self.expected(collectors))
    }

    /// The collectors are let go of on the caller's thread, after `forEach` returns: a sorter's
    /// release closes and removes its spill file, which must not race the removal of the
    /// salvage's private folder (a review saw an empty folder left behind after SIGTERM). The
    /// thread here holds its body 50 ms past the collectors' end, as a slow thread exit would.
    @Test func theCollectorsAreReleasedOnTheCallersThread() throws {
        final class Witness: @unchecked Sendable {
            let lock = NSLock()
            var releasedOn: pthread_t?
        }
        final class ReleaseWatchingCollector: ScriptedCollector, @unchecked Sendable {
            let witness: Witness
            init(records: [[UInt8]], witness: Witness) {
                self.witness = witness
                super.init(records: records)
            }
            deinit { witness.lock.withLock { witness.releasedOn = pthread_self() } }
        }
        let witness = Witness()
        var seen = 0
        try IndexEntryPipeline(
            collectors: [ReleaseWatchingCollector(records: Self.records(count: 500, seed: 9), witness: witness)],
            startThread: { body in JoinableThread { body(); usleep(50_000) } }
        ).forEach { _, _, _ in seen += 1 } collectorEnded: { _ in }
        #expect(seen == 500)
        let releasedOn = try #require(witness.lock.withLock { witness.releasedOn }, "released once the pipeline is gone")
        #expect(pthread_equal(releasedOn, pthread_self()) != 0, "released on the caller's thread")
    }

    @Test func noCollectorsIsNothingToDo() throws {
        var calls = 0
        try IndexEntryPipeline(collectors: []).forEach { _, _, _ in calls += 1 } collectorEnded: { _ in calls += 1 }
        #expect(calls == 0)
    }
}
