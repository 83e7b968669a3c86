import Foundation
@testable import StoreRescue

/// A deterministic random number generator (SplitMix64), so fuzz tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// Builds binary property lists byte by byte, so tests can write the damaged ones a real writer
/// never would.
struct HandMadePropertyList {
    /// The bytes of each object, in object-number order.
    var objects: [[UInt8]]
    var topObject: UInt64 = 0
    var objectRefSize: UInt8 = 1
    var offsetIntSize: UInt8 = 1
    /// Replaces the declared object count when set.
    var declaredObjectCount: UInt64?
    /// Replaces the declared offset-table offset when set.
    var declaredTableOffset: UInt64?
    /// Replaces individual offset-table entries.
    var offsetOverrides: [Int: UInt64] = [:]

    var data: Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt64] = []
        for object in objects {
            offsets.append(UInt64(bytes.count))
            bytes += object
        }
        let tableOffset = UInt64(bytes.count)
        for (index, offset) in offsets.enumerated() {
            bytes += Self.bigEndian(offsetOverrides[index] ?? offset, width: Int(offsetIntSize))
        }
        bytes += [0, 0, 0, 0, 0, 0, offsetIntSize, objectRefSize]
        bytes += Self.bigEndian(declaredObjectCount ?? UInt64(objects.count), width: 8)
        bytes += Self.bigEndian(topObject, width: 8)
        bytes += Self.bigEndian(declaredTableOffset ?? tableOffset, width: 8)
        return Data(bytes)
    }

    static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) }
    }

    /// An ASCII string object.
    static func ascii(_ string: String) -> [UInt8] {
        precondition(string.utf8.count < 15)
        return [0x50 | UInt8(string.utf8.count)] + Array(string.utf8)
    }

    /// An array object holding one-byte references.
    static func array(_ references: [UInt8]) -> [UInt8] {
        precondition(references.count < 15)
        return [0xA0 | UInt8(references.count)] + references
    }

    /// A dictionary `{"k": [[…]]}` whose arrays each hold their child twice, `doublings` deep, down
    /// to the string "x": under 200 bytes that decode to about 2^`doublings` values (a "billion
    /// laughs" property list, shared children counting once per reference).
    static func expanding(doublings: Int) -> HandMadePropertyList {
        precondition((1...200).contains(doublings))
        var objects = [dictionary(keys: [1], values: [2]), ascii("k")]
        objects += (2..<(2 + doublings - 1)).map { array([UInt8($0 + 1), UInt8($0 + 1)]) }
        objects.append(ascii("x"))
        return HandMadePropertyList(objects: objects)
    }

    /// A dictionary `{"k": [blob, blob, …]}` whose array refers `references` times to one data
    /// object of `blobBytes` bytes: a small file that decodes to `references × blobBytes` bytes.
    static func sharedBlob(references: Int, blobBytes: Int) -> HandMadePropertyList {
        precondition((1...255).contains(references) && blobBytes >= 15 && blobBytes < 1 << 32)
        let array: [UInt8] = [0xAF, 0x10, UInt8(references)] + [UInt8](repeating: 3, count: references)
        let blob: [UInt8] = [0x4F, 0x12] + bigEndian(UInt64(blobBytes), width: 4) + [UInt8](repeating: 0xB1, count: blobBytes)
        return HandMadePropertyList(objects: [dictionary(keys: [1], values: [2]), ascii("k"), array, blob], offsetIntSize: 4)
    }

    /// A dictionary object holding one-byte key references, then value references.
    static func dictionary(keys: [UInt8], values: [UInt8]) -> [UInt8] {
        precondition(keys.count == values.count && keys.count < 15)
        return [0xD0 | UInt8(keys.count)] + keys + values
    }
}

/// A value that uses every kind of property list value, nested, with long and non-ASCII strings.
let samplePropertyList: PropertyListValue = .dictionary([
    "ascii": .string("hello"),
    "empty": .string(""),
    "unicode": .string("Grüße, 世界 👋🏽"),
    "long": .string(String(repeating: "abcdefghij", count: 30)),
    "integers": .array([
        .integer(0), .integer(1), .integer(255), .integer(256), .integer(65_535), .integer(65_536),
        .integer(4_294_967_295), .integer(4_294_967_296), .integer(-1), .integer(Int64.min), .integer(Int64.max),
    ]),
    "reals": .array([.real(0), .real(-0.0), .real(1.5), .real(-3.25e300), .real(.infinity)]),
    "booleans": .array([.boolean(true), .boolean(false)]),
    "dates": .array([.date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: 752_000_000.5))]),
    "data": .array([.data(Data()), .data(Data([0, 1, 2, 255])), .data(Data(repeating: 7, count: 300))]),
    "nested": .dictionary(["a": .array([.array([]), .dictionary([:]), .array([.string("deep")])])]),
    "many": .array((0..<300).map { .integer(Int64($0)) }),
])
