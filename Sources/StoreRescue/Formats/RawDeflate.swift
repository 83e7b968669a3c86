import Foundation
import SRZlib

/// Raw DEFLATE (RFC 1951: no zlib or gzip header, window bits −15), the compression of a
/// store's `Z_MODELCACHE`.
///
/// Inflating takes two passes over the stream. The first only counts what it would produce, in
/// one 64 KiB chunk, and stops with an error as soon as the count passes the caller's bound; the
/// second fills a buffer of exactly that size. So a small hostile blob (a "zip bomb": 300 KiB of
/// zeros that expand to 300 MiB) is refused having allocated 64 KiB, not the bound — a 128 MiB
/// bound, filled by doubling, once took `inspect` to 158 MB of memory for a 300 KiB store — and a
/// sound one costs its size, never a doubled buffer's. The second pass inflates again what a
/// store's model cache holds (tens or hundreds of KiB): well under a millisecond. Bytes after
/// the end of the compressed stream are ignored.
///
/// ```swift
/// let archive = try RawDeflate.inflate(modelCacheBlob, maximumOutputBytes: 64 << 20)
/// ```
public enum RawDeflate {
    static let chunkSize = 64 * 1024

    /// Decompresses `data`, refusing to produce more than `maximumOutputBytes`.
    ///
    /// - Throws: `CompressionError.outputLimitExceeded` past the bound, `.invalidData` for bytes
    ///   that are not DEFLATE, `.truncatedInput` when the stream stops before its final block.
    public static func inflate(_ data: Data, maximumOutputBytes: Int) throws -> Data {
        let size = try inflatedSize(data, maximumOutputBytes: maximumOutputBytes)
        var output = Data(count: size)
        var filled = 0
        try output.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            try inflate(data, maximumOutputBytes: size) { chunk in
                // The first pass counted `size` bytes and the second cannot produce more: it
                // stops past `size` like the first did past the bound.
                guard let destination = buffer.baseAddress, let source = chunk.baseAddress else { return }
                (destination + filled).copyMemory(from: source, byteCount: chunk.count)
                filled += chunk.count
            }
        }
        guard filled == size else {
            // The same bytes inflated twice give the same output; this cannot happen.
            throw CompressionError.zlibFailure(operation: "inflate", code: Z_STREAM_ERROR)
        }
        return output
    }

    /// How many bytes `data` inflates to, reading it through without keeping them.
    ///
    /// - Throws: as `inflate(_:maximumOutputBytes:)`.
    static func inflatedSize(_ data: Data, maximumOutputBytes: Int) throws -> Int {
        var size = 0
        try inflate(data, maximumOutputBytes: maximumOutputBytes) { size += $0.count }
        return size
    }

    /// Inflates `data`, handing each produced chunk (at most 64 KiB, never empty) to `consume`,
    /// and throws before handing over a chunk that would take the total past
    /// `maximumOutputBytes`.
    private static func inflate(_ data: Data, maximumOutputBytes: Int, consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(maximumOutputBytes >= 0, "maximumOutputBytes must not be negative")
        var stream = z_stream()
        let initStatus = srzlib_inflate_init2(&stream, -15)
        guard initStatus == Z_OK else { throw CompressionError.zlibFailure(operation: "inflateInit2", code: initStatus) }
        defer { inflateEnd(&stream) }

        var total = 0
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        try data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            guard let base = input.baseAddress, !input.isEmpty else { throw CompressionError.truncatedInput(consumedBytes: 0) }
            var fed = 0
            while true {
                if stream.avail_in == 0 && fed < input.count {
                    let size = min(input.count - fed, Int(UInt32.max))
                    stream.next_in = UnsafeMutablePointer(mutating: (base + fed).assumingMemoryBound(to: Bytef.self))
                    stream.avail_in = UInt32(size)
                    fed += size
                }
                let inputBefore = stream.avail_in
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return SRZlib.inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunkSize - Int(stream.avail_out)
                if produced > 0 {
                    // total ≤ maximumOutputBytes and produced ≤ 64 KiB: no overflow.
                    guard total + produced <= maximumOutputBytes else {
                        throw CompressionError.outputLimitExceeded(limit: maximumOutputBytes)
                    }
                    total += produced
                    try chunk.withUnsafeBytes { try consume(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) }
                }
                let consumedBytes = fed - Int(stream.avail_in)
                switch status {
                case Z_STREAM_END:
                    return
                case Z_OK, Z_BUF_ERROR:
                    let madeProgress = produced > 0 || stream.avail_in != inputBefore
                    if !madeProgress && stream.avail_in == 0 && fed == input.count {
                        throw CompressionError.truncatedInput(consumedBytes: consumedBytes)
                    }
                    if !madeProgress && status == Z_BUF_ERROR {
                        throw CompressionError.truncatedInput(consumedBytes: consumedBytes)
                    }
                case Z_DATA_ERROR, Z_NEED_DICT:
                    let reason = stream.msg.map { String(cString: $0) } ?? "needs a preset dictionary"
                    throw CompressionError.invalidData(reason: reason, consumedBytes: consumedBytes)
                default:
                    throw CompressionError.zlibFailure(operation: "inflate", code: status)
                }
            }
        }
    }

    /// Compresses `data` as raw DEFLATE at `level` (0 = store … 9 = smallest, −1 = zlib default).
    ///
    /// - Throws: `CompressionError.invalidCompressionLevel` for a level outside −1…9,
    ///   `.zlibFailure` when zlib cannot allocate its state.
    public static func deflate(_ data: Data, level: Int32 = 6) throws -> Data {
        guard (-1...9).contains(level) else { throw CompressionError.invalidCompressionLevel(level: level) }
        var stream = z_stream()
        let initStatus = srzlib_deflate_init2(&stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY)
        guard initStatus == Z_OK else { throw CompressionError.zlibFailure(operation: "deflateInit2", code: initStatus) }
        defer { deflateEnd(&stream) }

        var output = Data()
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        return try data.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> Data in
            var fed = 0
            while true {
                if stream.avail_in == 0, fed < input.count, let base = input.baseAddress {
                    let size = min(input.count - fed, Int(UInt32.max))
                    stream.next_in = UnsafeMutablePointer(mutating: (base + fed).assumingMemoryBound(to: Bytef.self))
                    stream.avail_in = UInt32(size)
                    fed += size
                }
                let flush = fed == input.count ? Z_FINISH : Z_NO_FLUSH
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return SRZlib.deflate(&stream, flush)
                }
                output.append(contentsOf: chunk[0..<(chunkSize - Int(stream.avail_out))])
                switch status {
                case Z_STREAM_END: return output
                case Z_OK, Z_BUF_ERROR: continue
                default: throw CompressionError.zlibFailure(operation: "deflate", code: status)
                }
            }
        }
    }
}
