import Foundation
import Testing
@testable import StoreRescue

@Suite struct BinaryPropertyListRoundTripTests {
    @Test func roundTripsEveryKindOfValue() throws {
        let encoded = BinaryPropertyListEncoder.encode(samplePropertyList)
        #expect(encoded.starts(with: Array("bplist00".utf8)))
        #expect(try BinaryPropertyListDecoder.decode(encoded) == samplePropertyList)
    }

    @Test(arguments: [
        PropertyListValue.uid(0), .uid(255), .uid(256), .uid(70_000), .uid(UInt64.max),
        .string("solo"), .integer(-42), .boolean(true), .array([]), .dictionary([:]),
    ])
    func roundTripsTopLevelScalarsAndUIDs(value: PropertyListValue) throws {
        #expect(try BinaryPropertyListDecoder.decode(BinaryPropertyListEncoder.encode(value)) == value)
    }

    @Test func encodingIsDeterministicAndSortsKeys() throws {
        let first = BinaryPropertyListEncoder.encode(samplePropertyList)
        let second = BinaryPropertyListEncoder.encode(samplePropertyList)
        #expect(first == second)
        // "B" (0x42) sorts before "a" (0x61) and "é" (0xC3 0xA9) after both: code-point order.
        let value = PropertyListValue.dictionary(["é": .integer(1), "a": .integer(2), "B": .integer(3)])
        let bytes = [UInt8](BinaryPropertyListEncoder.encode(value))
        let upperB = bytes.firstIndex(of: 0x42), lowerA = bytes.firstIndex(of: 0x61)
        if let upperB, let lowerA {
            #expect(upperB < lowerA)
        } else {
            Issue.record("keys not found in \(bytes)")
        }
    }

    @Test func sharesEqualScalarsButKeepsNegativeZeroDistinct() throws {
        let value = PropertyListValue.array(Array(repeating: .string("same"), count: 10) + [.real(0), .real(-0.0)])
        let encoded = BinaryPropertyListEncoder.encode(value)
        let decoded = try BinaryPropertyListDecoder.decode(encoded)
        guard case .array(let elements) = decoded, case .real(let negative) = elements[11] else {
            Issue.record("unexpected shape \(decoded)")
            return
        }
        #expect(negative.sign == .minus)
        // Objects: the array, one shared string, two reals (low byte of the trailer's count).
        #expect(encoded[encoded.count - 17] == 4)
    }

    @Test func minimalIntegerSizes() {
        // bplist00, int marker 0x10 + 1 byte, offset table (1 entry), trailer.
        #expect(BinaryPropertyListEncoder.encode(.integer(200)).count == 8 + 2 + 1 + 32)
        #expect(BinaryPropertyListEncoder.encode(.integer(-1)).count == 8 + 9 + 1 + 32)
        #expect(BinaryPropertyListEncoder.encode(.integer(70_000)).count == 8 + 5 + 1 + 32)
    }

    @Test func decodesSixteenByteIntegersThatFitAndRefusesOthers() throws {
        var fits = HandMadePropertyList(objects: [[0x14] + [UInt8](repeating: 0, count: 15) + [42]])
        #expect(try BinaryPropertyListDecoder.decode(fits.data) == .integer(42))
        fits.objects = [[0x14] + [UInt8](repeating: 0xFF, count: 16)]
        #expect(try BinaryPropertyListDecoder.decode(fits.data) == .integer(-1))
        let tooBig = HandMadePropertyList(objects: [[0x14] + [UInt8](repeating: 0, count: 8) + [0x80] + [UInt8](repeating: 0, count: 7)])
        let error = #expect(throws: PropertyListError.integerOutOfRange(object: 0, offset: 8)) {
            try BinaryPropertyListDecoder.decode(tooBig.data)
        }
        #expect(error?.description.contains("does not fit in 64 bits") == true)
    }

    @Test func decodesBigEndianUTF16AndRepairsLoneSurrogates() throws {
        let text = HandMadePropertyList(objects: [[0x63, 0x00, 0x48, 0xD8, 0x3D, 0xDC, 0x4B]])
        #expect(try BinaryPropertyListDecoder.decode(text.data) == .string("H👋"))
        let lone = HandMadePropertyList(objects: [[0x62, 0xD8, 0x3D, 0x00, 0x41]])
        #expect(try BinaryPropertyListDecoder.decode(lone.data) == .string("\u{FFFD}A"))
    }

    @Test func readsSetsAsArrays() throws {
        let set = HandMadePropertyList(objects: [[0xC2, 1, 2], [0x10, 1], [0x10, 2]])
        #expect(try BinaryPropertyListDecoder.decode(set.data) == .array([.integer(1), .integer(2)]))
    }
}

@Suite struct FoundationPropertyListInteropTests {
    /// `samplePropertyList` as Foundation objects.
    static func foundationObject(_ value: PropertyListValue) -> Any {
        switch value {
        case .string(let s): return s
        case .integer(let i): return NSNumber(value: i)
        case .real(let d): return NSNumber(value: d)
        case .boolean(let b): return b
        case .date(let d): return d
        case .data(let d): return d
        case .array(let a): return a.map(foundationObject)
        case .dictionary(let d): return d.mapValues(foundationObject)
        case .uid: return "unsupported"
        }
    }

    @Test func foundationReadsWhatWeWrite() throws {
        let encoded = BinaryPropertyListEncoder.encode(samplePropertyList)
        let object = try PropertyListSerialization.propertyList(from: encoded, options: [], format: nil)
        var count = 0
        let converted = try XMLPropertyListReader.convert(object, depth: 0, count: &count, limits: .default)
        #expect(converted == samplePropertyList)
    }

    @Test func weReadWhatFoundationWritesInBinary() throws {
        let object = Self.foundationObject(samplePropertyList)
        let encoded = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        #expect(try BinaryPropertyListDecoder.decode(encoded) == samplePropertyList)
    }

    @Test func readsXMLPropertyListsThroughFoundation() throws {
        // XML dates keep whole seconds only.
        guard case .dictionary(var entries) = samplePropertyList else { return }
        entries["dates"] = .array([.date(Date(timeIntervalSinceReferenceDate: 752_000_000))])
        let value = PropertyListValue.dictionary(entries)
        let xml = try PropertyListSerialization.data(fromPropertyList: Self.foundationObject(value), format: .xml, options: 0)
        #expect(try BinaryPropertyListDecoder.decode(xml) == value)
        let broken = Data("<?xml version=\"1.0\"?><plist><dict><key>a</key>".utf8)
        let error = #expect(throws: PropertyListError.self) { try BinaryPropertyListDecoder.decode(broken) }
        #expect(error?.description.hasPrefix("unreadable XML property list") == true)
    }
}

@Suite struct PropertyListValueJSONTests {
    @Test func encodesReadableJSON() throws {
        let value = PropertyListValue.dictionary([
            "s": .string("x"), "i": .integer(-3), "r": .real(1.5), "b": .boolean(true),
            "d": .data(Data([1, 2, 3])), "t": .date(Date(timeIntervalSinceReferenceDate: 0)),
            "u": .uid(7), "a": .array([.integer(1), .real(.nan)]),
            "f": .date(Date(timeIntervalSinceReferenceDate: 0.25)),
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(value), as: UTF8.self)
        #expect(json == #"{"a":[1,"nan"],"b":true,"d":"AQID","f":"2001-01-01T00:00:00.250Z","i":-3,"r":1.5,"s":"x","#
            + #""t":"2001-01-01T00:00:00Z","u":{"CF$UID":7}}"#)
    }

    @Test func datesFarOutOfRangeAreNotClamped() throws {
        let encoder = JSONEncoder()
        let json = String(decoding: try encoder.encode(PropertyListValue.array([.date(Date(timeIntervalSinceReferenceDate: 1e300))])), as: UTF8.self)
        #expect(json == #"["1e+300 seconds since 2001-01-01T00:00:00Z"]"#)
    }

    @Test func accessorsAndSubscript() {
        let value = PropertyListValue.dictionary(["k": .string("v"), "n": .integer(4)])
        #expect(value["k"]?.string == "v")
        #expect(value["n"]?.integer == 4)
        #expect(value["n"]?.string == nil)
        #expect(value["missing"] == nil)
        #expect(PropertyListValue.string("x")["k"] == nil)
        #expect(PropertyListValue.boolean(true).boolean == true)
        #expect(PropertyListValue.array([]).array == [])
        #expect(PropertyListValue.data(Data([1])).data == Data([1]))
        #expect(PropertyListValue.uid(3).uid == 3)
    }
}
