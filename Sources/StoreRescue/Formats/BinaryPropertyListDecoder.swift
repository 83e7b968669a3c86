import Foundation

/// Bounds on what a property list decoder accepts; the defaults fit every real store with a wide
/// margin and keep a hostile blob from exhausting memory or the stack.
public struct PropertyListLimits: Sendable, Equatable {
    /// The largest input accepted, in bytes.
    public var maximumInputBytes: Int
    /// The most objects a binary property list may declare, and the most values decoding may
    /// produce (a shared object counts once per reference).
    public var maximumObjectCount: Int
    /// The deepest nesting of arrays and dictionaries accepted. Decoding recurses once per level,
    /// so keep this in the hundreds: it is what stands between hostile input and the stack.
    public var maximumDepth: Int
    /// The most bytes of data and string payload decoding may produce (a shared object counts
    /// once per reference: a 1 MiB blob referenced 300 times in a 1 MB `Z_PLIST` took `inspect`
    /// to 1.4 GB and printed 419 MB of JSON).
    public var maximumDecodedBytes: Int

    public init(maximumInputBytes: Int = 16 << 20, maximumObjectCount: Int = 2_000_000, maximumDepth: Int = 256,
                maximumDecodedBytes: Int = 64 << 20) {
        self.maximumInputBytes = maximumInputBytes
        self.maximumObjectCount = maximumObjectCount
        self.maximumDepth = maximumDepth
        self.maximumDecodedBytes = maximumDecodedBytes
    }

    /// 16 MiB, 2,000,000 objects, depth 256, 64 MiB decoded: for model files the user names
    /// (`.mom`, `.momd`, `.xcdatamodeld`).
    public static let `default` = PropertyListLimits()

    /// For property lists read out of a store (a `Z_METADATA` plist, a `Z_MODELCACHE` archive):
    /// 250,000 values. The default's 2,000,000 let a 335-byte `Z_PLIST` whose arrays share their
    /// children decode to 2 million values, 120 MB, in every command that reads a store; the
    /// largest model cache among the shared samples is an archive of 696 objects, a metadata
    /// plist holds a few per entity. At most 16 MiB of data and text decoded.
    public static let storeContent = PropertyListLimits(maximumObjectCount: 250_000, maximumDecodedBytes: 16 << 20)
}

/// Reads a property list from untrusted bytes: binary `bplist00` with our own bounded parser,
/// XML through Foundation.
///
/// Every offset, length and reference in a binary property list is checked against the input;
/// reference cycles, excessive nesting and excessive expansion are refused with an error.
/// Decisions where the format allows a choice:
/// - integers that do not fit `Int64` (possible only in 16-byte integers) are refused with
///   `PropertyListError.integerOutOfRange`, never clamped;
/// - sets and ordered sets are read as arrays;
/// - ASCII strings must hold only 7-bit bytes; UTF-16 strings with unpaired surrogates are
///   repaired with U+FFFD;
/// - a dictionary with a repeated key is refused.
///
/// ```swift
/// let metadata = try BinaryPropertyListDecoder.decode(zPlistBlob)
/// ```
public enum BinaryPropertyListDecoder {
    /// Decodes `data`, a binary (`bplist00`) or XML property list.
    ///
    /// - Throws: `PropertyListError` describing the first problem found.
    public static func decode(_ data: Data, limits: PropertyListLimits = .default) throws -> PropertyListValue {
        guard data.count <= limits.maximumInputBytes else {
            throw PropertyListError.inputTooLarge(byteCount: data.count, limit: limits.maximumInputBytes)
        }
        guard !data.isEmpty else { throw PropertyListError.notAPropertyList(reason: "the input is empty") }
        let bytes = [UInt8](data)
        if bytes.starts(with: Array("bplist".utf8)) {
            let header = String(decoding: bytes.prefix(8).map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
            guard header == "bplist00" else { throw PropertyListError.unsupportedVersion(header: header) }
            var reader = try BinaryPropertyListReader(bytes: bytes, limits: limits)
            return try reader.decodeTopObject()
        }
        if XMLPropertyListReader.looksLikeXML(bytes) {
            return try XMLPropertyListReader.decode(data, limits: limits)
        }
        let shown = bytes.prefix(8).map { String(format: "%02x", $0) }.joined(separator: " ")
        throw PropertyListError.notAPropertyList(reason: "it starts with \(shown), not \"bplist00\" or an XML header")
    }
}

/// The state of one binary property list decode: the validated trailer, the active path of
/// containers (for cycle detection) and the count of values produced.
struct BinaryPropertyListReader {
    static let trailerSize = 32
    static let headerSize = 8

    let bytes: [UInt8]
    let limits: PropertyListLimits
    let offsetIntSize: Int
    let objectRefSize: Int
    let objectCount: Int
    let topObject: Int
    /// Where the offset table starts; every object lies in `headerSize..<offsetTableStart`.
    let offsetTableStart: Int
    private var isOnPath: [Bool]
    private var valueCount = 0
    private var decodedBytes = 0

    init(bytes: [UInt8], limits: PropertyListLimits) throws {
        self.bytes = bytes
        self.limits = limits
        guard bytes.count >= Self.headerSize + 1 + Self.trailerSize else {
            throw PropertyListError.invalidTrailer(reason: "the input is \(bytes.count) bytes, too short for a header, an object and a trailer")
        }
        let trailer = bytes.count - Self.trailerSize
        offsetIntSize = Int(bytes[trailer + 6])
        objectRefSize = Int(bytes[trailer + 7])
        let declaredCount = Self.readUInt(bytes, at: trailer + 8, size: 8)
        let declaredTop = Self.readUInt(bytes, at: trailer + 16, size: 8)
        let declaredTableStart = Self.readUInt(bytes, at: trailer + 24, size: 8)
        guard (1...8).contains(offsetIntSize) else {
            throw PropertyListError.invalidTrailer(reason: "offset size \(offsetIntSize) is not between 1 and 8")
        }
        guard (1...8).contains(objectRefSize) else {
            throw PropertyListError.invalidTrailer(reason: "object reference size \(objectRefSize) is not between 1 and 8")
        }
        guard declaredCount >= 1 else { throw PropertyListError.invalidTrailer(reason: "it declares no objects") }
        guard declaredCount <= UInt64(max(limits.maximumObjectCount, 0)) else {
            throw PropertyListError.tooManyObjects(declared: declaredCount, limit: limits.maximumObjectCount)
        }
        objectCount = Int(declaredCount)
        guard declaredTop < declaredCount else {
            throw PropertyListError.invalidTrailer(reason: "top object \(declaredTop) is not among the \(declaredCount) objects")
        }
        topObject = Int(declaredTop)
        guard declaredTableStart > UInt64(Self.headerSize), declaredTableStart < UInt64(trailer) else {
            throw PropertyListError.invalidTrailer(reason: "offset table offset \(declaredTableStart) is outside the file")
        }
        offsetTableStart = Int(declaredTableStart)
        // objectCount ≤ maximumObjectCount and offsetIntSize ≤ 8, but the limit is caller-chosen.
        let (tableSize, overflow) = objectCount.multipliedReportingOverflow(by: offsetIntSize)
        guard !overflow, tableSize <= trailer - offsetTableStart else {
            throw PropertyListError.invalidTrailer(
                reason: "an offset table of \(objectCount) entries of \(offsetIntSize) bytes does not fit before the trailer")
        }
        isOnPath = Array(repeating: false, count: objectCount)
    }

    /// Decodes the whole tree under the trailer's top object.
    mutating func decodeTopObject() throws -> PropertyListValue {
        try value(object: topObject, depth: 0)
    }

    /// Reads a big-endian unsigned integer of `size` (1…8) bytes; the caller checked the range.
    static func readUInt(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
        var result: UInt64 = 0
        for index in offset..<(offset + size) { result = result << 8 | UInt64(bytes[index]) }
        return result
    }

    /// The offset of `object`, checked to lie in the object area.
    private func offset(of object: Int) throws -> Int {
        let raw = Self.readUInt(bytes, at: offsetTableStart + object * offsetIntSize, size: offsetIntSize)
        guard raw >= UInt64(Self.headerSize), raw < UInt64(offsetTableStart) else {
            throw PropertyListError.invalidOffset(object: object, offset: raw)
        }
        return Int(raw)
    }

    /// Checks that `count` items of `width` bytes starting at `start` end inside the object area;
    /// returns the end offset.
    private func end(of object: Int, at offset: Int, start: Int, count: Int, width: Int) throws -> Int {
        let (size, overflow) = count.multipliedReportingOverflow(by: width)
        guard !overflow, start <= offsetTableStart, size <= offsetTableStart - start else {
            throw PropertyListError.truncatedObject(object: object, offset: offset)
        }
        return start + size
    }

    /// The element count of a data, string or container object and where its payload starts.
    private func lengthAndStart(object: Int, offset: Int) throws -> (count: Int, start: Int) {
        let nibble = Int(bytes[offset] & 0x0F)
        if nibble != 0x0F { return (nibble, offset + 1) }
        guard offset + 1 < offsetTableStart else { throw PropertyListError.truncatedObject(object: object, offset: offset) }
        let marker = bytes[offset + 1]
        guard marker >> 4 == 0x1, marker & 0x0F <= 3 else {
            throw PropertyListError.invalidObject(object: object, offset: offset, reason: String(format: "length marker 0x%02x is not an integer of 1 to 8 bytes", marker))
        }
        let size = 1 << Int(marker & 0x0F)
        let payload = offset + 2
        _ = try end(of: object, at: offset, start: payload, count: size, width: 1)
        let raw = Self.readUInt(bytes, at: payload, size: size)
        guard raw <= UInt64(Int.max) else {
            throw PropertyListError.invalidObject(object: object, offset: offset, reason: "length \(raw) is too large")
        }
        return (Int(raw), payload + size)
    }

    /// Reads the object reference at `position` and checks it names an existing object.
    private func reference(at position: Int, in object: Int) throws -> Int {
        let raw = Self.readUInt(bytes, at: position, size: objectRefSize)
        guard raw < UInt64(objectCount) else {
            throw PropertyListError.objectReferenceOutOfRange(reference: raw, objectCount: objectCount, object: object)
        }
        return Int(raw)
    }

    private mutating func value(object: Int, depth: Int) throws -> PropertyListValue {
        valueCount += 1
        guard valueCount <= limits.maximumObjectCount else {
            throw PropertyListError.valueLimitExceeded(limit: limits.maximumObjectCount)
        }
        let offset = try offset(of: object)
        let marker = bytes[offset]
        let nibble = Int(marker & 0x0F)
        func invalid(_ reason: String) -> PropertyListError {
            .invalidObject(object: object, offset: offset, reason: reason)
        }
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .boolean(false)
            case 0x09: return .boolean(true)
            default: throw invalid(String(format: "marker 0x%02x (null or fill) is not supported", marker))
            }
        case 0x1:
            guard nibble <= 4 else { throw invalid(String(format: "integer marker 0x%02x has no valid size", marker)) }
            let size = 1 << nibble
            _ = try end(of: object, at: offset, start: offset + 1, count: size, width: 1)
            return .integer(try integer(at: offset + 1, size: size, object: object, offset: offset))
        case 0x2:
            guard nibble == 2 || nibble == 3 else { throw invalid(String(format: "real marker 0x%02x is not 4 or 8 bytes", marker)) }
            let size = 1 << nibble
            _ = try end(of: object, at: offset, start: offset + 1, count: size, width: 1)
            let raw = Self.readUInt(bytes, at: offset + 1, size: size)
            return .real(size == 4 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : Double(bitPattern: raw))
        case 0x3:
            guard marker == 0x33 else { throw invalid(String(format: "date marker 0x%02x is not 0x33", marker)) }
            _ = try end(of: object, at: offset, start: offset + 1, count: 8, width: 1)
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: Self.readUInt(bytes, at: offset + 1, size: 8))))
        case 0x4:
            let (count, start) = try lengthAndStart(object: object, offset: offset)
            let stop = try end(of: object, at: offset, start: start, count: count, width: 1)
            try countDecoded(stop - start)
            return .data(Data(bytes[start..<stop]))
        case 0x5:
            let (count, start) = try lengthAndStart(object: object, offset: offset)
            let stop = try end(of: object, at: offset, start: start, count: count, width: 1)
            try countDecoded(stop - start)
            let slice = bytes[start..<stop]
            guard slice.allSatisfy({ $0 < 0x80 }) else { throw invalid("ASCII string holds a byte above 0x7f") }
            return .string(String(decoding: slice, as: UTF8.self))
        case 0x6:
            let (count, start) = try lengthAndStart(object: object, offset: offset)
            _ = try end(of: object, at: offset, start: start, count: count, width: 2)
            try countDecoded(2 * count)
            let units = (0..<count).map { UInt16(bytes[start + 2 * $0]) << 8 | UInt16(bytes[start + 2 * $0 + 1]) }
            return .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            let size = nibble + 1
            guard size <= 8 else { throw invalid("UID of \(size) bytes does not fit in 64 bits") }
            _ = try end(of: object, at: offset, start: offset + 1, count: size, width: 1)
            return .uid(Self.readUInt(bytes, at: offset + 1, size: size))
        case 0xA, 0xB, 0xC:
            return try container(object: object, offset: offset, depth: depth, isDictionary: false)
        case 0xD:
            return try container(object: object, offset: offset, depth: depth, isDictionary: true)
        default:
            throw invalid(String(format: "unknown object marker 0x%02x", marker))
        }
    }

    /// Adds a data or string payload to what decoding has produced; throws past the limit.
    private mutating func countDecoded(_ byteCount: Int) throws {
        decodedBytes += byteCount
        guard decodedBytes <= limits.maximumDecodedBytes else { throw PropertyListError.byteLimitExceeded(limit: limits.maximumDecodedBytes) }
    }

    /// Reads a 1, 2, 4 (unsigned), 8 (signed) or 16-byte integer.
    private func integer(at position: Int, size: Int, object: Int, offset: Int) throws -> Int64 {
        guard size == 16 else {
            let raw = Self.readUInt(bytes, at: position, size: size)
            return size == 8 ? Int64(bitPattern: raw) : Int64(raw)
        }
        let high = Self.readUInt(bytes, at: position, size: 8)
        let low = Int64(bitPattern: Self.readUInt(bytes, at: position + 8, size: 8))
        // Fits only when the high half is the sign extension of the low half.
        guard (high == 0 && low >= 0) || (high == UInt64.max && low < 0) else {
            throw PropertyListError.integerOutOfRange(object: object, offset: offset)
        }
        return low
    }

    private mutating func container(object: Int, offset: Int, depth: Int, isDictionary: Bool) throws -> PropertyListValue {
        guard depth < limits.maximumDepth else { throw PropertyListError.depthLimitExceeded(limit: limits.maximumDepth) }
        let (count, start) = try lengthAndStart(object: object, offset: offset)
        _ = try end(of: object, at: offset, start: start, count: count, width: objectRefSize * (isDictionary ? 2 : 1))
        isOnPath[object] = true
        defer { isOnPath[object] = false }
        func child(_ index: Int) throws -> Int {
            let reference = try reference(at: start + index * objectRefSize, in: object)
            guard !isOnPath[reference] else { throw PropertyListError.cyclicReference(object: reference) }
            return reference
        }
        guard isDictionary else {
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(count)
            for index in 0..<count { elements.append(try value(object: child(index), depth: depth + 1)) }
            return .array(elements)
        }
        var entries: [String: PropertyListValue] = [:]
        entries.reserveCapacity(count)
        for index in 0..<count {
            let keyObject = try child(index)
            let keyMarker = bytes[try self.offset(of: keyObject)] >> 4
            guard keyMarker == 0x5 || keyMarker == 0x6, case .string(let key) = try value(object: keyObject, depth: depth + 1) else {
                throw PropertyListError.nonStringKey(dictionary: object, keyObject: keyObject)
            }
            let entry = try value(object: child(count + index), depth: depth + 1)
            guard entries.updateValue(entry, forKey: key) == nil else {
                throw PropertyListError.duplicateKey(key: key, dictionary: object)
            }
        }
        return .dictionary(entries)
    }
}
