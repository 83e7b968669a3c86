import Foundation

/// The committed content of a `-wal` (file format §4): for each page, where its latest committed
/// version lies in the WAL.
///
/// A frame counts only while the chain holds: its salts equal the header's and its checksum —
/// cumulative over every earlier frame — is right. The first frame that fails ends the log, as it
/// does for SQLite (frames after it belong to an older generation or to a write that never
/// finished). Frames after the last commit frame are an unfinished transaction and are ignored.
struct WriteAheadLog: Sendable {
    static let headerSize = 32
    static let frameHeaderSize = 24

    var pageSize: Int
    /// Page number → offset of that page's bytes in the WAL (latest committed frame).
    var frames: [UInt32: Int64]
    /// The database size in pages after the last commit.
    var committedPageCount: UInt32?
    /// Whole frames in the file, frames whose checksums hold, frames that belong to a commit.
    var framesInFile: Int
    var validFrames: Int
    var committedFrames: Int

    /// Reads the WAL open at `descriptor` (`size` bytes). Nil when its header is not a valid WAL
    /// header (wrong magic, version, page size or checksum): SQLite ignores such a file.
    static func read(descriptor: Int32, size: Int64) -> WriteAheadLog? {
        guard size >= Int64(headerSize) else { return nil }
        var header = [UInt8](repeating: 0, count: headerSize)
        guard FileReading.read(descriptor, into: &header, at: 0) == headerSize else { return nil }
        return header.withUnsafeBytes { bytes -> WriteAheadLog? in
            let magic = bytes.bigEndianUInt32(at: 0)
            guard magic == 0x377F_0682 || magic == 0x377F_0683, bytes.bigEndianUInt32(at: 4) == 3_007_000 else { return nil }
            // The WAL header holds the page size itself (65536 too): unlike the database
            // header's two bytes, it has no "1 means 65536", and SQLite ignores a log whose
            // size is under 512 (a review's crafted log with 1 there was folded as 64 KiB pages).
            let pageSize = Int(bytes.bigEndianUInt32(at: 8))
            guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return nil }
            let bigEndian = magic & 1 == 1
            let checksum = Checksum.compute(UnsafeRawBufferPointer(rebasing: bytes[0..<24]), seed: (0, 0), bigEndian: bigEndian)
            guard checksum.0 == bytes.bigEndianUInt32(at: 24), checksum.1 == bytes.bigEndianUInt32(at: 28) else { return nil }
            var log = WriteAheadLog(
                pageSize: pageSize, frames: [:], committedPageCount: nil,
                framesInFile: Int((size - Int64(headerSize)) / Int64(frameHeaderSize + pageSize)), validFrames: 0, committedFrames: 0)
            log.readFrames(
                descriptor: descriptor, salts: (bytes.bigEndianUInt32(at: 16), bytes.bigEndianUInt32(at: 20)),
                seed: checksum, bigEndian: bigEndian)
            return log
        }
    }

    private mutating func readFrames(descriptor: Int32, salts: (UInt32, UInt32), seed: (UInt32, UInt32), bigEndian: Bool) {
        var running = seed
        var pending: [UInt32: Int64] = [:]
        var frame = [UInt8](repeating: 0, count: Self.frameHeaderSize + pageSize)
        for index in 0..<framesInFile {
            let offset = Int64(Self.headerSize) + Int64(index) * Int64(frame.count)
            guard FileReading.read(descriptor, into: &frame, at: offset) == frame.count else { return }
            let accepted = frame.withUnsafeBytes { bytes -> (page: UInt32, commitSize: UInt32)? in
                guard bytes.bigEndianUInt32(at: 8) == salts.0, bytes.bigEndianUInt32(at: 12) == salts.1 else { return nil }
                var sum = Checksum.compute(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), seed: running, bigEndian: bigEndian)
                sum = Checksum.compute(UnsafeRawBufferPointer(rebasing: bytes[Self.frameHeaderSize...]), seed: sum, bigEndian: bigEndian)
                guard sum.0 == bytes.bigEndianUInt32(at: 16), sum.1 == bytes.bigEndianUInt32(at: 20), bytes.bigEndianUInt32(at: 0) >= 1 else {
                    return nil
                }
                running = sum
                return (bytes.bigEndianUInt32(at: 0), bytes.bigEndianUInt32(at: 4))
            }
            guard let accepted else { return }
            validFrames += 1
            pending[accepted.page] = offset + Int64(Self.frameHeaderSize)
            if accepted.commitSize > 0 {
                frames.merge(pending) { _, newer in newer }
                pending.removeAll(keepingCapacity: true)
                committedPageCount = accepted.commitSize
                committedFrames = validFrames
            }
        }
    }

    /// The WAL checksum (file format §4.2): 32-bit words in the byte order the magic names,
    /// `s0 += x[i] + s1; s1 += x[i+1] + s0`, continued from `seed`.
    enum Checksum {
        static func compute(_ bytes: UnsafeRawBufferPointer, seed: (UInt32, UInt32), bigEndian: Bool) -> (UInt32, UInt32) {
            var s0 = seed.0, s1 = seed.1
            var index = 0
            let end = bytes.count & ~7
            while index < end {
                let a = word(bytes, index, bigEndian), b = word(bytes, index + 4, bigEndian)
                s0 = s0 &+ a &+ s1
                s1 = s1 &+ b &+ s0
                index += 8
            }
            return (s0, s1)
        }

        @inline(__always)
        private static func word(_ bytes: UnsafeRawBufferPointer, _ offset: Int, _ bigEndian: Bool) -> UInt32 {
            let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value)
        }
    }
}
