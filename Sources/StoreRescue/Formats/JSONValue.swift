/// A JSON document as written: objects keep their members in file order and numbers keep their
/// literal text, so a catalog file can be read, extended and written back without reordering or
/// reformatting what a person wrote (beyond indentation).
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's literal text, already checked against the JSON grammar.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// A short name for the kind of value, for error messages ("a string", "an array").
    var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The value of the first member named `key`, when this is an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }
}

/// One `"key": value` member of a JSON object.
struct JSONMember: Sendable, Equatable {
    var key: String
    var value: JSONValue

    init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}
