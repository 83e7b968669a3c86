import Foundation

/// Writes all of a buffer at an offset with `pwrite`, looping over short writes and `EINTR`: the
/// one such loop `SafeFileOutput` and salvage's own files (pages appended behind SQLite, rows set
/// aside) share, each turning a failure into its own error.
enum PositionedWrite {
    /// 0 when every byte was written; else the `errno` that stopped it (`ENOSPC` when the file
    /// system accepted no bytes without saying why).
    static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32 {
        guard let base = bytes.baseAddress else { return 0 }
        var written = 0
        while written < bytes.count {
            let count = pwrite(descriptor, base + written, bytes.count - written, off_t(offset + Int64(written)))
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if count == 0 { return ENOSPC }
            written += count
        }
        return 0
    }
}
