import Foundation

/// Finds optional properties a report leaves out of its JSON when they are nil. The contract
/// (`Docs/JSON-OUTPUT.md`) writes an absent value as `null`, never a missing key, and synthesized
/// `Codable` skips a nil optional unless it is `@NullEncoded`: this walks a value and its JSON
/// side by side (`Mirror`), at every depth, and names each nil property whose key is not there.
enum NullContract {
    /// Paths (`.planIssues[0].stage`) of nil properties missing from `value`'s JSON, except those
    /// whose path ends with one of `documentedAbsent` (keys the contract documents as present only
    /// in some runs, such as `inspect`'s `rowCount` "with `--counts`").
    static func missingNulls(in value: some Encodable, documentedAbsent: Set<String> = []) throws -> [String] {
        let data = try JSONEncoder().encode(value)
        let json = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        var missing: [String] = []
        walk(value, json, path: "", into: &missing)
        return missing.filter { path in !documentedAbsent.contains { path.hasSuffix($0) } }
    }

    private static func walk(_ value: Any, _ json: Any, path: String, into missing: inout [String]) {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            if let wrapped = mirror.children.first { walk(wrapped.value, json, path: path, into: &missing) }
        case .collection, .set:
            guard let array = json as? [Any] else { return }
            for (index, (child, element)) in zip(mirror.children, array).enumerated() {
                walk(child.value, element, path: "\(path)[\(index)]", into: &missing)
            }
        case .dictionary:
            guard let object = json as? [String: Any] else { return }
            for child in mirror.children {
                let pair = Array(Mirror(reflecting: child.value).children)
                guard pair.count == 2, let key = pair[0].value as? String, let element = object[key] else { continue }
                walk(pair[1].value, element, path: "\(path)[\(key)]", into: &missing)
            }
        case .struct, .class:
            // A value encoded as one string or number (an enum, a date) has no keys to check.
            guard let object = json as? [String: Any] else { return }
            for child in mirror.children {
                guard var label = child.label else { continue }
                var property = child.value
                if label.hasPrefix("_") {
                    // A property wrapper's storage (`@NullEncoded`): its wrapped value.
                    label.removeFirst()
                    if let wrapped = Mirror(reflecting: property).children.first(where: { $0.label == "wrappedValue" }) {
                        property = wrapped.value
                    }
                }
                guard let encoded = object[label] else {
                    if isNil(property) { missing.append("\(path).\(label)") }
                    continue
                }
                walk(property, encoded, path: "\(path).\(label)", into: &missing)
            }
        default:
            return
        }
    }

    private static func isNil(_ value: Any) -> Bool {
        let mirror = Mirror(reflecting: value)
        return mirror.displayStyle == .optional && mirror.children.isEmpty
    }
}
