import Crypto
import Foundation
import Testing
@testable import StoreRescue

/// A backup whose threads the system refuses (`RLIMIT_NPROC` for a service user, a container's
/// pids limit) is taken on the caller's thread, into the same files. Foundation's
/// `Thread.start()` ignored the refusal: the snapshot streamer, the gzip pipeline's compressors
/// and writer, and the verifier's hashing sink never ran, and their caller waited for ever (a
/// review's `backup` under `ulimit -u`: nothing but SIGKILL ended it).
///
/// Each test runs its refused path on a thread of its own with a deadline, so a hang fails it.
@Suite struct RefusedThreadBackupTests {
    static let leading = 4096

    static func gzip(_ bytes: [UInt8], to path: String, threads: Int = 3, start: @escaping JoinableThread.Start) throws -> GzipSummary {
        let output = try SafeFileOutput(destinationPath: path)
        let writer = try ParallelGzipWriter(output: output, options: .init(
            level: 6, blockSize: 64 << 10, threads: threads, leadingBytesSuppliedLater: leading), startThread: start)
        try bytes.withUnsafeBytes { try writer.append(UnsafeRawBufferPointer(rebasing: $0[leading...])) }
        writer.supplyLeadingBytes(Array(bytes.prefix(leading)))
        let summary = try writer.finish()
        try output.publish()
        return summary
    }

    /// Every thread refused (0), or some granted: one compressor and the writer refused (1),
    /// three compressors and the writer refused (3), the second compressor refused and the
    /// writer granted (`refusing: [2]`: one compressor). The file and its figures are those of
    /// the threaded writer, and `gunzip` restores the input.
    @Test(arguments: [RefusedCase.granting(0), .granting(1), .granting(3), .refusing([2])])
    func gzipWithoutItsThreadsWritesTheSameFile(refused: RefusedCase) throws {
        let temp = try TemporaryDirectory()
        let bytes = GzipTests.sampleBytes(count: 900_000)
        let threaded = try Self.gzip(bytes, to: temp.path("threaded.gz"), start: { JoinableThread($0) })
        let starts = refused.threads
        let path = temp.path("refused.gz")
        let summary = try RefusedThreads.within(30, "the gzip writer") { try Self.gzip(bytes, to: path, start: starts.start) }
        #expect(starts.starts >= 1)
        #expect(summary == threaded)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contentsOf: URL(fileURLWithPath: temp.path("threaded.gz"))))
        var decompressed: [UInt8] = []
        _ = try GzipReader.decompress(path: path) { decompressed += $0 }
        #expect(decompressed == bytes)
    }

    /// A pipeline without threads stopped part way (a snapshot failing: `abortAndWait`) returns
    /// at once and throws the error at its next block, as with threads; the file is left for
    /// its owner to discard.
    @Test func gzipWithoutItsThreadsStopsOnAbort() throws {
        struct SnapshotFailed: Error {}
        let temp = try TemporaryDirectory()
        let bytes = GzipTests.sampleBytes(count: 400_000)
        let path = temp.path("refused.gz")
        let outcome = try RefusedThreads.within(30, "the gzip writer") { () -> Bool in
            let output = try SafeFileOutput(destinationPath: path)
            defer { output.discard() }
            let pipeline = try GzipPipeline(output: output, level: 6, threads: 2, leadingLength: 0, startThread: RefusedThreads().start)
            try pipeline.submit(.init(index: 0, input: Array(bytes[..<200_000]), dictionary: [], isLast: false))
            pipeline.abortAndWait(SnapshotFailed())
            do {
                try pipeline.submit(.init(index: 1, input: Array(bytes[200_000...]), dictionary: [], isLast: true))
                return false
            } catch {
                return error is SnapshotFailed
            }
        }
        #expect(outcome == true, "the next append throws the abort's error")
    }

    /// Streams `file` (its first `leading` bytes handed over last) through a streamer and a
    /// writer, publishing the final end in steps that do not fall on chunks, as a snapshot does.
    static func stream(_ file: String, size: Int, to path: String, streamer streamerStart: @escaping JoinableThread.Start,
                       writer writerStart: @escaping JoinableThread.Start) throws -> GzipSummary {
        let output = try SafeFileOutput(destinationPath: path)
        let writer = try ParallelGzipWriter(output: output, options: .init(
            level: 6, blockSize: 64 << 10, threads: 2, leadingBytesSuppliedLater: leading), startThread: writerStart)
        let streamer = SnapshotStreamer(path: file, startOffset: Int64(leading), writer: writer, chunkSize: 100_000, startThread: streamerStart)
        streamer.start()
        for end in stride(from: 0, to: size, by: 250_000) {
            if let error = streamer.error { throw error }
            streamer.publish(finalEnd: Int64(end), isComplete: false)
        }
        streamer.publish(finalEnd: Int64(size), isComplete: true)
        while try !streamer.wait(timeout: 0.2) {}
        #expect(streamer.bytesConsumed == Int64(size - leading))
        writer.supplyLeadingBytes(try BackupRunner.readPrefix(of: file, count: leading))
        let summary = try writer.finish()
        try output.publish()
        return summary
    }

    /// The streamer's thread refused (and the writer's too, or not): what is final is handed to
    /// the compressor by `publish` itself, and the archive is the threaded one's.
    @Test(arguments: [false, true]) func aSnapshotStreamedWithoutItsThreadGivesTheSameArchive(writerHasThreads: Bool) throws {
        let temp = try TemporaryDirectory()
        let bytes = GzipTests.sampleBytes(count: 1_234_567, seed: 3)
        let file = temp.path("snapshot")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let threaded = try Self.stream(file, size: bytes.count, to: temp.path("threaded.gz"),
                                       streamer: { JoinableThread($0) }, writer: { JoinableThread($0) })
        let streamerStarts = RefusedThreads()
        let writerStarts = RefusedThreads(granting: writerHasThreads ? .max : 0)
        let path = temp.path("refused.gz")
        let summary = try RefusedThreads.within(30, "the snapshot streamer") {
            try Self.stream(file, size: bytes.count, to: path, streamer: streamerStarts.start, writer: writerStarts.start)
        }
        #expect(streamerStarts.starts == 1)
        #expect(summary == threaded)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contentsOf: URL(fileURLWithPath: temp.path("threaded.gz"))))
    }

    /// The streamer without a thread that cannot read the snapshot keeps the error for the
    /// backup's next look (`error`, `wait`), as its thread would.
    @Test func aSnapshotStreamerWithoutItsThreadKeepsItsReadError() throws {
        let temp = try TemporaryDirectory()
        let missing = temp.path("missing")
        let destination = temp.path("out.gz")
        let message = try RefusedThreads.within(30, "the snapshot streamer") { () -> String? in
            let output = try SafeFileOutput(destinationPath: destination)
            defer { output.discard() }
            let writer = try ParallelGzipWriter(output: output, options: .init(threads: 1), startThread: RefusedThreads().start)
            let streamer = SnapshotStreamer(path: missing, startOffset: 0, writer: writer, startThread: RefusedThreads().start)
            streamer.start()
            streamer.publish(finalEnd: 10, isComplete: true)
            let error = streamer.error
            #expect(throws: BackupError.self) { _ = try streamer.wait(timeout: 0) }
            streamer.abort(CancellationError())
            writer.abort(CancellationError())
            return error.map { "\($0)" }
        }
        #expect(message??.contains("cannot read the snapshot") == true, "\(String(describing: message))")
    }

    /// The verifier's sink without its thread hashes and writes every chunk on `push`, more
    /// chunks than it may queue: the file and SHA-256 are the threaded sink's.
    @Test func aHashingSinkWithoutItsThreadWritesAndHashesEveryChunk() throws {
        let temp = try TemporaryDirectory()
        var generator = SplitMix64(seed: 11)
        let chunks = (0..<40).map { _ in (0..<10_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
        let folder = temp.url.path
        @Sendable func sink(_ name: String, _ start: @escaping JoinableThread.Start) throws -> String {
            let output = try SafeFileOutput(destinationPath: folder + "/" + name)
            let sink = HashingFileSink(output: output, capacity: 2, startThread: start)
            for chunk in chunks { try chunk.withUnsafeBytes { try sink.push($0) } }
            let sum = try sink.finish()
            try output.publish()
            return sum
        }
        let threaded = try sink("threaded", { JoinableThread($0) })
        let path = temp.path("refused")
        let starts = RefusedThreads()
        let sum = try RefusedThreads.within(30, "the hashing sink") { try sink("refused", starts.start) }
        #expect(starts.starts == 1)
        #expect(sum == threaded)
        #expect(sum == SHA256.hash(data: Data(chunks.joined())).hexString)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(chunks.joined()))
    }

    /// A whole backup with every thread refused (snapshot streamer, compressors, writer, the
    /// snapshot's digest): the same `.gz` and manifest, byte for byte, as with its threads, and
    /// it verifies.
    @Test func aBackupWithoutThreadsIsTheSameBackup() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("Orders.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20_000)
        let date = Date(timeIntervalSince1970: 1_738_314_900)
        let parent = temp.url.path
        @Sendable func backup(into folder: String, _ start: @escaping JoinableThread.Start) throws -> BackupResult {
            var options = BackupOptions.testing(parent + "/" + folder, at: date)
            options.pagesPerStep = 37
            options.blockSize = 64 << 10
            options.threads = 2
            return try BackupRunner.run(store: store, options: options, storeDescription: BackupRunner.readStoreDescription,
                                        progress: nil, cancellation: nil, afterFindingAtRest: nil, startThread: start)
        }
        let threaded = try backup(into: "threaded", { JoinableThread($0) })
        let starts = RefusedThreads()
        let refused = try #require(try RefusedThreads.within(60, "the backup") { try backup(into: "refused", starts.start) })
        #expect(starts.starts >= 3, "the streamer, a compressor and the digest asked for threads")
        #expect(refused.manifest.snapshotSize > 1 << 20)
        #expect(try Data(contentsOf: URL(fileURLWithPath: refused.backupPath)) == Data(contentsOf: URL(fileURLWithPath: threaded.backupPath)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: refused.manifestPath)) == Data(contentsOf: URL(fileURLWithPath: threaded.manifestPath)))
        #expect(BackupFixtures.fileNames(in: temp.path("refused")) == BackupFixtures.fileNames(in: temp.path("threaded")))
        #expect(try BackupVerifier.verify(backup: refused.backupPath).isGood)
    }

    /// The built command with every thread refused (`STORERESCUE_TEST_REFUSE_THREADS`, as
    /// `ulimit -u` refuses them to a service user; the tests run as root, whom it does not
    /// limit): `backup`, `verify` and `restore` end, within a deadline, as with threads, and the
    /// backup's `.gz` is the threaded one's, byte for byte.
    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func theCommandsWithoutThreadsEndAsWithThem() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("Orders.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20_000)
        var refused = ProcessInfo.processInfo.environment
        refused["STORERESCUE_TEST_REFUSE_THREADS"] = "1"
        let threaded = try CommandRunner.run(["backup", store, "--to", temp.path("threaded"), "--json"], timeout: 60)
        #expect(threaded.status == 0, "\(threaded.stdout)\(threaded.stderr)")
        let backup = try CommandRunner.run(["backup", store, "--to", temp.path("refused"), "--json"], environment: refused, timeout: 60)
        #expect(!backup.timedOut, "backup waited for a thread that never ran")
        #expect(backup.status == 0, "\(backup.stdout)\(backup.stderr)")
        let gz = try #require(try backup.json()["backup"] as? String)
        let threadedGZ = try #require(try threaded.json()["backup"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: gz)) == Data(contentsOf: URL(fileURLWithPath: threadedGZ)))

        let verify = try CommandRunner.run(["verify", gz, "--json"], environment: refused, timeout: 60)
        #expect(!verify.timedOut, "verify waited for a thread that never ran")
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(try verify.json()["good"] as? Bool == true)

        let restored = temp.path("restored.sqlite")
        let restore = try CommandRunner.run(["restore", gz, "--to", restored, "--json"], environment: refused, timeout: 60)
        #expect(!restore.timedOut, "restore waited for a thread that never ran")
        #expect(restore.status == 0, "\(restore.stdout)\(restore.stderr)")
        #expect(try BackupFixtures.content(of: restored) == BackupFixtures.content(of: store))
    }
}

/// Which thread starts a test refuses.
enum RefusedCase: Sendable, CustomTestStringConvertible {
    case granting(Int)
    case refusing(Set<Int>)

    var threads: RefusedThreads {
        switch self {
        case .granting(let count): return RefusedThreads(granting: count)
        case .refusing(let numbers): return RefusedThreads(refusing: numbers)
        }
    }

    var testDescription: String {
        switch self {
        case .granting(let count): return "the first \(count) granted"
        case .refusing(let numbers): return "start \(numbers.sorted()) refused"
        }
    }
}
