/// Why a version could not be learned from a reference store's own model cache.
public enum StoreModelError: OperatorFacingError, Equatable, Sendable {
    /// The store is readable SQLite but not a Core Data store.
    case notACoreDataStore(path: String)
    /// The store has no usable `Z_MODELCACHE` (absent before framework ~600, NULL, or empty).
    case noModelCache(path: String, reason: String)
    /// The model cache is larger than this tool reads.
    case modelCacheTooLarge(path: String, size: Int64, limit: Int64)
    /// The model cache is present but cannot be decoded.
    case undecodableModelCache(path: String, underlying: ModelDecodingError)
    /// The metadata's stored hashes disagree with the store's own model cache.
    case hashesDisagree(path: String, entities: [String])

    public var description: String {
        switch self {
        case .notACoreDataStore(let path):
            return "\(path): not a Core Data store (no Z_METADATA or Z_PRIMARYKEY table)"
        case .noModelCache(let path, let reason):
            return "\(path): \(reason), so the model that wrote it cannot be learned from it"
        case .modelCacheTooLarge(let path, let size, let limit):
            return "\(path): Z_MODELCACHE is \(size) bytes, over the \(limit)-byte limit"
        case .undecodableModelCache(let path, let underlying):
            return "\(path): Z_MODELCACHE cannot be decoded: \(underlying)"
        case .hashesDisagree(let path, let entities):
            return "\(path): the stored version hashes disagree with the store's own model cache for \(entities.prefix(20).joined(separator: ", "))\(entities.count > 20 ? " and \(entities.count - 20) more" : ""): the metadata was edited or stamped for another version"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .notACoreDataStore:
            return "pass a store written by the app (e.g. default.store, Model.sqlite)"
        case .noModelCache:
            return "learn this version from a model file instead (the app's .xcdatamodeld or .momd), or match stores on this store's stored hashes only"
        case .modelCacheTooLarge, .undecodableModelCache:
            return "learn this version from the app's .xcdatamodeld or .momd instead"
        case .hashesDisagree:
            return "use a reference store the app wrote itself and nobody restamped, or the app's model files"
        }
    }

    public var exitStatus: ExitStatus { .notAStore }
}
