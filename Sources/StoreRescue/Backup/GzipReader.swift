import Crypto
import Foundation
import SRZlib
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Figures about a gzip file read to its end by `GzipReader`.
public struct GzipReadSummary: Sendable, Equatable {
    /// Bytes of the `.gz` file.
    public var compressedSize: Int64
    /// Bytes after decompression.
    public var uncompressedSize: Int64
    /// SHA-256 of the `.gz` file, lowercase hex.
    public var compressedSHA256: String
    /// gzip members (1 for files written by this tool; `cat a.gz b.gz` has 2).
    public var memberCount: Int
}

/// Streams the decompressed content of a gzip file, checking everything gzip can check.
///
/// Every member's CRC-32 and length (ISIZE) are verified by zlib; a file that ends early, carries
/// damaged DEFLATE data or has anything but another gzip member after a member is reported as a
/// `GzipError` naming the file and the offset. Memory stays at two buffers.
public enum GzipReader {
    /// Decompresses the gzip file at `path`, handing the bytes to `consume` in order.
    ///
    /// - Parameters:
    ///   - bufferSize: bytes read and produced per step (default 1 MiB).
    ///   - consume: receives each run of decompressed bytes; what it throws stops the read.
    /// - Throws: `GzipError`, or what `consume` throws.
    public static func decompress(path: String, bufferSize: Int = 1 << 20,
                                  consume: (UnsafeRawBufferPointer) throws -> Void) throws -> GzipReadSummary {
        // A FIFO or device (`/dev/zero`) is refused here, never read: it could block or never end.
        let file = try GzipError.openReadable(path)
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deinitialize(count: 1); stream.deallocate() }
        // windowBits 15 + 16: gzip wrapper only, so zlib checks each member's header, CRC and ISIZE.
        guard srzlib_inflate_init2(stream, 15 + 16) == Z_OK else {
            throw GzipError.unreadable(path: path, reason: "zlib could not start (out of memory?)")
        }
        defer { inflateEnd(stream) }

        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { input.deallocate(); output.deallocate() }
        var hasher = SHA256()
        var available = 0          // unconsumed bytes at the start of `input`
        var fileOffset: Int64 = 0  // bytes read from the file
        var isAtEOF = false
        var isInMember = true
        var members = 0
        var produced: Int64 = 0

        /// Reads more input after the `available` bytes still waiting at the start of the buffer.
        func refill() throws {
            guard !isAtEOF else { return }
            if available > 0, let next = stream.pointee.next_in {
                input.baseAddress!.copyMemory(from: next, byteCount: available)
            }
            let count: Int
            do {
                count = try file.read(into: UnsafeMutableRawBufferPointer(start: input.baseAddress! + available, count: bufferSize - available))
            } catch {
                throw GzipError.unreadable(path: path, reason: error.description)
            }
            if count == 0 { isAtEOF = true; return }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(start: input.baseAddress! + available, count: count))
            fileOffset += Int64(count)
            available += count
            stream.pointee.next_in = input.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = uInt(available)
        }

        try refill()
        guard available >= 2, input[0] == 0x1F, input[1] == 0x8B else { throw GzipError.notGzip(path: path) }
        while true {
            if isInMember {
                if available == 0 {
                    try refill()
                    if available == 0 && isAtEOF { throw GzipError.truncated(path: path, atOffset: fileOffset) }
                }
                stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(bufferSize)
                let rc = inflate(stream, Z_NO_FLUSH)
                available = Int(stream.pointee.avail_in)
                let count = bufferSize - Int(stream.pointee.avail_out)
                if count > 0 {
                    produced += Int64(count)
                    try consume(UnsafeRawBufferPointer(start: output.baseAddress!, count: count))
                }
                switch rc {
                case Z_OK, Z_BUF_ERROR:
                    continue
                case Z_STREAM_END:
                    members += 1
                    isInMember = false
                case Z_DATA_ERROR:
                    let offset = fileOffset - Int64(available)
                    let message = stream.pointee.msg.map { String(cString: $0) } ?? "invalid data"
                    if message == "incorrect data check" { throw GzipError.checksumMismatch(path: path) }
                    if message == "incorrect length check" { throw GzipError.lengthMismatch(path: path) }
                    throw GzipError.damaged(path: path, atOffset: offset, detail: message)
                default:
                    throw GzipError.damaged(path: path, atOffset: fileOffset - Int64(available), detail: "zlib error \(rc)")
                }
            } else {
                // Between members: the end of the file, or the magic bytes of the next member.
                if available < 2 { try refill() }
                if available == 0 && isAtEOF { break }
                let next = UnsafeRawBufferPointer(start: stream.pointee.next_in, count: available)
                guard available >= 2, next[0] == 0x1F, next[1] == 0x8B else {
                    throw GzipError.trailingGarbage(path: path, atOffset: fileOffset - Int64(available))
                }
                guard inflateReset(stream) == Z_OK else {
                    throw GzipError.damaged(path: path, atOffset: fileOffset - Int64(available), detail: "zlib reset failed")
                }
                isInMember = true
            }
        }
        return GzipReadSummary(compressedSize: fileOffset, uncompressedSize: produced,
                               compressedSHA256: hasher.finalize().hexString, memberCount: members)
    }
}

extension GzipError {
    /// `path` opened for reading a backup's bytes: no file descriptor left is the limit's
    /// fault (`BackupError.tooManyOpenFiles`, exit 74: "check that the file exists", 66, would
    /// mislead); anything else, the file is unreadable.
    static func openReadable(_ path: String) throws -> ReadableFile {
        do {
            return try ReadableFile(path: path)
        } catch .tooManyOpenFiles {
            throw BackupError.tooManyOpenFiles(path: path, reason: String(cString: strerror(EMFILE)))
        } catch {
            throw GzipError.unreadable(path: path, reason: error.description)
        }
    }
}
