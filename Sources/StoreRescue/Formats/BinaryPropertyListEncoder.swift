import Foundation

/// Writes a `PropertyListValue` as a binary property list (`bplist00`).
///
/// The output is deterministic: dictionary keys are written in code-point (UTF-8 byte) order,
/// equal scalar values (strings, numbers, dates, data, UIDs) are written once and shared, and
/// integers, object references and offsets use the fewest bytes the format allows. Strings are
/// ASCII when they can be, UTF-16 big-endian otherwise; reals are always 8-byte doubles.
///
/// ```swift
/// let blob = BinaryPropertyListEncoder.encode(.dictionary(["NSStoreType": .string("SQLite")]))
/// ```
public enum BinaryPropertyListEncoder {
    /// The binary property list for `value`.
    public static func encode(_ value: PropertyListValue) -> Data {
        var flattener = Flattener()
        _ = flattener.add(value)
        return write(flattener.objects)
    }

    /// One object of the output: a scalar, or a container holding object numbers.
    private enum FlatObject {
        /// The encoded bytes of a scalar.
        case scalar([UInt8])
        case array([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    /// Numbers objects in depth-first order, sharing equal scalars.
    private struct Flattener {
        var objects: [FlatObject] = []
        /// Keyed by encoded bytes, so values that compare equal but differ in bits (0.0 and -0.0)
        /// stay distinct.
        var scalarIndexes: [[UInt8]: Int] = [:]

        mutating func add(_ value: PropertyListValue) -> Int {
            switch value {
            case .array(let elements):
                let index = reserve()
                objects[index] = .array(elements.map { add($0) })
                return index
            case .dictionary(let entries):
                let index = reserve()
                let sorted = entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                let keys = sorted.map { add(.string($0.key)) }
                let values = sorted.map { add($0.value) }
                objects[index] = .dictionary(keys: keys, values: values)
                return index
            default:
                var encoded: [UInt8] = []
                BinaryPropertyListEncoder.appendScalar(value, to: &encoded)
                if let existing = scalarIndexes[encoded] { return existing }
                let index = objects.count
                objects.append(.scalar(encoded))
                scalarIndexes[encoded] = index
                return index
            }
        }

        private mutating func reserve() -> Int {
            objects.append(.array([]))
            return objects.count - 1
        }
    }

    /// The fewest of 1, 2, 4 or 8 bytes that hold `value`.
    private static func byteWidth(_ value: UInt64) -> Int {
        if value <= 0xFF { return 1 }
        if value <= 0xFFFF { return 2 }
        if value <= 0xFFFF_FFFF { return 4 }
        return 8
    }

    private static func append(_ value: UInt64, width: Int, to output: inout [UInt8]) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    private static func write(_ objects: [FlatObject]) -> Data {
        let referenceWidth = byteWidth(UInt64(max(objects.count - 1, 0)))
        var output = Array("bplist00".utf8)
        var offsets: [UInt64] = []
        offsets.reserveCapacity(objects.count)
        for object in objects {
            offsets.append(UInt64(output.count))
            switch object {
            case .scalar(let encoded):
                output += encoded
            case .array(let elements):
                appendMarker(0xA, count: elements.count, to: &output)
                for element in elements { append(UInt64(element), width: referenceWidth, to: &output) }
            case .dictionary(let keys, let values):
                appendMarker(0xD, count: keys.count, to: &output)
                for reference in keys + values { append(UInt64(reference), width: referenceWidth, to: &output) }
            }
        }
        let tableOffset = UInt64(output.count)
        let offsetWidth = byteWidth(offsets.last ?? 0)
        for offset in offsets { append(offset, width: offsetWidth, to: &output) }
        output += [0, 0, 0, 0, 0, 0, UInt8(offsetWidth), UInt8(referenceWidth)]
        append(UInt64(objects.count), width: 8, to: &output)
        append(0, width: 8, to: &output)
        append(tableOffset, width: 8, to: &output)
        return Data(output)
    }

    /// A marker byte with `count` in its low nibble, or 0xF and a following integer.
    private static func appendMarker(_ kind: UInt8, count: Int, to output: inout [UInt8]) {
        if count < 15 {
            output.append(kind << 4 | UInt8(count))
        } else {
            output.append(kind << 4 | 0x0F)
            appendInteger(Int64(count), to: &output)
        }
    }

    private static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        // 1, 2 and 4-byte integers are unsigned; negative numbers take 8 bytes.
        let width = value < 0 ? 8 : byteWidth(UInt64(value))
        output.append(0x10 | UInt8(width.trailingZeroBitCount))
        append(UInt64(bitPattern: value), width: width, to: &output)
    }

    fileprivate static func appendScalar(_ value: PropertyListValue, to output: inout [UInt8]) {
        switch value {
        case .boolean(let flag):
            output.append(flag ? 0x09 : 0x08)
        case .integer(let number):
            appendInteger(number, to: &output)
        case .real(let number):
            output.append(0x23)
            append(number.bitPattern, width: 8, to: &output)
        case .date(let date):
            output.append(0x33)
            append(date.timeIntervalSinceReferenceDate.bitPattern, width: 8, to: &output)
        case .data(let bytes):
            appendMarker(0x4, count: bytes.count, to: &output)
            output += bytes
        case .string(let string):
            if string.utf8.allSatisfy({ $0 < 0x80 }) {
                appendMarker(0x5, count: string.utf8.count, to: &output)
                output += string.utf8
            } else {
                let units = Array(string.utf16)
                appendMarker(0x6, count: units.count, to: &output)
                for unit in units { append(UInt64(unit), width: 2, to: &output) }
            }
        case .uid(let reference):
            let width = reference <= 0xFF ? 1 : reference <= 0xFFFF ? 2 : reference <= 0xFFFF_FFFF ? 4 : 8
            output.append(0x80 | UInt8(width - 1))
            append(reference, width: width, to: &output)
        case .array, .dictionary:
            preconditionFailure("containers are flattened before writing")
        }
    }
}
