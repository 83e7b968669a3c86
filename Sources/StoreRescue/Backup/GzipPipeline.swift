import Crypto
import Foundation

/// The threads and shared state behind a `ParallelGzipWriter`. Every mutable field is guarded by
/// `condition`, except the hashing state, which only the writer thread (then `finish`) touches.
///
/// When the system refuses the threads (`JoinableThread`: `RLIMIT_NPROC`, a container's pids
/// limit), `submit` compresses and writes each block on the caller's thread, the file byte for
/// byte the same. (With Foundation's `Thread`, the refusal went unnoticed and the backup waited
/// for ever for blocks nobody compressed.)
final class GzipPipeline: @unchecked Sendable {
    struct Job {
        var index: Int
        var input: [UInt8]
        var dictionary: [UInt8]
        var isLast: Bool
    }

    struct Compressed {
        var bytes: [UInt8]
        var crc: UInt32
        var length: Int
    }

    static let headerLength = 10

    let leadingLength: Int
    private let output: SafeFileOutput
    private let condition = NSCondition()
    private let maximumInFlight: Int
    private let header: [UInt8]
    private let storedLength: Int

    private var jobs: [Job] = []
    private var results: [Int: Compressed] = [:]
    private var inFlight = 0
    private var failure: (any Error)?
    private var isClosed = false
    private var runningThreads = 0
    private var blockCount: Int?
    private var leading: [UInt8]?
    /// The threads started (the caller's thread only); empty when the system refused them.
    private var threads: [JoinableThread] = []
    /// Set when the system refused the threads: `submit` compresses and writes each block with
    /// it, on the caller's thread, in order (the same bytes as the threads would write).
    private var serialStream: DeflateStream?

    // Writer-thread state.
    private var nextToWrite = 0
    private var restCRC: UInt32 = 0
    private var restLength: Int64 = 0
    private var hasher = SHA256()
    private var hashedThrough: Int64 = 0
    private var isLeadingWritten = false

    /// Starts the threads (`threads` compressors and a writer) and writes the gzip header.
    ///
    /// - Parameter startThread: starts each thread (`JoinableThread`; tests pass one that fails).
    init(output: SafeFileOutput, level: Int32, threads: Int, leadingLength: Int,
         startThread: JoinableThread.Start = { JoinableThread($0) }) throws {
        precondition(threads >= 1, "at least one compressor")
        self.output = output
        self.leadingLength = leadingLength
        maximumInFlight = 2 * threads + 1
        // Magic, CM = 8 (deflate), no flags, MTIME 0 (reproducible), XFL 0, OS 3 (Unix).
        header = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3]
        let storedBlocks = (leadingLength + 65_534) / 65_535
        storedLength = leadingLength + 5 * storedBlocks
        try output.write(header + [UInt8](repeating: 0, count: storedLength))
        if leadingLength == 0 {
            leading = []
            hasher.update(data: header)
            hashedThrough = Int64(header.count)
            isLeadingWritten = true
        }
        var streams: [DeflateStream] = []
        for _ in 0..<threads { streams.append(try DeflateStream(level: level)) }
        startThreads(streams: streams, startThread: startThread)
    }

    /// Starts a compressing thread per stream, then the writer. Fewer compressors than asked
    /// (the system refused the rest) only compress more slowly; without one, or without the
    /// writer, nothing would move: the threads started are stopped and `submit` does the work.
    private func startThreads(streams: [DeflateStream], startThread: JoinableThread.Start) {
        func start(_ body: @escaping @Sendable () -> Void) -> Bool {
            condition.lock()
            runningThreads += 1
            condition.unlock()
            guard let thread = startThread(body) else {
                condition.lock()
                runningThreads -= 1
                condition.unlock()
                return false
            }
            threads.append(thread)
            return true
        }
        for stream in streams {
            let box = StreamBox(stream: stream)
            guard start({ [self] in self.compressLoop(box.stream) }) else { break }
        }
        if !threads.isEmpty && start({ [self] in self.writeLoop() }) { return }
        // Refused: the compressors started end at once (no job yet), and the caller's thread
        // compresses and writes each block as it is submitted.
        condition.lock()
        isClosed = true
        condition.broadcast()
        while runningThreads > 0 { condition.wait() }
        isClosed = false
        condition.unlock()
        joinThreads()
        serialStream = streams[0]
    }

    private final class StreamBox: @unchecked Sendable {
        let stream: DeflateStream
        init(stream: DeflateStream) { self.stream = stream }
    }

    func submit(_ job: Job) throws {
        if let serialStream { return try compressAndWriteHere(job, with: serialStream) }
        condition.lock()
        defer { condition.unlock() }
        while inFlight >= maximumInFlight && failure == nil { condition.wait() }
        if let failure { throw failure }
        jobs.append(job)
        inFlight += 1
        condition.broadcast()
    }

    func supplyLeading(_ bytes: [UInt8]) {
        condition.lock()
        leading = bytes
        condition.broadcast()
        condition.unlock()
    }

    /// Records `error` as the pipeline's failure and waits for every thread to stop, so that
    /// nothing writes to the output once this returns.
    func abort(_ error: any Error) {
        condition.lock()
        if failure == nil { failure = error }
        isClosed = true
        condition.broadcast()
        condition.unlock()
    }

    func abortAndWait(_ error: any Error) {
        abort(error)
        condition.lock()
        while runningThreads > 0 { condition.wait() }
        condition.unlock()
        joinThreads()
    }

    /// Waits for the threads started to end and let go of what they hold (the caller's thread).
    private func joinThreads() {
        for thread in threads { thread.join() }
        threads.removeAll()
    }

    /// Waits for every block to be written, then writes the trailer.
    func finish(blockCount: Int) throws -> GzipSummary {
        condition.lock()
        self.blockCount = blockCount
        isClosed = true
        condition.broadcast()
        while runningThreads > 0 { condition.wait() }
        let failure = self.failure
        let leading = self.leading
        condition.unlock()
        joinThreads()
        if let failure { throw failure }
        guard let leading else { preconditionFailure("finish before the announced leading bytes were supplied") }
        try writeLeadingIfNeeded(leading)
        let leadingCRC = leading.withUnsafeBytes { $0.crc32Checksum() }
        let crc = crc32Combine(leadingCRC, restCRC, secondLength: restLength)
        let length = Int64(leadingLength) + restLength
        var trailer = [UInt8]()
        for shift in stride(from: 0, to: 32, by: 8) { trailer.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        for shift in stride(from: 0, to: 32, by: 8) { trailer.append(UInt8(truncatingIfNeeded: length >> Int64(shift))) }
        try output.write(trailer)
        try catchUpHash()
        return GzipSummary(uncompressedSize: length, compressedSize: output.size, crc32: crc,
                           sha256: hasher.finalize().hexString)
    }

    private func compressLoop(_ stream: DeflateStream) {
        while true {
            condition.lock()
            while jobs.isEmpty && !isClosed && failure == nil { condition.wait() }
            if failure != nil || jobs.isEmpty {
                runningThreads -= 1
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            do {
                let result = try Self.compress(job, with: stream)
                condition.lock()
                results[job.index] = result
                condition.broadcast()
                condition.unlock()
            } catch {
                abort(error)
            }
        }
    }

    private func writeLoop() {
        while true {
            condition.lock()
            while results[nextToWrite] == nil && failure == nil && !(blockCount.map { nextToWrite >= $0 } ?? false) {
                condition.wait()
            }
            let done = failure != nil || (blockCount.map { nextToWrite >= $0 } ?? false)
            let result = done ? nil : results.removeValue(forKey: nextToWrite)
            let leading = self.leading
            if done {
                runningThreads -= 1
                condition.broadcast()
                condition.unlock()
                return
            }
            condition.unlock()
            guard let result else { continue }
            do {
                try write(result, leading: leading)
                condition.lock()
                nextToWrite += 1
                inFlight -= 1
                condition.broadcast()
                condition.unlock()
            } catch {
                abort(error)
            }
        }
    }

    private static func compress(_ job: Job, with stream: DeflateStream) throws -> Compressed {
        try job.input.withUnsafeBytes { input in
            try job.dictionary.withUnsafeBytes { dictionary in
                Compressed(bytes: try stream.compress(input, dictionary: dictionary, isLast: job.isLast),
                           crc: input.crc32Checksum(), length: input.count)
            }
        }
    }

    /// Writes the next block in order (and the leading bytes first, once they are known).
    private func write(_ result: Compressed, leading: [UInt8]?) throws {
        if let leading { try writeLeadingIfNeeded(leading) }
        try result.bytes.withUnsafeBytes { bytes in
            try output.write(bytes)
            if isLeadingWritten && hashedThrough == output.size - Int64(bytes.count) {
                hasher.update(bufferPointer: bytes)
                hashedThrough = output.size
            }
        }
        restCRC = crc32Combine(restCRC, result.crc, secondLength: Int64(result.length))
        restLength += Int64(result.length)
    }

    /// Without threads: compresses and writes `job` now (blocks are submitted in order). An
    /// error is the pipeline's failure, thrown here and by every later call.
    private func compressAndWriteHere(_ job: Job, with stream: DeflateStream) throws {
        condition.lock()
        let (failure, leading) = (self.failure, self.leading)
        condition.unlock()
        if let failure { throw failure }
        precondition(job.index == nextToWrite, "blocks submitted in order")
        do {
            try write(try Self.compress(job, with: stream), leading: leading)
            nextToWrite += 1
        } catch {
            abort(error)
            throw error
        }
    }

    /// Writes the leading bytes into their reserved stored blocks, once, and brings the hash up to date.
    private func writeLeadingIfNeeded(_ leading: [UInt8]) throws {
        guard !isLeadingWritten else { return }
        var stored = [UInt8]()
        stored.reserveCapacity(storedLength)
        var offset = 0
        while offset < leading.count {
            let length = min(65_535, leading.count - offset)
            // BFINAL 0, BTYPE 00 (stored), padded to a byte; then LEN and its complement NLEN.
            stored += [0, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            stored += leading[offset..<(offset + length)]
            offset += length
        }
        try stored.withUnsafeBytes { try output.write($0, at: Int64(header.count)) }
        hasher.update(data: header)
        hasher.update(data: stored)
        hashedThrough = Int64(header.count + storedLength)
        isLeadingWritten = true
        try catchUpHash()
    }

    /// Hashes what was written before the leading bytes were known, reading it back.
    private func catchUpHash() throws {
        guard isLeadingWritten else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while hashedThrough < output.size {
            let want = Int(min(Int64(buffer.count), output.size - hashedThrough))
            let count = try buffer.withUnsafeMutableBytes { try output.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want]), at: hashedThrough) }
            guard count > 0 else { throw GzipError.compressionFailed(detail: "could not read back \(output.temporaryPath)") }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            hashedThrough += Int64(count)
        }
    }
}
