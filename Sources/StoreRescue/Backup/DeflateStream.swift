import Foundation
import SRZlib

/// One raw-DEFLATE compressor (no zlib or gzip wrapper), reused block after block.
///
/// Each block is compressed independently of the stream state but primed with the previous
/// block's last 32 KiB as a preset dictionary, and ended with `Z_SYNC_FLUSH` (byte aligned, not
/// final) or `Z_FINISH` (final). Concatenated in order, the outputs form one valid DEFLATE stream —
/// the technique `pigz` uses to compress in parallel at nearly the ratio of one sequential stream.
final class DeflateStream {
    /// How much of the previous block primes the next one: DEFLATE's whole window.
    static let dictionarySize = 32 * 1024

    private let stream: UnsafeMutablePointer<z_stream>

    init(level: Int32) throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // windowBits -15: raw DEFLATE with a 32 KiB window; memLevel 8 is zlib's default.
        let rc = srzlib_deflate_init2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw GzipError.compressionFailed(detail: "deflateInit2 returned \(rc)")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses `input` primed with `dictionary`; the result ends on a byte boundary.
    func compress(_ input: UnsafeRawBufferPointer, dictionary: UnsafeRawBufferPointer, isLast: Bool) throws -> [UInt8] {
        guard deflateReset(stream) == Z_OK else {
            throw GzipError.compressionFailed(detail: "deflateReset failed")
        }
        if let base = dictionary.baseAddress, dictionary.count > 0 {
            let rc = deflateSetDictionary(stream, base.assumingMemoryBound(to: Bytef.self), uInt(dictionary.count))
            guard rc == Z_OK else { throw GzipError.compressionFailed(detail: "deflateSetDictionary returned \(rc)") }
        }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(input.count))) + 64)
        var produced = 0
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        let flush = isLast ? Z_FINISH : Z_SYNC_FLUSH
        while true {
            let rc = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
                stream.pointee.next_out = buffer.baseAddress! + produced
                stream.pointee.avail_out = uInt(buffer.count - produced)
                let rc = deflate(stream, flush)
                produced = buffer.count - Int(stream.pointee.avail_out)
                return rc
            }
            guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else {
                throw GzipError.compressionFailed(detail: "deflate returned \(rc)")
            }
            let isComplete = isLast
                ? rc == Z_STREAM_END
                : (stream.pointee.avail_in == 0 && produced < output.count)
            if isComplete {
                output.removeLast(output.count - produced)
                return output
            }
            // The bound was too small (it should not be): grow and continue.
            output.append(contentsOf: repeatElement(0, count: output.count))
        }
    }
}

extension UnsafeRawBufferPointer {
    /// CRC-32 (the gzip polynomial) of these bytes, continuing from `crc`.
    func crc32Checksum(continuing crc: UInt32 = 0) -> UInt32 {
        var value = uLong(crc)
        var offset = 0
        while offset < count {
            let length = Swift.min(count - offset, 1 << 30)
            value = crc32(value, baseAddress!.advanced(by: offset).assumingMemoryBound(to: Bytef.self), uInt(length))
            offset += length
        }
        return UInt32(truncatingIfNeeded: value)
    }
}

/// The CRC-32 of `a ‖ b` from the CRC-32s of `a` and `b` and the length of `b`.
func crc32Combine(_ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
    UInt32(truncatingIfNeeded: crc32_combine(uLong(first), uLong(second), off_t(secondLength)))
}

/// The zlib library version this process runs with.
public var zlibLibraryVersion: String { String(cString: zlibVersion()) }
