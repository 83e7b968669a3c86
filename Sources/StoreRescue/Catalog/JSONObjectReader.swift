/// Reads one JSON object of a catalog file: refuses keys it does not know (a misspelt key is a
/// mistake, not something to ignore) and reports every problem with the file and JSON path.
struct JSONObjectReader {
    let members: [JSONMember]
    /// The JSON path of this object (`versions[2].entities[0]`; empty for the document).
    let path: String
    let file: String
    /// Each key's first member, for a large object only: lookups stay constant-time in an object
    /// of 100,000 keys (a custom stage's `map`), where a scan per key made reading it quadratic.
    /// The usual object has a handful of keys, where a scan is cheaper than building a table
    /// (`match` loads thousands of them: hashing every one cost it a third of its time).
    private let firstIndex: [String: Int]?
    /// Objects up to this many members are scanned instead of indexed.
    static let scanLimit = 16

    init(_ value: JSONValue, path: String, file: String, allowedKeys: [String]) throws {
        self.path = path
        self.file = file
        guard case .object(let members) = value else {
            throw CatalogFileError.invalidValue(path: file, jsonPath: path, reason: "expected an object, found \(value.kindDescription)")
        }
        self.members = members
        if members.count > Self.scanLimit {
            var firstIndex: [String: Int] = [:]
            for (index, member) in members.enumerated() where firstIndex[member.key] == nil { firstIndex[member.key] = index }
            self.firstIndex = firstIndex
        } else {
            firstIndex = nil
        }
        let allowed: (String) -> Bool
        if members.count > Self.scanLimit && allowedKeys.count > Self.scanLimit {
            let set = Set(allowedKeys)
            allowed = { set.contains($0) }
        } else {
            allowed = { allowedKeys.contains($0) }
        }
        for member in members where !allowed(member.key) {
            var reason = "unknown key"
            if let suggestion = Self.closest(to: member.key, in: allowedKeys) { reason += " (did you mean \"\(suggestion)\"?)" }
            reason += "; allowed here: " + allowedKeys.joined(separator: ", ")
            throw CatalogFileError.invalidValue(path: file, jsonPath: childPath(member.key), reason: reason)
        }
    }

    func childPath(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private func index(of key: String) -> Int? {
        if let firstIndex { return firstIndex[key] }
        return members.firstIndex { $0.key == key }
    }

    func has(_ key: String) -> Bool { index(of: key) != nil }

    /// The value under `key`; a JSON `null` counts as absent.
    func value(_ key: String) -> JSONValue? {
        guard let index = index(of: key), case let value = members[index].value, value != .null else { return nil }
        return value
    }

    func invalid(_ key: String, _ reason: String) -> CatalogFileError {
        .invalidValue(path: file, jsonPath: childPath(key), reason: reason)
    }

    func string(_ key: String) throws -> String {
        guard let text = try optionalString(key) else { throw invalid(key, "required, and missing") }
        return text
    }

    /// A non-empty string, or nil when the key is absent or null.
    func optionalString(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw invalid(key, "expected a string, found \(value.kindDescription)") }
        guard !text.isEmpty else { throw invalid(key, "must not be empty (leave the key out instead)") }
        return text
    }

    /// A string that may be empty (a default value, a version identifier).
    func optionalStringAllowingEmpty(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw invalid(key, "expected a string, found \(value.kindDescription)") }
        return text
    }

    func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let value = value(key) else { return defaultValue }
        guard case .bool(let flag) = value else { throw invalid(key, "expected true or false, found \(value.kindDescription)") }
        return flag
    }

    /// A whole number from 0 to `UInt32.max` (how Core Data stores relationship counts).
    func count(_ key: String) throws -> Int? {
        guard let value = value(key) else { return nil }
        guard case .number(let literal) = value, let number = UInt32(literal) else {
            throw invalid(key, "expected a whole number from 0 to \(UInt32.max), found \(value == .null ? "null" : JSONWriter.compactForm(value))")
        }
        return Int(number)
    }

    /// The elements of an array, each with its JSON path; nil when absent.
    func array(_ key: String) throws -> [(value: JSONValue, path: String)]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else { throw invalid(key, "expected an array, found \(value.kindDescription)") }
        let prefix = childPath(key) + "["
        return elements.enumerated().map { ($0.element, prefix + String($0.offset) + "]") }
    }

    /// An array of strings (empty strings allowed), nil when absent.
    func stringArray(_ key: String) throws -> [String]? {
        try array(key)?.map { element in
            guard case .string(let text) = element.value else {
                throw CatalogFileError.invalidValue(path: file, jsonPath: element.path, reason: "expected a string, found \(element.value.kindDescription)")
            }
            return text
        }
    }

    /// The allowed key closest to a misspelt one, when it is close (edit distance ≤ 2).
    static func closest(to key: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(key.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2 else { return nil }
        return best.0
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
