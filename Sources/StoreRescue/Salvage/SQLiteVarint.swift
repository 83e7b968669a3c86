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

extension SQLiteVarint {
    /// The bytes `value` takes as a varint: 1–8 for values below 2^56, 9 above.
    static func length(of value: UInt64) -> Int {
        if value > 0x00FF_FFFF_FFFF_FFFF { return 9 }
        var length = 1
        var rest = value >> 7
        while rest != 0 {
            length += 1
            rest >>= 7
        }
        return length
    }

    /// Writes `value` at `offset` (the caller has room for `length(of:)` bytes); returns the
    /// length written.
    @discardableResult
    static func write(_ value: UInt64, into bytes: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        // One to three bytes (every payload size up to 2 MiB, every rowid below 2,097,152)
        // without the general loop: a row copied page by page writes two varints.
        if value < 0x80 {
            bytes[offset] = UInt8(truncatingIfNeeded: value)
            return 1
        }
        if value < 0x4000 {
            bytes[offset] = UInt8(truncatingIfNeeded: value >> 7) | 0x80
            bytes[offset + 1] = UInt8(truncatingIfNeeded: value & 0x7F)
            return 2
        }
        if value < 0x20_0000 {
            bytes[offset] = UInt8(truncatingIfNeeded: value >> 14) | 0x80
            bytes[offset + 1] = UInt8(truncatingIfNeeded: (value >> 7) & 0x7F) | 0x80
            bytes[offset + 2] = UInt8(truncatingIfNeeded: value & 0x7F)
            return 3
        }
        let length = length(of: value)
        if length == 9 {
            bytes[offset + 8] = UInt8(truncatingIfNeeded: value)
            var rest = value >> 8
            for index in stride(from: 7, through: 0, by: -1) {
                bytes[offset + index] = UInt8(truncatingIfNeeded: rest & 0x7F) | 0x80
                rest >>= 7
            }
            return 9
        }
        var rest = value
        for index in stride(from: length - 1, through: 0, by: -1) {
            bytes[offset + index] = UInt8(truncatingIfNeeded: rest & 0x7F) | (index == length - 1 ? 0 : 0x80)
            rest >>= 7
        }
        return length
    }
}
