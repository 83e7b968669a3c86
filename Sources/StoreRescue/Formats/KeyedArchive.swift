/// An `NSKeyedArchiver` property list (`$archiver`, `$objects`, `$top`), read without Foundation's
/// unarchiver: no class is instantiated, every reference is checked, and every value is reached
/// through a `KeyedArchiveNode` that knows its path for error messages.
///
/// Navigation follows only the links the caller asks for, one at a time, so reference cycles in
/// the archive (an entity pointing to its model pointing to the entity) never cause loops.
///
/// ```swift
/// let archive = try KeyedArchive(try BinaryPropertyListDecoder.decode(momBytes))
/// let root = try archive.rootObject()                       // path "$top.root"
/// for (name, entity) in try root.requiredChild("NSEntities").entries() { … }
/// ```
public struct KeyedArchive: Sendable {
    /// `$objects`: every archived object; index 0 is the `$null` placeholder.
    public let objects: [PropertyListValue]
    /// `$top`: the named top-level references (`root` for a model).
    public let top: [String: PropertyListValue]

    /// Checks the archive's outer shape.
    ///
    /// - Throws: `KeyedArchiveError.notAKeyedArchive` when `$archiver` is not `NSKeyedArchiver`
    ///   or `$objects`/`$top` are missing or of the wrong type.
    public init(_ propertyList: PropertyListValue) throws {
        guard case .dictionary(let outer) = propertyList else {
            throw KeyedArchiveError.notAKeyedArchive(reason: "the property list is \(propertyList.kindDescription), not a dictionary")
        }
        guard let archiver = outer["$archiver"] else {
            throw KeyedArchiveError.notAKeyedArchive(reason: "it has no $archiver key")
        }
        guard archiver.string == "NSKeyedArchiver" else {
            throw KeyedArchiveError.notAKeyedArchive(reason: "$archiver is \(archiver.string.map { "\"\($0)\"" } ?? archiver.kindDescription), not \"NSKeyedArchiver\"")
        }
        guard case .array(let objects) = outer["$objects"], !objects.isEmpty else {
            throw KeyedArchiveError.notAKeyedArchive(reason: "$objects is missing, empty or not an array")
        }
        guard case .dictionary(let top) = outer["$top"] else {
            throw KeyedArchiveError.notAKeyedArchive(reason: "$top is missing or not a dictionary")
        }
        self.objects = objects
        self.top = top
    }

    /// The object `$top[key]` refers to.
    ///
    /// - Throws: `KeyedArchiveError` when the key is missing, `$null` or a bad reference.
    public func rootObject(_ key: String = "root") throws -> KeyedArchiveNode {
        let path = "$top.\(key)"
        guard let value = top[key], let node = try node(for: value, path: path) else {
            throw KeyedArchiveError.missingValue(path: path)
        }
        return node
    }

    /// Resolves `value` (a UID or an inline value) to a node; nil for `$null` (UID 0).
    ///
    /// - Throws: `KeyedArchiveError.invalidReference` for a UID past the end of `$objects`,
    ///   `.unexpectedValue` for a UID that leads to another UID.
    public func node(for value: PropertyListValue, path: String) throws -> KeyedArchiveNode? {
        guard case .uid(let uid) = value else { return KeyedArchiveNode(archive: self, value: value, path: path, objectIndex: nil) }
        guard uid != 0 else { return nil }
        guard uid < UInt64(objects.count) else {
            throw KeyedArchiveError.invalidReference(uid: uid, objectCount: objects.count, path: path)
        }
        let index = Int(uid)
        let resolved = objects[index]
        if case .uid = resolved {
            throw KeyedArchiveError.unexpectedValue(path: path, expected: "an archived object", found: "a UID stored in $objects[\(index)]")
        }
        return KeyedArchiveNode(archive: self, value: resolved, path: path, objectIndex: index)
    }
}
