import Foundation
import SRZlib

/// Raw DEFLATE (RFC 1951: no zlib or gzip header, window bits −15), the compression of a
/// store's `Z_MODELCACHE`.
///
/// Inflating streams the output in 64 KiB chunks and stops with an error as soon as the output
/// would pass the caller's bound, so a small hostile blob cannot make this process allocate
/// much more than that bound. Bytes after the end of the compressed stream are ignored.
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
        precondition(maximumOutputBytes >= 0, "maximumOutputBytes must not be negative")
        var stream = z_stream()
        let initStatus = srzlib_inflate_init2(&stream, -15)
        guard initStatus == Z_OK else { throw CompressionError.zlibFailure(operation: "inflateInit2", code: initStatus) }
        defer { inflateEnd(&stream) }

        var output = Data()
        var reserved = 0
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        return try data.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> Data in
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
                    // output.count ≤ maximumOutputBytes and produced ≤ 64 KiB: no overflow.
                    guard output.count + produced <= maximumOutputBytes else {
                        throw CompressionError.outputLimitExceeded(limit: maximumOutputBytes)
                    }
                    if output.count + produced > reserved {
                        // Grow geometrically, but never past the bound.
                        reserved = min(max(reserved * 2, output.count + produced, chunkSize), maximumOutputBytes)
                        output.reserveCapacity(reserved)
                    }
                    output.append(contentsOf: chunk[0..<produced])
                }
                let consumedBytes = fed - Int(stream.avail_in)
                switch status {
                case Z_STREAM_END:
                    return output
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
