import Foundation

/// Why a catalog file (JSON) could not be read, resolved or written. Content problems name the
/// file and the JSON path of the value at fault: `catalog.json: versions[2].entities[0].attributes[3].type: …`.
public enum CatalogFileError: OperatorFacingError, Equatable, Sendable {
    /// The file is missing, not a regular file, unreadable or too large.
    case unreadable(path: String, reason: String, status: ExitStatus)
    /// No file descriptor was left to open the file (`EMFILE`, `ENFILE`): the limit's fault, not
    /// the catalog's (it read as unreadable with "check the path of the catalog file").
    case tooManyOpenFiles(path: String)
    /// The file is not well-formed JSON.
    case malformedJSON(path: String, line: Int, column: Int, reason: String)
    /// A value is missing, of the wrong type, unknown, or makes no sense.
    case invalidValue(path: String, jsonPath: String, reason: String)
    /// `formatVersion` is newer than this tool understands.
    case unsupportedFormatVersion(path: String, found: String)
    /// Two versions have the same name.
    case duplicateVersionName(path: String, jsonPath: String, name: String, firstJSONPath: String)
    /// `current` or a stage names a version the catalog does not have.
    case unknownVersion(path: String, jsonPath: String, name: String, known: [String])
    /// A model source a version refers to (a model folder, a compiled model, a store) failed.
    case sourceFailed(path: String, jsonPath: String, message: String, hint: String?, status: ExitStatus)
    /// A version's declared `versionChecksum` differs from the one its model gives.
    case checksumMismatch(path: String, jsonPath: String, version: String, declared: String, computed: String)
    /// `learn` was asked to add a version under a name the catalog already has.
    case versionNameTaken(path: String, name: String)
    /// `learn` was given an app name that differs from the catalog's.
    case appMismatch(path: String, inFile: String, given: String)
    /// `learn` must create the catalog but was not told the app's name.
    case appNameRequired(path: String)
    /// The catalog could not be written.
    case cannotWrite(path: String, reason: String, status: ExitStatus)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason, _): return "\(path): \(reason)"
        case .tooManyOpenFiles(let path): return "\(path): cannot be opened, no file descriptor left: \(String(cString: strerror(EMFILE)))"
        case .malformedJSON(let path, let line, let column, let reason):
            return "\(path):\(line):\(column): malformed JSON: \(reason)"
        case .invalidValue(let path, let jsonPath, let reason):
            return jsonPath.isEmpty ? "\(path): \(reason)" : "\(path): \(jsonPath): \(reason)"
        case .unsupportedFormatVersion(let path, let found):
            return "\(path): formatVersion: \(found) is newer than this storerescue understands (1)"
        case .duplicateVersionName(let path, let jsonPath, let name, let first):
            return "\(path): \(jsonPath): a second version named \"\(name)\" (the first is \(first))"
        case .unknownVersion(let path, let jsonPath, let name, let known):
            let list = known.isEmpty ? "the catalog has no version" : "the versions are " + known.map { "\"\($0)\"" }.joined(separator: ", ")
            return "\(path): \(jsonPath): no version is named \"\(name)\"; \(list)"
        case .sourceFailed(let path, let jsonPath, let message, _, _):
            return "\(path): \(jsonPath): \(message)"
        case .checksumMismatch(let path, let jsonPath, let version, let declared, let computed):
            return "\(path): \(jsonPath): version \"\(version)\" declares checksum \(declared) but its model gives \(computed)"
        case .versionNameTaken(let path, let name):
            return "\(path): the catalog already has a version named \"\(name)\"; it is not replaced"
        case .appMismatch(let path, let inFile, let given):
            return "\(path): the catalog is for the app \"\(inFile)\", not \"\(given)\""
        case .appNameRequired(let path):
            return "\(path): no such catalog, and creating one needs the app's name"
        case .cannotWrite(let path, let reason, _): return "\(path): cannot write the catalog: \(reason)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .unreadable: return "check the path of the catalog file (a .json file, see Docs/CATALOG.md)"
        case .tooManyOpenFiles: return StoreCreationError.openFilesHint
        case .malformedJSON: return "fix the JSON at that line (a missing comma or quote is the usual cause)"
        case .invalidValue: return "fix that value; Docs/CATALOG.md lists every key and its type"
        case .unsupportedFormatVersion: return "use a newer storerescue, or the one that wrote this catalog"
        case .duplicateVersionName: return "give every version a distinct name"
        case .unknownVersion: return "use one of the catalog's version names"
        case .sourceFailed(_, _, _, let hint, _): return hint
        case .checksumMismatch:
            return "the model changed since the checksum was recorded; restore it, or remove versionChecksum if the change is intended"
        case .versionNameTaken: return "choose another --name, or edit the catalog file by hand to replace that version"
        case .appMismatch: return "pass the catalog of the same app, or leave out --app"
        case .appNameRequired: return "add --app NAME to create the catalog, or point --catalog at an existing one"
        case .cannotWrite(_, let reason, let status):
            if status == .temporaryFailure { return "another process changed the catalog while it was being updated; run the command again" }
            // `AtomicFileWriter`'s reasons: a write cut short (`EFBIG` under `ulimit -f`, a full
            // disk: "cannot write: …") or no descriptor left are not the folder's (review rv10:
            // `ulimit -f 10` was told to check that the folder exists).
            if status == .ioError && reason.contains("no file descriptor left") { return StoreCreationError.openFilesHint }
            if status == .ioError { return "free disk space in the catalog's folder or raise the file-size limit (ulimit -f), then run the command again" }
            return "check that the catalog's folder exists and is writable, and that the catalog is not a symbolic link"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .unreadable(_, _, let status), .sourceFailed(_, _, _, _, let status), .cannotWrite(_, _, let status): return status
        case .versionNameTaken: return .cannotCreateOutput
        case .tooManyOpenFiles: return .ioError
        case .appNameRequired, .appMismatch: return .usage
        default: return .notAStore
        }
    }
}
