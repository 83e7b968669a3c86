/// Why bytes could not be read as a property list.
///
/// Object numbers are indexes into the binary property list's offset table; offsets are byte
/// offsets from the start of the input. Both are there so a damaged blob can be examined with a
/// hex editor.
public enum PropertyListError: OperatorFacingError, Equatable, Sendable {
    /// The input is larger than `PropertyListLimits.maximumInputBytes`.
    case inputTooLarge(byteCount: Int, limit: Int)
    /// The input is empty, or starts with neither `bplist` nor an XML property list header.
    case notAPropertyList(reason: String)
    /// A binary property list of a version other than `bplist00`.
    case unsupportedVersion(header: String)
    /// The 32-byte trailer describes a layout that does not fit the input.
    case invalidTrailer(reason: String)
    /// The trailer declares more objects than `PropertyListLimits.maximumObjectCount`.
    case tooManyObjects(declared: UInt64, limit: Int)
    /// An offset-table entry points outside the object area.
    case invalidOffset(object: Int, offset: UInt64)
    /// An object reference names an object the offset table does not have.
    case objectReferenceOutOfRange(reference: UInt64, objectCount: Int, object: Int)
    /// An object's bytes run past the end of the object area.
    case truncatedObject(object: Int, offset: Int)
    /// An object is malformed: unknown marker, bad size, bad length, invalid string bytes.
    case invalidObject(object: Int, offset: Int, reason: String)
    /// An integer does not fit a signed 64-bit integer (only 128-bit integers can do that).
    case integerOutOfRange(object: Int, offset: Int)
    /// A dictionary key is not a string.
    case nonStringKey(dictionary: Int, keyObject: Int)
    /// A dictionary has the same key twice.
    case duplicateKey(key: String, dictionary: Int)
    /// A container contains itself, directly or through other containers.
    case cyclicReference(object: Int)
    /// Containers are nested deeper than `PropertyListLimits.maximumDepth`.
    case depthLimitExceeded(limit: Int)
    /// Decoding would produce more values than `PropertyListLimits.maximumObjectCount` (shared
    /// objects count once per reference, so a small file cannot expand into a huge value).
    case valueLimitExceeded(limit: Int)
    /// Decoding would produce more bytes of data and string payload than
    /// `PropertyListLimits.maximumDecodedBytes` (a shared object counts once per reference, so
    /// one large blob referenced a thousand times cannot take a thousand copies' memory).
    case byteLimitExceeded(limit: Int)
    /// An XML property list that Foundation could not read.
    case unreadableXML(reason: String)

    public var description: String {
        switch self {
        case .inputTooLarge(let byteCount, let limit):
            return "property list is \(byteCount) bytes, over the limit of \(limit) bytes"
        case .notAPropertyList(let reason):
            return "not a property list: \(reason)"
        case .unsupportedVersion(let header):
            return "unsupported binary property list version \"\(header)\" (only bplist00 is read)"
        case .invalidTrailer(let reason):
            return "damaged binary property list: invalid trailer: \(reason)"
        case .tooManyObjects(let declared, let limit):
            return "binary property list declares \(declared) objects, over the limit of \(limit)"
        case .invalidOffset(let object, let offset):
            return "damaged binary property list: object \(object) has offset \(offset), outside the object area"
        case .objectReferenceOutOfRange(let reference, let objectCount, let object):
            return "damaged binary property list: object \(object) refers to object \(reference), "
                + "but there are only \(objectCount) objects"
        case .truncatedObject(let object, let offset):
            return "damaged binary property list: object \(object) at offset \(offset) runs past the end of the object area"
        case .invalidObject(let object, let offset, let reason):
            return "damaged binary property list: object \(object) at offset \(offset): \(reason)"
        case .integerOutOfRange(let object, let offset):
            return "binary property list: the integer in object \(object) at offset \(offset) does not fit in 64 bits"
        case .nonStringKey(let dictionary, let keyObject):
            return "damaged binary property list: dictionary \(dictionary) has a key (object \(keyObject)) that is not a string"
        case .duplicateKey(let key, let dictionary):
            return "damaged binary property list: dictionary \(dictionary) has the key \"\(key)\" twice"
        case .cyclicReference(let object):
            return "damaged binary property list: object \(object) contains itself (reference cycle)"
        case .depthLimitExceeded(let limit):
            return "property list nests containers deeper than the limit of \(limit)"
        case .valueLimitExceeded(let limit):
            return "property list expands to more than the limit of \(limit) values"
        case .byteLimitExceeded(let limit):
            return "property list expands to more than the limit of \(limit) bytes of data and text"
        case .unreadableXML(let reason):
            return "unreadable XML property list: \(reason)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .inputTooLarge, .tooManyObjects, .depthLimitExceeded, .valueLimitExceeded, .byteLimitExceeded:
            return "A store's metadata and model are far smaller than this; the blob is probably damaged or hostile. "
                + "Check the store with `sqlite3 STORE 'PRAGMA integrity_check'` and use a backup if it fails."
        default:
            return "The blob is damaged or was not written by Core Data. Check the store with "
                + "`sqlite3 STORE 'PRAGMA integrity_check'` and restore it from a backup if that fails."
        }
    }

    public var exitStatus: ExitStatus { .notAStore }
}
