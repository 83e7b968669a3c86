/// Why a compiled model (`.mom`) or a store's model cache (`Z_MODELCACHE`) could not be read as a
/// `ManagedObjectModel`.
public enum ModelDecodingError: OperatorFacingError, Equatable, Sendable {
    /// The model cache could not be inflated (damaged, truncated, or larger than allowed).
    case unreadableModelCache(CompressionError)
    /// The bytes are not a readable property list.
    case unreadablePropertyList(PropertyListError)
    /// The property list is not a well-formed keyed archive; the error names the path.
    case malformedArchive(KeyedArchiveError)
    /// The archive's root object is not an `NSManagedObjectModel`.
    case notAModel(className: String)
    /// An attribute has a type code Core Data does not define.
    case unknownAttributeType(code: Int64, path: String)
    /// A value is present and well-formed but makes no sense for a model.
    case invalidModel(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadableModelCache(let underlying):
            return "cannot inflate the model cache: \(underlying)"
        case .unreadablePropertyList(let underlying):
            return "cannot read the model archive: \(underlying)"
        case .malformedArchive(let underlying):
            return "cannot read the model archive: \(underlying)"
        case .notAModel(let className):
            return "the archive holds an object of class \(className), not a managed object model (NSManagedObjectModel)"
        case .unknownAttributeType(let code, let path):
            return "unknown attribute type code \(code) at \(path)"
        case .invalidModel(let path, let reason):
            return "invalid model at \(path): \(reason)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .unreadableModelCache(let underlying): return underlying.recoverySuggestion
        case .unreadablePropertyList(let underlying): return underlying.recoverySuggestion
        case .malformedArchive(let underlying): return underlying.recoverySuggestion
        case .notAModel:
            return "Pass a compiled model (.mom inside a .momd folder) or a store with a Z_MODELCACHE table."
        case .unknownAttributeType:
            return "The model may come from a newer framework than this tool knows; please report the code. "
                + "Meanwhile take the model from the app's .xcdatamodeld."
        case .invalidModel:
            return "The archive is damaged or was edited. Take the model from the app's compiled .momd or its .xcdatamodeld and compare."
        }
    }

    public var exitStatus: ExitStatus { .notAStore }
}
