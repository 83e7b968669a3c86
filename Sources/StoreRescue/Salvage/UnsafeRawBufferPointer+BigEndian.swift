/// The fixed-width big-endian integers of the SQLite file format. Callers check `offset` against
/// the page or header they read from; these only refuse to read outside the buffer itself.
extension UnsafeRawBufferPointer {
    func bigEndianUInt16(at offset: Int) -> Int {
        guard offset >= 0, offset + 2 <= count else { return 0 }
        return Int(self[offset]) << 8 | Int(self[offset + 1])
    }

    func bigEndianUInt32(at offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= count else { return 0 }
        return UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8 | UInt32(self[offset + 3])
    }

    /// True when every byte in `range` is zero (a zeroed page, an untouched header field).
    func isZero(in range: Range<Int>) -> Bool {
        let clamped = range.clamped(to: 0..<count)
        for index in clamped where self[index] != 0 { return false }
        return true
    }
}

/// Writing the same integers, for the pages salvage writes itself (`TableTreeBuilder`,
/// `PageAppender`); callers have checked that the bytes fit.
extension UnsafeMutableRawBufferPointer {
    func storeBigEndianUInt16(_ value: Int, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    func storeBigEndianUInt32(_ value: UInt32, at offset: Int) {
        for index in 0..<4 { self[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(index))) }
    }
}
