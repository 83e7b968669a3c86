import Foundation

/// Positioned reads that loop over short reads and `EINTR`: a page is read whole or reported
/// short, never half-filled without saying so.
enum FileReading {
    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read (fewer at the end
    /// of the file), or -1 on an I/O error.
    static func read(_ descriptor: Int32, into buffer: inout [UInt8], at offset: Int64) -> Int {
        buffer.withUnsafeMutableBytes { read(descriptor, into: $0, at: offset) }
    }

    static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var filled = 0
        while filled < buffer.count {
            let count = pread(descriptor, base + filled, buffer.count - filled, off_t(offset + Int64(filled)))
            if count < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if count == 0 { break }
            filled += count
        }
        return filled
    }
}

/// Salvage's writes of its own files (pages appended behind SQLite, rows set aside).
enum FileWriting {
    /// Writes all of `bytes` at `offset` (`PositionedWrite`).
    /// - Throws: `SalvageError.writing` naming `path`, with the system's reason (`EFBIG` past
    ///   the file-size limit, `ENOSPC`, `EROFS`, …).
    static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws {
        let code = PositionedWrite.write(descriptor, bytes, at: offset)
        guard code == 0 else { throw SalvageError.writing(path, code: code) }
    }
}
