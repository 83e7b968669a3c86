import Foundation

/// Why a file given as a model is not one.
public enum ModelFileError: OperatorFacingError, Equatable, Sendable {
    /// Neither a model archive nor an SQLite store.
    case notAModel(path: String)
    /// A store without a usable model cache.
    case noModelCache(path: String, reason: String)
    /// A compiled model folder (`.momd`) or other folder: one version must be chosen.
    case modelFolder(path: String, versions: [String])
    case tooLarge(path: String, bytes: Int64, limit: Int64)

    public var description: String {
        switch self {
        case .notAModel(let path):
            return "\(path) is neither a compiled model (.mom) nor an SQLite store"
        case .noModelCache(let path, let reason):
            return "\(path) holds no model: \(reason)"
        case .modelFolder(let path, _):
            return "\(path) is a folder, not a model file"
        case .tooLarge(let path, let bytes, let limit):
            return "\(path): the model is \(bytes) bytes, over the \(limit)-byte limit"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .notAModel:
            return "pass a .mom from the app's compiled .momd folder, or a store written by the app"
        case .noModelCache:
            return "stores written before iOS 9 / macOS 10.11 keep no model; pass the app's compiled .mom instead"
        case .modelFolder(let path, let versions):
            if versions.isEmpty { return "pass a .mom file" }
            return "pass one version, e.g. \((path as NSString).appendingPathComponent(versions[0])) (versions here: \(versions.joined(separator: ", ")))"
        case .tooLarge:
            return "check that this is a model file; real models are well under a megabyte"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .modelFolder: return .noInput
        case .notAModel, .noModelCache, .tooLarge: return .notAStore
        }
    }
}
