import Foundation

/// Figures about a gzip file written by `ParallelGzipWriter`.
public struct GzipSummary: Sendable, Equatable {
    /// Bytes before compression.
    public var uncompressedSize: Int64
    /// Bytes of the `.gz` file, header and trailer included.
    public var compressedSize: Int64
    /// CRC-32 of the uncompressed bytes (the value in the gzip trailer).
    public var crc32: UInt32
    /// SHA-256 of the `.gz` file, lowercase hex.
    public var sha256: String
}

/// Compresses a stream of bytes into one standard gzip member (RFC 1952) on several threads.
///
/// The input is cut into blocks; each block is deflated on a worker thread, primed with the
/// previous block's last 32 KiB (see `DeflateStream`), and the results are written in order by a
/// writer thread that also hashes the output. `gunzip` reads the result like any other gzip file,
/// and it is within a fraction of a percent of the size `gzip` itself produces at the same level.
/// Memory stays bounded: at most `2 × threads + 1` blocks are in flight; `append` waits when the
/// workers fall behind. When the system refuses the threads (`RLIMIT_NPROC`, a container's pids
/// limit), `append` compresses and writes each block itself: slower, the same file.
///
/// The first `leadingBytesSuppliedLater` bytes of the uncompressed stream may be handed over
/// last, with `supplyLeadingBytes(_:)`: they are stored uncompressed (DEFLATE "stored" blocks of a
/// size known in advance) at the start of the file, so everything after them can be compressed and
/// written before they are known. The online backup needs this: SQLite rewrites page 1 of a
/// snapshot when the copy completes.
///
/// `append`, `finish` and `abort` are called from one thread at a time (plus the writer's own
/// threads); `supplyLeadingBytes(_:)` may be called from any thread, while `append` runs.
public final class ParallelGzipWriter {
    public struct Options: Sendable {
        /// zlib compression level, 1 (fastest) to 9 (smallest). Default 6, like `gzip`.
        public var level: Int32
        /// Uncompressed bytes per block. Default 1 MiB.
        public var blockSize: Int
        /// Compressing threads. Default: one per core.
        public var threads: Int
        /// How many leading bytes will come from `supplyLeadingBytes(_:)` instead of `append`.
        public var leadingBytesSuppliedLater: Int

        public init(level: Int32 = 6, blockSize: Int = 1 << 20, threads: Int = ProcessInfo.processInfo.activeProcessorCount,
                    leadingBytesSuppliedLater: Int = 0) {
            self.level = level
            self.blockSize = blockSize
            self.threads = threads
            self.leadingBytesSuppliedLater = leadingBytesSuppliedLater
        }
    }

    private let pipeline: GzipPipeline
    private let blockSize: Int
    private var block: [UInt8] = []
    private var dictionary: [UInt8] = []
    private var nextIndex = 0
    private var isFinished = false

    /// Starts the threads and writes the gzip header to `output`.
    ///
    /// - Precondition: `output` is empty and used by nothing else until `finish()` returns.
    public convenience init(output: SafeFileOutput, options: Options = Options()) throws {
        try self.init(output: output, options: options, startThread: { JoinableThread($0) })
    }

    /// `init(output:options:)`, each thread started by `startThread` (tests pass one that
    /// refuses, as the system may: the caller's thread then compresses and writes each block as
    /// `append` fills it, the file byte for byte the same).
    init(output: SafeFileOutput, options: Options, startThread: @escaping JoinableThread.Start) throws {
        precondition((1...9).contains(options.level), "compression level must be 1...9")
        precondition(options.blockSize >= 64 * 1024 && options.threads >= 1)
        blockSize = options.blockSize
        block.reserveCapacity(blockSize)
        pipeline = try GzipPipeline(output: output, level: options.level, threads: options.threads,
                                    leadingLength: options.leadingBytesSuppliedLater, startThread: startThread)
    }

    deinit {
        pipeline.abortAndWait(GzipError.compressionFailed(detail: "abandoned"))
    }

    /// Appends bytes to the uncompressed stream. Waits while too many blocks are in flight.
    ///
    /// - Throws: the first error of a worker or of the output (disk full, …).
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        precondition(!isFinished, "append after finish")
        guard let source = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let take = min(blockSize - block.count, bytes.count - offset)
            // One memcpy into the block's spare capacity.
            let start = block.count
            block.append(contentsOf: repeatElement(0, count: take))
            block.withUnsafeMutableBytes { ($0.baseAddress! + start).copyMemory(from: source + offset, byteCount: take) }
            offset += take
            if block.count == blockSize { try submitBlock(isLast: false) }
        }
    }

    /// Hands over the leading bytes announced in `Options.leadingBytesSuppliedLater`.
    public func supplyLeadingBytes(_ bytes: [UInt8]) {
        precondition(bytes.count == pipeline.leadingLength, "leading bytes must be exactly as announced")
        pipeline.supplyLeading(bytes)
    }

    /// Compresses what is left, writes the trailer and returns the figures. Does not publish.
    public func finish() throws -> GzipSummary {
        precondition(!isFinished, "finish called twice")
        isFinished = true
        try submitBlock(isLast: true)
        return try pipeline.finish(blockCount: nextIndex)
    }

    /// Stops every thread; the output is left for its owner to discard.
    public func abort(_ error: any Error) {
        isFinished = true
        pipeline.abortAndWait(error)
    }

    private func submitBlock(isLast: Bool) throws {
        let job = GzipPipeline.Job(index: nextIndex, input: block, dictionary: dictionary, isLast: isLast)
        nextIndex += 1
        if !isLast {
            dictionary = Array(block.suffix(DeflateStream.dictionarySize))
            // The job owns the filled buffer now; start a fresh one rather than copy on write.
            block = []
            block.reserveCapacity(blockSize)
        }
        try pipeline.submit(job)
    }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hexadecimal.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
