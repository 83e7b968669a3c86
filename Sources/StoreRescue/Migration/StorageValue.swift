import Foundation

/// How Core Data stores an attribute's value in its column, and the conversions a migration
/// may make between types without losing anything (`Docs/MIGRATE.md#values`).
///
/// Storage by type (format notes §3): integers and Boolean as SQLite integers (Boolean 0/1);
/// Double, Float and Date as reals (a Date is seconds since 2001-01-01); Decimal as a number;
/// String and URI as text; UUID as 16 raw bytes; Binary and Transformable as blobs.
enum StorageValue {
    /// The range of each integer type.
    static func range(of type: AttributeType) -> ClosedRange<Int64>? {
        switch type {
        case .integer16: return Int64(Int16.min)...Int64(Int16.max)
        case .integer32: return Int64(Int32.min)...Int64(Int32.max)
        case .integer64: return Int64.min...Int64.max
        case .boolean: return 0...1
        default: return nil
        }
    }

    /// An attribute's default value (`defaultValueString`) in storage form: `YES` → 1, a date
    /// (ISO 8601, as model files and catalogs write it) → seconds since 2001, a UUID → its 16
    /// bytes. Nil when the attribute has no default.
    ///
    /// - Throws: `Failure` naming the value when it does not fit the type.
    static func defaultValue(of attribute: AttributeDescription) throws(Failure) -> SQLiteValue? {
        guard let text = attribute.defaultValue else { return nil }
        guard let value = convert(.text(text), to: attribute.type, fromDefaultString: true) else {
            throw Failure(value: text, type: attribute.type)
        }
        return value
    }

    /// A value that does not fit an attribute's type.
    struct Failure: Error, Equatable {
        var value: String
        var type: AttributeType
    }

    /// `value` in the storage form of `type`, or nil when it cannot be stored there without
    /// loss. NULL stays NULL.
    ///
    /// - Parameter fromDefaultString: text is a `defaultValueString` (Booleans may read `YES`).
    static func convert(_ value: SQLiteValue, to type: AttributeType, fromDefaultString: Bool = false) -> SQLiteValue? {
        if value == .null { return .null }
        switch type {
        case .integer16, .integer32, .integer64, .boolean:
            guard let range = range(of: type), let number = integer(value, allowsWords: type == .boolean) else { return nil }
            return range.contains(number) ? .integer(number) : nil
        case .double, .date, .decimal:
            if type == .date, case .text(let text) = value, let date = date(text) { return .real(date) }
            guard let number = real(value) else { return nil }
            if type == .decimal, case .integer = value { return value }
            return .real(number)
        case .float:
            guard let number = real(value) else { return nil }
            // A model's default is read as Core Data reads it, into a Float: `0.1` is valid and
            // stored as Float(0.1) is (a review's valid model was refused, "not a Float").
            if fromDefaultString, number.isFinite, Float(number).isFinite { return .real(Double(Float(number))) }
            guard Double(Float(number)) == number || number.isNaN else { return nil }
            return .real(number)
        case .string, .uri:
            switch value {
            case .text: return value
            case .integer(let n): return .text(String(n))
            case .real(let d): return .text(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d))
            case .blob(let data): return String(data: data, encoding: .utf8).map(SQLiteValue.text)
            case .null: return .null
            }
        case .uuid:
            switch value {
            case .blob(let data): return data.count == 16 ? value : nil
            case .text(let text): return UUID(uuidString: text).map { .blob(uuidBytes($0)) }
            default: return nil
            }
        case .binaryData, .transformable:
            switch value {
            case .blob: return value
            case .text(let text) where !fromDefaultString: return .blob(Data(text.utf8))
            default: return nil
            }
        case .undefined, .objectID, .composite:
            return nil
        }
    }

    /// The 16 bytes of a UUID, as Core Data stores UUID attributes.
    static func uuidBytes(_ uuid: UUID) -> Data {
        withUnsafeBytes(of: uuid.uuid) { Data($0) }
    }

    private static func integer(_ value: SQLiteValue, allowsWords: Bool) -> Int64? {
        switch value {
        case .integer(let n): return n
        case .real(let d): return d.rounded() == d && abs(d) < 9.2e18 ? Int64(d) : nil
        case .text(let text):
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if allowsWords {
                switch trimmed.lowercased() {
                case "yes", "true": return 1
                case "no", "false": return 0
                default: break
                }
            }
            return Int64(trimmed)
        default: return nil
        }
    }

    private static func real(_ value: SQLiteValue) -> Double? {
        switch value {
        case .integer(let n):
            let d = Double(n)
            return Int64(exactly: d) == n ? d : nil
        case .real(let d): return d
        case .text(let text):
            // A number SQLite can store (NaN it stores as NULL), from text no longer than a
            // Double holds exactly (15 significant digits): `12345678901234567890.123` would
            // come back as 1.23456789012345671677e+19, its last digits lost.
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let number = Double(trimmed), !number.isNaN, number.isInfinite || significantDigits(trimmed) <= 15 else { return nil }
            return number
        default: return nil
        }
    }

    /// The significant digits of a decimal number's text: its mantissa's digits without the
    /// leading zeros and without the trailing zeros (which a Double keeps exactly).
    static func significantDigits(_ text: String) -> Int {
        let mantissa = text.prefix { $0 != "e" && $0 != "E" }
        let digits = mantissa.filter { ("0"..."9").contains($0) }
        let trimmed = digits.drop { $0 == "0" }
        return trimmed.reversed().drop { $0 == "0" }.count
    }

    /// An ISO 8601 date (as `defaultValueString` and catalogs write dates) in seconds since 2001.
    private static func date(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date.timeIntervalSinceReferenceDate }
        }
        return nil
    }
}

/// What changing an attribute's type costs.
public enum TypeChange: Equatable, Sendable {
    /// The stored value is already in the new type's storage form (Int16 → Int64, Float →
    /// Double, String ↔ URI, UUID → Binary).
    case none
    /// Every stored value converts, but its storage form changes (a number to its text).
    case convertEveryValue
    /// Only values in the new type's range convert (Int64 → Int16, Double → Int, String →
    /// Int): the data decides; a value that does not convert stops the migration.
    case convertIfEveryValueFits
    /// No stored value can become the new type without a custom stage.
    case impossible

    static func between(_ from: AttributeType, _ to: AttributeType) -> TypeChange {
        if from == to { return .none }
        let integers: Set<AttributeType> = [.integer16, .integer32, .integer64]
        let reals: Set<AttributeType> = [.double, .date]
        switch (from, to) {
        case let (a, b) where integers.contains(a) && integers.contains(b):
            guard let wide = StorageValue.range(of: b), let narrow = StorageValue.range(of: a) else { return .convertIfEveryValueFits }
            return wide.lowerBound <= narrow.lowerBound && narrow.upperBound <= wide.upperBound ? .none : .convertIfEveryValueFits
        case let (a, b) where reals.contains(a) && reals.contains(b): return .none
        case (.float, .double), (.float, .date), (.boolean, .integer16), (.boolean, .integer32), (.boolean, .integer64): return .none
        case (.string, .uri), (.uri, .string), (.uuid, .binaryData): return .none
        case let (a, .boolean) where integers.contains(a): return .convertIfEveryValueFits
        case let (a, b) where (integers.contains(a) || a == .boolean) && (reals.contains(b) || b == .float || b == .decimal):
            return .convertIfEveryValueFits
        case let (a, b) where (reals.contains(a) || a == .float || a == .decimal) && (integers.contains(b) || b == .decimal || b == .double || b == .float):
            return .convertIfEveryValueFits
        case let (a, .string) where a != .binaryData && a != .transformable && a != .uuid: return .convertEveryValue
        case let (.string, b) where b != .transformable: return .convertIfEveryValueFits
        case (.binaryData, .uuid): return .convertIfEveryValueFits
        default: return .impossible
        }
    }
}
