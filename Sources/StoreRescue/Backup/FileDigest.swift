import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SHA-256, CRC-32 and size of a whole file, read once.
struct FileDigest: Sendable, Equatable {
    var sha256: String
    var crc32: UInt32
    var size: Int64

    static func of(path: String, bufferSize: Int = 1 << 20) throws -> FileDigest {
        let file = try GzipError.openReadable(path)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var crc: UInt32 = 0
        var size: Int64 = 0
        while true {
            let count: Int
            do { count = try file.read(into: buffer) } catch { throw GzipError.unreadable(path: path, reason: error.description) }
            if count == 0 { break }
            let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: count)
            hasher.update(bufferPointer: bytes)
            crc = bytes.crc32Checksum(continuing: crc)
            size += Int64(count)
        }
        return FileDigest(sha256: hasher.finalize().hexString, crc32: crc, size: size)
    }
}
