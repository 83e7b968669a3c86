import Foundation

/// One value of a `KeyedArchive`, already resolved from its UID, with the path that led to it.
///
/// Accessors check the value's shape and throw `KeyedArchiveError` naming `path` when it is not
/// what was asked for. Collections (`elements()`, `entries()`) understand the shapes Foundation
/// archives: `NS.objects` for arrays and sets, `NS.keys`/`NS.objects` for dictionaries, and
/// `searchMapping.keys`/`values` for `NSKnownKeysDictionary1`.
public struct KeyedArchiveNode: Sendable {
    public let archive: KeyedArchive
    /// The resolved value: an object's field dictionary, or an inline string, number, …
    public let value: PropertyListValue
    /// Where this value was found, for error messages.
    public let path: String
    /// The index in `$objects`, when the value was reached through a UID.
    public let objectIndex: Int?

    private func unexpected(_ expected: String) -> KeyedArchiveError {
        .unexpectedValue(path: path, expected: expected, found: foundDescription)
    }

    /// "an object of class NSArray", "a string", … for error messages.
    public var foundDescription: String {
        // Must not call anything that builds an error from foundDescription again.
        guard case .dictionary(let fields) = value, let classReference = fields["$class"] else { return value.kindDescription }
        guard case .uid(let uid) = classReference, uid < UInt64(archive.objects.count),
            case .string(let name) = archive.objects[Int(uid)]["$classname"]
        else { return "an object with a damaged class" }
        return "an object of class \(name)"
    }

    // MARK: Objects and classes

    /// The fields of an archived object (`$class` included).
    public func fields() throws -> [String: PropertyListValue] {
        guard case .dictionary(let fields) = value, fields["$class"] != nil else { throw unexpected("an archived object") }
        return fields
    }

    /// The class chain of this object, most specific first (`$classes`, or just `$classname`).
    public func classNames() throws -> [String] {
        let classPath = path + ".$class"
        guard let classNode = try archive.node(for: try fields()["$class"] ?? .uid(0), path: classPath),
            case .dictionary(let description) = classNode.value, case .string(let name) = description["$classname"]
        else {
            throw KeyedArchiveError.unexpectedValue(path: classPath, expected: "a class description with $classname", found: "something else")
        }
        let chain = description["$classes"]?.array?.compactMap(\.string) ?? []
        return chain.first == name ? chain : [name] + chain
    }

    /// The object's class name (`$classname`).
    public func className() throws -> String {
        guard let name = try classNames().first else { throw unexpected("an archived object") }
        return name
    }

    /// True when the object's class is `name` or inherits from it.
    public func isKind(of name: String) throws -> Bool {
        guard case .dictionary(let fields) = value, fields["$class"] != nil else { return false }
        return try classNames().contains(name)
    }

    /// The value of the object's field `key`, resolved; nil when absent or `$null`.
    public func child(_ key: String) throws -> KeyedArchiveNode? {
        guard let raw = try fields()[key] else { return nil }
        return try archive.node(for: raw, path: "\(path).\(key)")
    }

    /// The value of the object's field `key`, resolved.
    ///
    /// - Throws: `KeyedArchiveError.missingValue` when it is absent or `$null`.
    public func requiredChild(_ key: String) throws -> KeyedArchiveNode {
        guard let node = try child(key) else { throw KeyedArchiveError.missingValue(path: "\(path).\(key)") }
        return node
    }

    // MARK: Scalars

    /// The string: an inline string, or an `NSString`/`NSMutableString` object (`NS.string`, or
    /// UTF-8 `NS.bytes`).
    public func string() throws -> String {
        if case .string(let string) = value { return string }
        guard try isKind(of: "NSString") else { throw unexpected("a string") }
        if let inner = try child("NS.string"), case .string(let string) = inner.value { return string }
        if let bytes = try child("NS.bytes")?.value.data, let string = String(data: bytes, encoding: .utf8) { return string }
        throw unexpected("a string")
    }

    /// The integer (archived numbers are inline).
    public func integer() throws -> Int64 {
        guard case .integer(let number) = value else { throw unexpected("an integer") }
        return number
    }

    /// The flag: an inline boolean, or the integers 0 and 1.
    public func bool() throws -> Bool {
        switch value {
        case .boolean(let flag): return flag
        case .integer(0): return false
        case .integer(1): return true
        default: throw unexpected("a boolean")
        }
    }

    // MARK: Collections

    /// The elements of an `NSArray`, `NSSet`, `NSOrderedSet` (or mutable subclass), or of an
    /// inline array, in archive order.
    public func elements() throws -> [KeyedArchiveNode] {
        let raw: [PropertyListValue]
        if case .array(let inline) = value {
            raw = inline
        } else {
            let classes = try classNames()
            guard classes.contains(where: { ["NSArray", "NSSet", "NSOrderedSet"].contains($0) }) else {
                throw unexpected("an array or set")
            }
            guard case .array(let objects) = try fields()["NS.objects"] else {
                throw KeyedArchiveError.unexpectedValue(path: path + ".NS.objects", expected: "an array", found: "something else")
            }
            raw = objects
        }
        return try raw.enumerated().map { index, element in
            let itemPath = "\(path)[\(index)]"
            guard let node = try archive.node(for: element, path: itemPath) else { throw KeyedArchiveError.missingValue(path: itemPath) }
            return node
        }
    }

    /// The entries of an `NSDictionary` (or subclass) or `NSKnownKeysDictionary1`, in archive
    /// order. Keys must be strings and distinct.
    public func entries() throws -> [(key: String, value: KeyedArchiveNode)] {
        let classes = try classNames()
        let keyNodes: [KeyedArchiveNode]
        let valueValues: [PropertyListValue]
        if classes.contains("NSKnownKeysDictionary1") {
            keyNodes = try requiredChild("searchMapping").requiredChild("keys").elements()
            let values = try requiredChild("values")
            valueValues = try values.elements().map(\.rawReference)
        } else if classes.contains("NSDictionary") {
            guard case .array(let keys) = try fields()["NS.keys"], case .array(let values) = try fields()["NS.objects"] else {
                throw unexpected("a dictionary with NS.keys and NS.objects arrays")
            }
            keyNodes = try keys.enumerated().map { index, key in
                let keyPath = "\(path).NS.keys[\(index)]"
                guard let node = try archive.node(for: key, path: keyPath) else { throw KeyedArchiveError.missingValue(path: keyPath) }
                return node
            }
            valueValues = values
        } else {
            throw unexpected("a dictionary")
        }
        guard keyNodes.count == valueValues.count else {
            throw KeyedArchiveError.unexpectedValue(
                path: path, expected: "as many keys as values", found: "\(keyNodes.count) keys and \(valueValues.count) values")
        }
        var seen: Set<String> = []
        var result: [(key: String, value: KeyedArchiveNode)] = []
        for (keyNode, raw) in zip(keyNodes, valueValues) {
            let key = try keyNode.string()
            guard seen.insert(key).inserted else {
                throw KeyedArchiveError.unexpectedValue(path: path, expected: "distinct keys", found: "the key \"\(key)\" twice")
            }
            let entryPath = "\(path)[\"\(key)\"]"
            guard let node = try archive.node(for: raw, path: entryPath) else { throw KeyedArchiveError.missingValue(path: entryPath) }
            result.append((key, node))
        }
        return result
    }

    /// The UID (or inline value) this node was resolved from, to resolve again under a new path.
    var rawReference: PropertyListValue {
        objectIndex.map { .uid(UInt64($0)) } ?? value
    }
}
