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
        columns.removeAll(keepingCapacity: true)
        let available = min(payload.count, declaredSize)
        guard let header = SQLiteVarint.read(payload, at: 0, end: available), header.value >= UInt64(header.length),
            header.value <= UInt64(available)
        else { return .malformed }
        let headerSize = Int(header.value)
        var position = header.length
        var bodyOffset = UInt64(headerSize)
        var readable = 0
        while position < headerSize {
            guard columns.count < maximumColumns, let type = SQLiteVarint.read(payload, at: position, end: headerSize),
                let length = RecordColumn.length(ofSerialType: type.value)
            else { return .malformed }
            position += type.length
            let end = bodyOffset + length
            guard end <= UInt64(declaredSize) else { return .malformed }
            let isAvailable = end <= UInt64(available)
            if isAvailable { readable += 1 }
            columns.append(RecordColumn(serialType: type.value, offset: Int(bodyOffset), length: Int(length), isAvailable: isAvailable))
            bodyOffset = end
        }
        guard position == headerSize, bodyOffset == UInt64(declaredSize), !columns.isEmpty else { return .malformed }
        return readable == columns.count && available == declaredSize ? .complete : .truncated(availableColumns: readable)
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
