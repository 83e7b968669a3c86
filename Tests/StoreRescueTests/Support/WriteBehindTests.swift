import Foundation
import Testing
@testable import StoreRescue

/// `WriteBehind` gathers positioned writes into runs written on a thread of its own: the file
/// must end up exactly as if each write had been made directly, in order, and a failed write must
/// reach the caller.
///
/// Each test runs twice: with the writer thread, and without one (the system refused it, as
/// `RLIMIT_NPROC` or a pids limit may: the caller then writes each run itself).
@Suite struct WriteBehindTests {
    static func writer(_ descriptor: Int32, runBytes: Int, queueLimit: Int = 3, writebackInterval: Int = 8 << 20, thread: Bool) -> WriteBehind {
        WriteBehind(descriptor: descriptor, runBytes: runBytes, queueLimit: queueLimit, writebackInterval: writebackInterval,
                    startThread: { thread ? JoinableThread($0) : nil })
    }

    /// Pages appended in order, runs broken by jumps back (a root page written last) and gaps (a
    /// pointer-map page skipped, written later), the same bytes written twice: the file is what
    /// writing each directly would have made, with runs far smaller than the file.
    @Test(arguments: [true, false]) func theFileIsWhatDirectWritesWouldMake(thread: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("file")
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let writer = Self.writer(descriptor, runBytes: 16 << 10, queueLimit: 2, writebackInterval: 64 << 10, thread: thread)
        defer { writer.stop() }  // before the descriptor is closed, whatever happens
        var expected = [UInt8](repeating: 0, count: 0)
        var generator = SeededGenerator(seed: 7)
        func write(_ count: Int, at offset: Int) throws {
            let bytes = generator.bytes(count)
            if expected.count < offset + count { expected += [UInt8](repeating: 0, count: offset + count - expected.count) }
            expected.replaceSubrange(offset..<offset + count, with: bytes)
            try bytes.withUnsafeBytes { try writer.write($0, at: Int64(offset)) }
        }
        var next = 4096
        for page in 0..<300 {
            if page % 50 == 49 { next += 4096 }  // a page left for later
            try write(4096, at: next)
            next += 4096
            if page % 70 == 0 { try write(4096, at: 0) }  // back to the first page
            if page % 90 == 5 { try write(100, at: next - 2048) }  // over bytes already queued
        }
        try write(4096, at: 50 * 4096)  // the page left out first, at last
        try write(70_000, at: next)  // one write larger than a run
        try writer.finish()
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(written.count == expected.count)
        #expect(written == expected)
    }

    /// `drain` returns once every byte handed over is in the file, so the caller may read it back.
    @Test(arguments: [true, false]) func drainedBytesCanBeReadBack(thread: Bool) throws {
        let directory = try TemporaryDirectory()
        let descriptor = open(directory.path("file"), O_RDWR | O_CREAT | O_EXCL, 0o600)
        defer { close(descriptor) }
        let writer = Self.writer(descriptor, runBytes: 8192, thread: thread)
        defer { writer.stop() }
        for round in 0..<20 {
            let page = [UInt8](repeating: UInt8(round + 1), count: 4096)
            try page.withUnsafeBytes { try writer.write($0, at: Int64(round) * 4096) }
            try writer.drain()
            var read = [UInt8](repeating: 0, count: 4096)
            #expect(FileReading.read(descriptor, into: &read, at: Int64(round) * 4096) == 4096)
            #expect(read == page, "round \(round)")
        }
    }

    /// A write the system refuses (here: a descriptor opened for reading) stops the thread, and
    /// the caller's next call throws its `errno`; nothing hangs.
    @Test(arguments: [true, false]) func aFailedWriteReachesTheCaller(thread: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("file")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        let writer = Self.writer(descriptor, runBytes: 4096, queueLimit: 1, thread: thread)
        let page = [UInt8](repeating: 1, count: 4096)
        let failure = #expect(throws: WriteBehind.Failure.self) {
            for index in 0..<100 { try page.withUnsafeBytes { try writer.write($0, at: Int64(index) * 4096) } }
            try writer.finish()
        }
        #expect(failure?.code == EBADF)
        #expect(throws: WriteBehind.Failure.self) { try writer.drain() }
        writer.stop()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
    }
}
