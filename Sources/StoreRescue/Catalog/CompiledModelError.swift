import Foundation

/// Why a compiled model (`.momd` folder or `.mom` file) could not be read into a catalog.
public enum CompiledModelError: OperatorFacingError, Equatable, Sendable {
    /// The path is missing, or is not what was expected (a folder for `.momd`, a file for `.mom`).
    case notACompiledModel(path: String, reason: String)
    /// A file of the compiled model is missing, unreadable or too large.
    case unreadableFile(path: String, reason: String)
    /// No file descriptor was left to open a file of the compiled model (`EMFILE`, `ENFILE`):
    /// the limit's fault, not the model's (it read as unreadable, exit 65, "copy the whole
    /// .momd folder out of the app bundle again").
    case tooManyOpenFiles(path: String)
    /// `VersionInfo.plist` is not a property list of the expected shape.
    case malformedVersionInfo(path: String, reason: String)
    /// `VersionInfo.plist` lists a version whose `.mom` file is absent.
    case missingVersionFile(path: String, version: String)
    /// A `.mom` file is not a readable model archive.
    case undecodableModel(path: String, underlying: ModelDecodingError)
    /// The hashes computed from a version's `.mom` differ from those `VersionInfo.plist` lists.
    case versionHashMismatch(path: String, version: String, entity: String, reason: String)
    /// `NSManagedObjectModel_CurrentVersionName` names a version the folder does not list.
    case unknownCurrentVersion(path: String, name: String, versions: [String])

    public var description: String {
        switch self {
        case .notACompiledModel(let path, let reason): return "\(path): \(reason)"
        case .unreadableFile(let path, let reason): return "\(path): \(reason)"
        case .tooManyOpenFiles(let path): return "\(path): cannot be opened, no file descriptor left: \(String(cString: strerror(EMFILE)))"
        case .malformedVersionInfo(let path, let reason): return "\(path): not a usable VersionInfo.plist: \(reason)"
        case .missingVersionFile(let path, let version):
            return "\(path): VersionInfo.plist lists version \"\(version)\" but \(version).mom is not in the folder"
        case .undecodableModel(let path, let underlying): return "\(path): \(underlying)"
        case .versionHashMismatch(let path, let version, let entity, let reason):
            return "\(path): version \"\(version)\" entity \"\(entity)\": \(reason)"
        case .unknownCurrentVersion(let path, let name, let versions):
            return "\(path): NSManagedObjectModel_CurrentVersionName is \"\(name)\", but the versions are \(versions.map { "\"\($0)\"" }.joined(separator: ", "))"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .notACompiledModel:
            return "pass a .momd folder from the app bundle (Contents/Resources or the .app folder) or one .mom file in it"
        case .unreadableFile, .missingVersionFile:
            return "copy the whole .momd folder out of the app bundle again"
        case .tooManyOpenFiles:
            return StoreCreationError.openFilesHint
        case .malformedVersionInfo, .undecodableModel:
            return "the compiled model is damaged; take the model from the app's .xcdatamodeld instead"
        case .versionHashMismatch:
            return "the .mom and VersionInfo.plist come from different builds; copy the .momd from one app bundle, or use the .xcdatamodeld"
        case .unknownCurrentVersion:
            return "copy the whole .momd folder out of the app bundle again"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .notACompiledModel, .missingVersionFile: return .noInput
        case .tooManyOpenFiles: return .ioError
        default: return .notAStore
        }
    }
}
