import Foundation
import Testing
@testable import StoreRescue

/// Damaged and hostile binary property lists: each must throw a specific `PropertyListError`,
/// never crash, hang or exhaust memory.
@Suite struct HostilePropertyListTests {
    typealias Made = HandMadePropertyList

    private func decodeError(_ data: Data, limits: PropertyListLimits = .default) -> PropertyListError? {
        #expect(throws: PropertyListError.self) { try BinaryPropertyListDecoder.decode(data, limits: limits) }
    }

    @Test func emptyInput() {
        let error = decodeError(Data())
        #expect(error == .notAPropertyList(reason: "the input is empty"))
        #expect(error?.description == "not a property list: the input is empty")
        #expect(error?.exitStatus == .notAStore)
        #expect(error?.recoverySuggestion?.contains("integrity_check") == true)
    }

    @Test func notAPropertyListAtAll() {
        let error = decodeError(Data("SQLite format 3\0".utf8))
        #expect(error?.description == "not a property list: it starts with 53 51 4c 69 74 65 20 66, not \"bplist00\" or an XML header")
    }

    @Test func otherBinaryVersionsAreRefused() {
        #expect(decodeError(Data("bplist15xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".utf8)) == .unsupportedVersion(header: "bplist15"))
    }

    @Test func inputOverTheSizeLimit() {
        let error = decodeError(BinaryPropertyListEncoder.encode(samplePropertyList), limits: PropertyListLimits(maximumInputBytes: 100))
        guard case .inputTooLarge(_, let limit) = error else {
            Issue.record("expected inputTooLarge, got \(String(describing: error))")
            return
        }
        #expect(limit == 100)
    }

    /// One 1 MiB data object referenced 100 times: 100 MiB decoded from a 1 MiB file, refused by
    /// both bounds on bytes decoded; referenced 10 times it is within both.
    @Test func aSharedBlobCountsOncePerReference() throws {
        let hundred = Made.sharedBlob(references: 100, blobBytes: 1 << 20).data
        #expect(hundred.count < (1 << 20) + 200)
        #expect(decodeError(hundred) == .byteLimitExceeded(limit: 64 << 20))
        #expect(decodeError(hundred, limits: .storeContent) == .byteLimitExceeded(limit: 16 << 20))
        #expect(decodeError(hundred, limits: .storeContent)?.description == "property list expands to more than the limit of 16777216 bytes of data and text")
        let ten = Made.sharedBlob(references: 10, blobBytes: 1 << 20).data
        let decoded = try BinaryPropertyListDecoder.decode(ten, limits: .storeContent)
        #expect(decoded.dictionary?["k"]?.array?.count == 10)
        #expect(decoded.dictionary?["k"]?.array?.first?.data?.count == 1 << 20)
    }

    @Test func randomBytesAreRefused() {
        var generator = SeededGenerator(seed: 0x5EED)
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...300, using: &generator)
            let bytes = generator.bytes(length)
            #expect(throws: PropertyListError.self) { try BinaryPropertyListDecoder.decode(Data(bytes)) }
            // The same bytes behind a valid header reach the trailer and object checks.
            #expect(throws: PropertyListError.self) { try BinaryPropertyListDecoder.decode(Data(Array("bplist00".utf8) + bytes)) }
        }
    }

    @Test func randomlyDamagedPropertyListsNeverCrash() {
        let valid = [UInt8](BinaryPropertyListEncoder.encode(samplePropertyList))
        var generator = SeededGenerator(seed: 42)
        var refused = 0
        for _ in 0..<3_000 {
            var damaged = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: 8..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                _ = try BinaryPropertyListDecoder.decode(Data(damaged))
            } catch is PropertyListError {
                refused += 1
            } catch {
                Issue.record("unexpected error type \(error)")
            }
        }
        #expect(refused > 1_000)
    }

    @Test func everyTruncationIsRefused() {
        let valid = BinaryPropertyListEncoder.encode(samplePropertyList)
        for length in 0..<valid.count {
            #expect(throws: PropertyListError.self, "truncated to \(length) bytes") {
                try BinaryPropertyListDecoder.decode(valid.prefix(length))
            }
        }
    }

    @Test func arrayContainingItself() {
        let error = decodeError(Made(objects: [Made.array([0])]).data)
        #expect(error == .cyclicReference(object: 0))
        #expect(error?.description == "damaged binary property list: object 0 contains itself (reference cycle)")
    }

    @Test func indirectCycleThroughADictionary() {
        let made = Made(objects: [Made.array([1]), Made.dictionary(keys: [2], values: [0]), Made.ascii("k")])
        #expect(decodeError(made.data) == .cyclicReference(object: 0))
    }

    @Test func sharedObjectsAreNotCycles() throws {
        let made = Made(objects: [Made.array([1, 1, 2]), Made.array([2]), Made.ascii("x")])
        #expect(try BinaryPropertyListDecoder.decode(made.data) == .array([.array([.string("x")]), .array([.string("x")]), .string("x")]))
    }

    @Test func exponentialSharingHitsTheValueLimit() {
        // Object i is [i+1, i+1]: 2^40 leaves from 41 objects.
        var objects = (0..<40).map { Made.array([UInt8($0 + 1), UInt8($0 + 1)]) }
        objects.append(Made.ascii("x"))
        #expect(decodeError(Made(objects: objects).data) == .valueLimitExceeded(limit: 2_000_000))
    }

    @Test func hugeDeclaredObjectCount() {
        var made = Made(objects: [Made.ascii("x")])
        made.declaredObjectCount = UInt64.max
        let error = decodeError(made.data)
        #expect(error == .tooManyObjects(declared: UInt64.max, limit: 2_000_000))
        #expect(error?.description == "binary property list declares 18446744073709551615 objects, over the limit of 2000000")
        made.declaredObjectCount = 1_000_000
        guard case .invalidTrailer(let reason) = decodeError(made.data) else {
            Issue.record("expected invalidTrailer")
            return
        }
        #expect(reason == "an offset table of 1000000 entries of 1 bytes does not fit before the trailer")
    }

    @Test func hugeDeclaredLengths() {
        // An array claiming 2^62 elements, a data object claiming Int64.max bytes, one claiming 2^64−1.
        let array = Made(objects: [[0xAF, 0x13] + Made.bigEndian(1 << 62, width: 8)])
        #expect(decodeError(array.data) == .truncatedObject(object: 0, offset: 8))
        let data = Made(objects: [[0x4F, 0x13] + Made.bigEndian(UInt64(Int64.max), width: 8)])
        #expect(decodeError(data.data) == .truncatedObject(object: 0, offset: 8))
        let huge = Made(objects: [[0x4F, 0x13] + Made.bigEndian(UInt64.max, width: 8)])
        #expect(decodeError(huge.data) == .invalidObject(object: 0, offset: 8, reason: "length 18446744073709551615 is too large"))
    }

    @Test func offsetsOutsideTheObjectArea() {
        var made = Made(objects: [Made.ascii("x")])
        made.offsetOverrides[0] = 200
        #expect(decodeError(made.data) == .invalidOffset(object: 0, offset: 200))
        made.offsetOverrides[0] = 3
        #expect(decodeError(made.data)?.description == "damaged binary property list: object 0 has offset 3, outside the object area")
        made.offsetOverrides = [:]
        made.declaredTableOffset = 5_000
        #expect(decodeError(made.data) == .invalidTrailer(reason: "offset table offset 5000 is outside the file"))
    }

    @Test func invalidTrailerFields() {
        var made = Made(objects: [Made.ascii("x")])
        made.offsetIntSize = 0
        #expect(decodeError(made.data) == .invalidTrailer(reason: "offset size 0 is not between 1 and 8"))
        made = Made(objects: [Made.ascii("x")], topObject: 1)
        #expect(decodeError(made.data) == .invalidTrailer(reason: "top object 1 is not among the 1 objects"))
        made = Made(objects: [Made.ascii("x")], objectRefSize: 9)
        #expect(decodeError(made.data) == .invalidTrailer(reason: "object reference size 9 is not between 1 and 8"))
    }

    @Test func referenceToAMissingObject() {
        let error = decodeError(Made(objects: [Made.array([5])]).data)
        #expect(error == .objectReferenceOutOfRange(reference: 5, objectCount: 1, object: 0))
        #expect(error?.description == "damaged binary property list: object 0 refers to object 5, but there are only 1 objects")
    }

    @Test func nestingBeyondTheDepthLimit() throws {
        var deep = PropertyListValue.string("bottom")
        for _ in 0..<300 { deep = .array([deep]) }
        let error = decodeError(BinaryPropertyListEncoder.encode(deep))
        #expect(error == .depthLimitExceeded(limit: 256))
        #expect(error?.description == "property list nests containers deeper than the limit of 256")

        var ten = PropertyListValue.string("bottom")
        for _ in 0..<10 { ten = .array([ten]) }
        let limits = PropertyListLimits(maximumDepth: 10)
        #expect(try BinaryPropertyListDecoder.decode(BinaryPropertyListEncoder.encode(ten), limits: limits) == ten)
        #expect(decodeError(BinaryPropertyListEncoder.encode(.array([ten])), limits: limits) == .depthLimitExceeded(limit: 10))
    }

    @Test func nonStringAndDuplicateKeys() {
        let integerKey = Made(objects: [Made.dictionary(keys: [1], values: [1]), [0x10, 7]])
        let error = decodeError(integerKey.data)
        #expect(error == .nonStringKey(dictionary: 0, keyObject: 1))
        #expect(error?.description == "damaged binary property list: dictionary 0 has a key (object 1) that is not a string")
        let duplicate = Made(objects: [Made.dictionary(keys: [1, 1], values: [2, 2]), Made.ascii("a"), [0x09]])
        #expect(decodeError(duplicate.data) == .duplicateKey(key: "a", dictionary: 0))
    }

    @Test func deeplyNestedXMLIsRefusedByFoundation() {
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\">" + String(repeating: "<array>", count: 100_000)
            + String(repeating: "</array>", count: 100_000) + "</plist>"
        let error = decodeError(Data(xml.utf8))
        #expect(error == .unreadableXML(reason: "Too many nested arrays or dictionaries, failing on line 1"))
    }

    @Test func malformedObjects() {
        #expect(decodeError(Made(objects: [[0x70]]).data) == .invalidObject(object: 0, offset: 8, reason: "unknown object marker 0x70"))
        #expect(decodeError(Made(objects: [[0x00]]).data) == .invalidObject(object: 0, offset: 8, reason: "marker 0x00 (null or fill) is not supported"))
        #expect(decodeError(Made(objects: [[0x52, 0x41, 0xE9]]).data) == .invalidObject(object: 0, offset: 8, reason: "ASCII string holds a byte above 0x7f"))
        #expect(decodeError(Made(objects: [[0x21, 0, 0]]).data) == .invalidObject(object: 0, offset: 8, reason: "real marker 0x21 is not 4 or 8 bytes"))
        #expect(decodeError(Made(objects: [[0x8F] + [UInt8](repeating: 1, count: 16)]).data)
            == .invalidObject(object: 0, offset: 8, reason: "UID of 16 bytes does not fit in 64 bits"))
        // A string whose length runs into the offset table.
        #expect(decodeError(Made(objects: [[0x5E, 0x41]]).data) == .truncatedObject(object: 0, offset: 8))
    }
}
