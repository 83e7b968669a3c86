import Foundation

/// Decodes SQLite's record format (file format §2.1): a header of serial types, then the values.
///
/// The decoder does not copy values: it fills `RecordColumn`s that point into the payload, so a
/// row is bound straight from the page buffer into the new database. It refuses a record whose
/// header runs past the payload, uses the reserved serial types 10 and 11, or whose values do not
/// add up exactly to the declared payload size: that last check catches most damaged records
/// (a flipped byte in a header changes a length).
enum RecordDecoder {
    /// Columns are bounded so a hostile header cannot make the decoder allocate without bound
    /// (SQLite itself allows at most 32,767).
    static let maximumColumns = 32_767

    enum Outcome: Equatable {
        /// Every column's bytes are in the payload read.
        case complete
        /// The header is whole but the payload read stops early (a broken overflow chain): the
        /// columns whose bytes were read are `isAvailable`.
        case truncated(availableColumns: Int)
        case malformed
    }

    /// Decodes the record in `payload` (the bytes read: all of it, or the part before a broken
    /// overflow chain) whose declared size is `declaredSize`.
    static func decode(_ payload: UnsafeRawBufferPointer, declaredSize: Int, into columns: inout [RecordColumn]) -> Outcome {
        let available = min(payload.count, declaredSize)
        guard let header = SQLiteVarint.read(payload, at: 0, end: available), header.value >= UInt64(header.length),
            header.value <= UInt64(available)
        else {
            columns.removeAll(keepingCapacity: true)
            return .malformed
        }
        let headerSize = Int(header.value)
        // The columns are filled in place, not appended one by one (the checks each append makes
        // came to a tenth of a plain salvage's instructions), in the room the array already has
        // — rows of one table need what the last one left — grown by doubling only when a
        // record really has more columns. Never sized from the header alone: a hostile header
        // claiming thousands of columns and failing at the first would then cost a large fill
        // per cell (a crafted 2.6 MB file took 20 s that way).
        var count = 0
        var readable = 0
        var position = header.length
        var bodyOffset = UInt64(headerSize)
        var outcome: Outcome?
        while true {
            let needsRoom: Bool = columns.withUnsafeMutableBufferPointer { filled in
                while position < headerSize {
                    guard count < maximumColumns else {
                        outcome = .malformed
                        return false
                    }
                    guard count < filled.count else { return true }
                    // Serial types below 128 (every type but text or blobs of 58 bytes or more)
                    // are one byte: read here, without the general varint reader.
                    let serialType: UInt64
                    let typeLength: Int
                    let first = payload[position]
                    if first < 0x80 {
                        serialType = UInt64(first)
                        typeLength = 1
                    } else {
                        guard let type = SQLiteVarint.read(payload, at: position, end: headerSize) else {
                            outcome = .malformed
                            return false
                        }
                        serialType = type.value
                        typeLength = type.length
                    }
                    guard let length = RecordColumn.length(ofSerialType: serialType), bodyOffset + length <= UInt64(declaredSize) else {
                        outcome = .malformed
                        return false
                    }
                    let end = bodyOffset + length
                    let isAvailable = end <= UInt64(available)
                    if isAvailable { readable += 1 }
                    filled[count] = RecordColumn(serialType: serialType, offset: Int(bodyOffset), length: Int(length), isAvailable: isAvailable)
                    count += 1
                    position += typeLength
                    bodyOffset = end
                }
                if !(position == headerSize && bodyOffset == UInt64(declaredSize) && count > 0) { outcome = .malformed }
                return false
            }
            guard needsRoom else { break }
            // Each serial type takes a byte at least: no more room than the header has left.
            let grown = min(max(16, columns.count), headerSize - position)
            columns.append(contentsOf: repeatElement(RecordColumn(serialType: 0, offset: 0, length: 0, isAvailable: false), count: grown))
        }
        if count < columns.count { columns.removeLast(columns.count - count) }
        if let outcome {
            columns.removeAll(keepingCapacity: true)
            return outcome
        }
        return readable == count && available == declaredSize ? .complete : .truncated(availableColumns: readable)
    }
}

/// One value of a decoded record: its serial type and where its bytes are in the payload.
struct RecordColumn: Sendable, Equatable {
    /// The storage class a serial type gives a value.
    enum StorageClass: UInt8, Sendable, Equatable {
        case null, integer, real, text, blob

        /// This class as one bit of a `StorageClasses` mask.
        var bit: UInt8 { 1 << rawValue }
    }

    var serialType: UInt64
    var offset: Int
    var length: Int
    /// False when the value lies in the part of a record lost to a broken overflow chain.
    var isAvailable: Bool

    /// The byte length of a value of serial type `type`, or nil for the reserved types 10 and 11.
    static func length(ofSerialType type: UInt64) -> UInt64? {
        switch type {
        case 0, 8, 9: return 0
        case 1, 2, 3, 4: return type
        case 5: return 6
        case 6, 7: return 8
        case 10, 11: return nil
        default: return (type - 12) / 2
        }
    }

    var storageClass: StorageClass {
        switch serialType {
        case 0: return .null
        case 1...6, 8, 9: return .integer
        case 7: return .real
        default: return serialType & 1 == 1 ? .text : .blob
        }
    }

    /// The value of an integer column (serial types 1–6, 8, 9): big-endian two's complement.
    func integer(in payload: UnsafeRawBufferPointer) -> Int64 {
        switch serialType {
        case 8: return 0
        case 9: return 1
        default:
            guard isAvailable, length > 0, offset + length <= payload.count else { return 0 }
            var value = Int64(Int8(bitPattern: payload[offset]))
            for index in 1..<length { value = value << 8 | Int64(payload[offset + index]) }
            return value
        }
    }

    /// The value of a real column (serial type 7): a big-endian IEEE 754 double.
    func real(in payload: UnsafeRawBufferPointer) -> Double {
        guard isAvailable, length == 8, offset + 8 <= payload.count else { return 0 }
        var bits: UInt64 = 0
        for index in 0..<8 { bits = bits << 8 | UInt64(payload[offset + index]) }
        return Double(bitPattern: bits)
    }

    /// The bytes of a text or blob column.
    func bytes(in payload: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard isAvailable, offset + length <= payload.count else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: payload[offset..<offset + length])
    }
}
