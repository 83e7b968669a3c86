/// An optional that encodes as `null` when absent instead of leaving its key out (what
/// synthesized `Encodable` does with optionals).
///
/// Every field of a documented `--json` contract that can be absent is wrapped, so jobs can rely
/// on every documented key being present, and adding a field never needs a hand-written
/// `encode(to:)` (where a forgotten line would silently drop the field).
///
/// ```swift
/// struct Report: Encodable {
///     @NullEncoded var version: String?   // {"version": null}
/// }
/// ```
@propertyWrapper
public struct NullEncoded<Wrapped: Encodable>: Encodable {
    public var wrappedValue: Wrapped?

    public init(wrappedValue: Wrapped?) {
        self.wrappedValue = wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(wrappedValue)
        } else {
            try container.encodeNil()
        }
    }
}

extension NullEncoded: Sendable where Wrapped: Sendable {}
extension NullEncoded: Equatable where Wrapped: Equatable {}

extension NullEncoded: Decodable where Wrapped: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Wrapped.self)
    }
}

extension KeyedDecodingContainer {
    /// A missing key decodes as nil, as it would for a plain optional.
    public func decode<Wrapped: Decodable>(_ type: NullEncoded<Wrapped>.Type, forKey key: Key) throws -> NullEncoded<Wrapped> {
        NullEncoded(wrappedValue: try decodeIfPresent(Wrapped.self, forKey: key))
    }
}
