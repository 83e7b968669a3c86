/// Why an `NSKeyedArchiver` archive could not be read; every case but the first names the path
/// to the value that was wrong (`$top.root.NSEntities["Event"].NSProperties["date"]._P`).
public enum KeyedArchiveError: OperatorFacingError, Equatable, Sendable {
    /// The property list is not an `NSKeyedArchiver` archive.
    case notAKeyedArchive(reason: String)
    /// A UID points past the end of `$objects`.
    case invalidReference(uid: UInt64, objectCount: Int, path: String)
    /// A required value is absent or `$null`.
    case missingValue(path: String)
    /// A value has the wrong type, class or shape.
    case unexpectedValue(path: String, expected: String, found: String)

    public var description: String {
        switch self {
        case .notAKeyedArchive(let reason):
            return "not a keyed archive: \(reason)"
        case .invalidReference(let uid, let objectCount, let path):
            return "damaged keyed archive: \(path) refers to object \(uid), but there are only \(objectCount) objects"
        case .missingValue(let path):
            return "damaged keyed archive: \(path) is missing"
        case .unexpectedValue(let path, let expected, let found):
            return "damaged keyed archive: \(path) should be \(expected) but is \(found)"
        }
    }

    public var recoverySuggestion: String? {
        "The archive is damaged or was not written by Core Data. Take the model from another source "
            + "(the app's compiled .momd or its .xcdatamodeld) and compare."
    }

    public var exitStatus: ExitStatus { .notAStore }
}
