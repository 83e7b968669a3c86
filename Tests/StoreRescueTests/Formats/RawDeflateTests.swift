import Foundation
import Testing
@testable import StoreRescue

@Suite struct RawDeflateTests {
    @Test func inflatesWhatZlibWrites() throws {
        // Python: zlib.compressobj(6, zlib.DEFLATED, -15) over b"hello, world".
        let compressed = Data([0xCB, 0x48, 0xCD, 0xC9, 0xC9, 0xD7, 0x51, 0x28, 0xCF, 0x2F, 0xCA, 0x49, 0x01, 0x00])
        #expect(try RawDeflate.inflate(compressed, maximumOutputBytes: 100) == Data("hello, world".utf8))
    }

    @Test(arguments: [0, 1, 100, 65_536, 65_537, 300_000])
    func roundTrips(size: Int) throws {
        var generator = SeededGenerator(seed: UInt64(size))
        // Half random, half repetitive, so both stored and compressed blocks occur.
        let bytes = generator.bytes(size / 2) + [UInt8](repeating: 0x41, count: size - size / 2)
        for level: Int32 in [0, 1, 6, 9, -1] {
            let compressed = try RawDeflate.deflate(Data(bytes), level: level)
            #expect(try RawDeflate.inflate(compressed, maximumOutputBytes: size) == Data(bytes))
        }
    }

    @Test func outputExactlyAtTheLimitIsAccepted() throws {
        let compressed = try RawDeflate.deflate(Data(repeating: 0, count: 100_000))
        #expect(try RawDeflate.inflate(compressed, maximumOutputBytes: 100_000).count == 100_000)
        #expect(throws: CompressionError.outputLimitExceeded(limit: 99_999)) {
            try RawDeflate.inflate(compressed, maximumOutputBytes: 99_999)
        }
    }

    @Test func zipBombStopsAtTheLimit() throws {
        // 200 MiB of zeros compresses to about 200 KiB.
        let bomb = try RawDeflate.deflate(Data(count: 200 << 20), level: 9)
        #expect(bomb.count < 1 << 20)
        let error = #expect(throws: CompressionError.outputLimitExceeded(limit: 1 << 20)) {
            try RawDeflate.inflate(bomb, maximumOutputBytes: 1 << 20)
        }
        #expect(error?.description == "compressed data expands past the limit of 1048576 bytes")
        #expect(error?.exitStatus == .notAStore)
    }

    /// The first pass counts exactly what the second keeps, without keeping it: 100 MiB counted
    /// through a 64 KiB chunk.
    @Test func inflatedSizeIsWhatInflatingGives() throws {
        let bomb = try RawDeflate.deflate(Data(count: 100 << 20), level: 9)
        #expect(try RawDeflate.inflatedSize(bomb, maximumOutputBytes: 256 << 20) == 100 << 20)
        #expect(throws: CompressionError.outputLimitExceeded(limit: (100 << 20) - 1)) {
            try RawDeflate.inflatedSize(bomb, maximumOutputBytes: (100 << 20) - 1)
        }
        var generator = SeededGenerator(seed: 11)
        for size in [0, 1, 65_535, 65_536, 65_537, 200_000] {
            let bytes = Data(generator.bytes(size / 3) + [UInt8](repeating: 9, count: size - size / 3))
            let compressed = try RawDeflate.deflate(bytes)
            #expect(try RawDeflate.inflatedSize(compressed, maximumOutputBytes: size) == size)
            #expect(try RawDeflate.inflate(compressed, maximumOutputBytes: size) == bytes)
        }
    }

    @Test func garbageIsRefused() {
        // 0xFF: final block of type 3, which does not exist.
        let error = #expect(throws: CompressionError.self) {
            try RawDeflate.inflate(Data([0xFF, 0xFF, 0xFF, 0xFF]), maximumOutputBytes: 1 << 20)
        }
        #expect(error == .invalidData(reason: "invalid block type", consumedBytes: 1))
        #expect(error?.description == "compressed data is damaged after 1 bytes: invalid block type")
    }

    @Test func randomInputThrowsOrInflatesWithinTheLimit() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let bytes = generator.bytes(Int.random(in: 1...200, using: &generator))
            do {
                let output = try RawDeflate.inflate(Data(bytes), maximumOutputBytes: 4_096)
                #expect(output.count <= 4_096)
            } catch is CompressionError {
                // Expected for nearly all inputs.
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
    }

    @Test func truncatedStreamsAreRefused() throws {
        var generator = SeededGenerator(seed: 3)
        let compressed = try RawDeflate.deflate(Data(generator.bytes(5_000) + [UInt8](repeating: 1, count: 5_000)))
        for length in stride(from: 0, to: compressed.count, by: 97) {
            #expect(throws: CompressionError.self, "truncated to \(length) bytes") {
                try RawDeflate.inflate(compressed.prefix(length), maximumOutputBytes: 1 << 20)
            }
        }
        let error = #expect(throws: CompressionError.self) { try RawDeflate.inflate(compressed.prefix(10), maximumOutputBytes: 1 << 20) }
        #expect(error == .truncatedInput(consumedBytes: 10))
        #expect(error?.description == "compressed data is truncated: it ends after 10 bytes, before the end of the stream")
        #expect(throws: CompressionError.truncatedInput(consumedBytes: 0)) { try RawDeflate.inflate(Data(), maximumOutputBytes: 10) }
    }

    @Test func invalidLevelIsRefused() {
        #expect(throws: CompressionError.invalidCompressionLevel(level: 12)) { try RawDeflate.deflate(Data([1]), level: 12) }
    }
}
