import Foundation
import Testing
@testable import StoreRescue

@Suite struct GzipTests {
    /// Text-like bytes that compress about as well as real data.
    static func sampleBytes(count: Int, seed: UInt64 = 7) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        let words = ["customer ", "invoice ", "shipped ", "2025-01-31 ", "Zürich ", "total: ", "42.50 ", "note\n"]
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 16)
        while bytes.count < count {
            bytes += Array(words[Int(generator.next() % 8)].utf8)
            if generator.next() % 5 == 0 { bytes.append(UInt8(truncatingIfNeeded: generator.next())) }
        }
        return Array(bytes.prefix(count))
    }

    static func write(_ bytes: [UInt8], to path: String, blockSize: Int = 64 * 1024, leading: Int = 0, level: Int32 = 6) throws -> GzipSummary {
        let output = try SafeFileOutput(destinationPath: path)
        let writer = try ParallelGzipWriter(output: output, options: .init(
            level: level, blockSize: blockSize, threads: 3, leadingBytesSuppliedLater: leading))
        try bytes.withUnsafeBytes { try writer.append(UnsafeRawBufferPointer(rebasing: $0[leading...])) }
        writer.supplyLeadingBytes(Array(bytes.prefix(leading)))
        let summary = try writer.finish()
        try output.publish()
        return summary
    }

    @Test(arguments: [(0, 0), (1, 0), (65_536, 0), (65_537, 0), (300_001, 0), (300_001, 4096), (200_000, 65_536), (4096, 4096)])
    func roundTripsThroughOurReaderAndSystemGzip(size: Int, leading: Int) throws {
        let temp = try TemporaryDirectory()
        let bytes = Self.sampleBytes(count: size)
        let summary = try Self.write(bytes, to: temp.path("a.gz"), leading: leading)
        #expect(summary.uncompressedSize == Int64(size))
        #expect(summary.sha256 == (try FileDigest.of(path: temp.path("a.gz")).sha256))
        #expect(summary.compressedSize == (try FileDigest.of(path: temp.path("a.gz")).size))

        var decompressed: [UInt8] = []
        let read = try GzipReader.decompress(path: temp.path("a.gz")) { decompressed += $0 }
        #expect(decompressed == bytes)
        #expect(read.memberCount == 1)
        #expect(read.compressedSHA256 == summary.sha256)
        let system = try BackupFixtures.run("/bin/sh", ["-c", "gzip -dc \"$1\" | cmp - \"$2\"", "sh", temp.path("a.gz"), try Self.file(bytes, temp.path("raw"))])
        #expect(system.status == 0, "gzip -d output differs: \(system.standardOutput)\(system.standardError)")
    }

    @Test func staysWithinTwoPercentOfGzip6() throws {
        let temp = try TemporaryDirectory()
        let bytes = Self.sampleBytes(count: 6 << 20)
        let ours = try Self.write(bytes, to: temp.path("ours.gz"), blockSize: 1 << 20)
        try Self.file(bytes, temp.path("raw"))
        try BackupFixtures.run("/bin/sh", ["-c", "gzip -6 -c \"$1\" > \"$2\"", "sh", temp.path("raw"), temp.path("gzip.gz")])
        let gzipSize = try FileDigest.of(path: temp.path("gzip.gz")).size
        #expect(gzipSize > 0)
        #expect(Double(ours.compressedSize) <= Double(gzipSize) * 1.02, "ours \(ours.compressedSize), gzip -6 \(gzipSize)")
    }

    @Test func readsConcatenatedMembers() throws {
        let temp = try TemporaryDirectory()
        let a = Self.sampleBytes(count: 10_000, seed: 1)
        let b = Self.sampleBytes(count: 20_000, seed: 2)
        _ = try Self.write(a, to: temp.path("a.gz"))
        _ = try Self.write(b, to: temp.path("b.gz"))
        try BackupFixtures.run("/bin/sh", ["-c", "cat \"$1\" \"$2\" > \"$3\"", "sh", temp.path("a.gz"), temp.path("b.gz"), temp.path("ab.gz")])
        var decompressed: [UInt8] = []
        let read = try GzipReader.decompress(path: temp.path("ab.gz")) { decompressed += $0 }
        #expect(read.memberCount == 2)
        #expect(decompressed == a + b)
    }

    @Test func reportsDamageByKind() throws {
        let temp = try TemporaryDirectory()
        let bytes = Self.sampleBytes(count: 200_000)
        _ = try Self.write(bytes, to: temp.path("a.gz"))
        let good = try Data(contentsOf: URL(fileURLWithPath: temp.path("a.gz")))
        func check(_ data: Data, _ name: String, expecting expected: (String) -> GzipError) throws {
            let path = temp.path(name)
            try data.write(to: URL(fileURLWithPath: path))
            #expect(throws: expected(path)) { _ = try GzipReader.decompress(path: path) { _ in } }
        }
        try check(good.prefix(good.count - 3), "truncated.gz") { .truncated(path: $0, atOffset: Int64(good.count - 3)) }
        var badCRC = good
        badCRC[good.count - 8] ^= 0xFF
        try check(badCRC, "crc.gz") { .checksumMismatch(path: $0) }
        var badLength = good
        badLength[good.count - 1] ^= 0x01
        try check(badLength, "length.gz") { .lengthMismatch(path: $0) }
        try check(good + Data([0x00, 0x01, 0x02]), "garbage.gz") { .trailingGarbage(path: $0, atOffset: Int64(good.count)) }
        try check(Data("SQLite format 3\0".utf8), "plain.gz") { .notGzip(path: $0) }
        #expect(GzipError.truncated(path: "/b/x.gz", atOffset: 9).description == "/b/x.gz is truncated: the gzip stream ends early, at byte 9")
    }

    @discardableResult
    static func file(_ bytes: [UInt8], _ path: String) throws -> String {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
