import Foundation

/// One value of a property list, as read from untrusted bytes: no `Any`, no Foundation classes.
///
/// Binary property lists can hold unsigned integers up to 2¹²⁸−1; values that do not fit `Int64`
/// are refused by `BinaryPropertyListDecoder` (`PropertyListError.integerOutOfRange`) rather than
/// clamped, so a value is never silently changed on its way through this tool. Sets and ordered
/// sets are read as `.array`.
///
/// ```swift
/// let metadata = try BinaryPropertyListDecoder.decode(plistBytes)
/// let hashes = metadata["NSStoreModelVersionHashes"]?.dictionary ?? [:]
/// ```
public enum PropertyListValue: Sendable, Equatable, Hashable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    /// A date; binary property lists store seconds since 2001-01-01 00:00:00 UTC.
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])
    /// An `NSKeyedArchiver` object reference (`CF$UID`).
    case uid(UInt64)

    /// The string, when this is `.string`.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, when this is `.integer`.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The number, when this is `.real`.
    public var real: Double? {
        if case .real(let value) = self { return value }
        return nil
    }

    /// The flag, when this is `.boolean`.
    public var boolean: Bool? {
        if case .boolean(let value) = self { return value }
        return nil
    }

    /// The date, when this is `.date`.
    public var date: Date? {
        if case .date(let value) = self { return value }
        return nil
    }

    /// The bytes, when this is `.data`.
    public var data: Data? {
        if case .data(let value) = self { return value }
        return nil
    }

    /// The elements, when this is `.array`.
    public var array: [PropertyListValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries, when this is `.dictionary`.
    public var dictionary: [String: PropertyListValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    /// The object reference, when this is `.uid`.
    public var uid: UInt64? {
        if case .uid(let value) = self { return value }
        return nil
    }

    /// The value stored under `key` when this is a dictionary; nil otherwise.
    public subscript(key: String) -> PropertyListValue? {
        dictionary?[key]
    }

    /// A short name for the kind of value, for error messages ("a string", "an array").
    public var kindDescription: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .real: return "a real number"
        case .boolean: return "a boolean"
        case .date: return "a date"
        case .data: return "data"
        case .array: return "an array"
        case .dictionary: return "a dictionary"
        case .uid: return "an object reference (UID)"
        }
    }
}

extension PropertyListValue: Encodable {
    /// Encodes the value as readable JSON-like output.
    ///
    /// Strings, integers, booleans, arrays and dictionaries map natively (dictionary keys are
    /// sorted when the encoder sorts keys); data becomes a base64 string, a date an ISO-8601
    /// string (with milliseconds when it has a fraction of a second), a UID `{"CF$UID": n}`, and a
    /// non-finite real the string `"nan"`, `"inf"` or `"-inf"` (JSON has no such numbers).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .uid(let value):
            var container = encoder.container(keyedBy: UIDCodingKey.self)
            try container.encode(value, forKey: .uid)
        default:
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            case .real(let value):
                if value.isFinite {
                    try container.encode(value)
                } else {
                    try container.encode(value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf"))
                }
            case .boolean(let value): try container.encode(value)
            case .date(let value): try container.encode(Self.iso8601(value))
            case .data(let value): try container.encode(value.base64EncodedString())
            case .array(let value): try container.encode(value)
            case .dictionary(let value): try container.encode(value)
            case .uid: preconditionFailure("handled above")
            }
        }
    }

    private enum UIDCodingKey: String, CodingKey {
        case uid = "CF$UID"
    }

    /// `2001-01-01T00:00:10Z`, or `2001-01-01T00:00:10.500Z` when there is a fraction of a second.
    /// Dates more than about 30,000 years from 2001, which the formatter would silently clamp, are
    /// written as `"<seconds> seconds since 2001-01-01T00:00:00Z"`.
    static func iso8601(_ date: Date) -> String {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, abs(seconds) < 1e12 else { return "\(seconds) seconds since 2001-01-01T00:00:00Z" }
        if seconds.rounded(.down) == seconds {
            return date.formatted(.iso8601)
        }
        return date.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
