/// SQLite's variable-length integer (file format §1.6): one to nine bytes, big-endian, seven bits
/// per byte with the high bit saying "more follows", all eight bits of the ninth byte used.
///
/// Every read names the end it may not pass: a varint in a damaged cell can run off the page.
enum SQLiteVarint {
    /// The varint at `offset`, or nil when it would read at or past `end` (or outside `bytes`).
    static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int, end: Int) -> (value: UInt64, length: Int)? {
        let limit = min(end, bytes.count)
        guard offset >= 0 else { return nil }
        var value: UInt64 = 0
        var position = offset
        for index in 0..<8 {
            guard position < limit else { return nil }
            let byte = bytes[position]
            position += 1
            value = (value << 7) | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 { return (value, index + 1) }
        }
        guard position < limit else { return nil }
        return ((value << 8) | UInt64(bytes[position]), 9)
    }
}
