import Foundation

/// Why an `.xcdatamodeld` folder, an `.xcdatamodel` version or its `contents` file could not be
/// read as a model. Every case names the file (and, for content problems, the line and element)
/// in the form compilers use: `PATH:LINE: entity "Post" attribute "color": …`.
public enum XCDataModelError: OperatorFacingError, Equatable, Sendable {
    /// The path is not a model folder (missing, not a directory, or no versions inside).
    case notAModelFolder(path: String, reason: String)
    /// Two versions of one `.xcdatamodeld` have names Swift considers equal (for instance the
    /// same name in two Unicode normalisation forms).
    case duplicateVersionName(path: String, name: String)
    /// A version folder has no `contents` file.
    case missingContents(path: String)
    /// A file exists but cannot be read, or is too large to be a model.
    case unreadableFile(path: String, reason: String)
    /// No file descriptor was left to open a file or list the folder (`EMFILE`: the process's
    /// limit, `ulimit -n`; `ENFILE`: the system's). The limit's fault, not the model's: it read
    /// as a folder that cannot be listed, exit 65 with "check out the model folder again".
    case tooManyOpenFiles(path: String)
    /// The `contents` file is not well-formed XML.
    case malformedXML(path: String, line: Int, column: Int, reason: String)
    /// The root element is not `<model>`.
    case notAModel(path: String, rootElement: String)
    /// An element lacks a required attribute or has a value that cannot be right.
    case invalidElement(path: String, line: Int, element: String, reason: String)
    /// An attribute's `attributeType` is not a Core Data type.
    case unknownAttributeType(path: String, line: Int, entity: String, attribute: String, typeName: String)
    /// Two entities share a name.
    case duplicateEntity(path: String, line: Int, name: String)
    /// `parentEntity` links form a loop.
    case inheritanceCycle(path: String, line: Int, cycle: [String])
    /// `parentEntity` names an entity the model does not have.
    case unknownParentEntity(path: String, line: Int, entity: String, parent: String)
    /// A relationship's `destinationEntity` names an entity the model does not have.
    case unknownDestinationEntity(path: String, line: Int, entity: String, relationship: String, destination: String)
    /// `.xccurrentversion` cannot be read or has no `_XCCurrentVersionName`.
    case unreadableCurrentVersion(path: String, reason: String)
    /// `.xccurrentversion` names a version the folder does not have.
    case unknownCurrentVersion(path: String, name: String, versions: [String])

    public var description: String {
        switch self {
        case .notAModelFolder(let path, let reason):
            return "\(path): \(reason)"
        case .duplicateVersionName(let path, let name):
            return "\(path): two versions are named \"\(name)\" (the folder names differ only in Unicode normalisation)"
        case .missingContents(let path):
            return "\(path): no such file: every .xcdatamodel version folder must hold its model in a file named contents"
        case .unreadableFile(let path, let reason):
            return "\(path): \(reason)"
        case .tooManyOpenFiles(let path):
            return "\(path): cannot be opened, no file descriptor left: \(String(cString: strerror(EMFILE)))"
        case .malformedXML(let path, let line, let column, let reason):
            return "\(path):\(line):\(column): malformed XML: \(reason)"
        case .notAModel(let path, let root):
            return "\(path): the root element is <\(root)>, not <model>: this is not a Core Data model file"
        case .invalidElement(let path, let line, let element, let reason):
            return "\(path):\(line): \(element): \(reason)"
        case .unknownAttributeType(let path, let line, let entity, let attribute, let typeName):
            return "\(path):\(line): entity \"\(entity)\" attribute \"\(attribute)\": unknown attributeType \"\(typeName)\""
        case .duplicateEntity(let path, let line, let name):
            return "\(path):\(line): entity \"\(name)\": a second entity with this name"
        case .inheritanceCycle(let path, let line, let cycle):
            return "\(path):\(line): entity \"\(cycle.first ?? "")\": inheritance cycle \(cycle.joined(separator: " → "))"
        case .unknownParentEntity(let path, let line, let entity, let parent):
            return "\(path):\(line): entity \"\(entity)\": parentEntity \"\(parent)\" is not an entity of this model"
        case .unknownDestinationEntity(let path, let line, let entity, let relationship, let destination):
            return "\(path):\(line): entity \"\(entity)\" relationship \"\(relationship)\": destinationEntity \"\(destination)\" is not an entity of this model"
        case .unreadableCurrentVersion(let path, let reason):
            return "\(path): cannot read the current version: \(reason)"
        case .unknownCurrentVersion(let path, let name, let versions):
            return "\(path): names \"\(name)\" as the current version, but the versions are \(versions.map { "\"\($0)\"" }.joined(separator: ", "))"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .notAModelFolder:
            return "pass the .xcdatamodeld folder from the app's sources (or one .xcdatamodel inside it)"
        case .duplicateVersionName:
            return "rename one of the version folders so their names differ visibly"
        case .missingContents, .unreadableFile:
            return "check out the model folder again from version control; Xcode writes contents in every version"
        case .tooManyOpenFiles:
            return StoreCreationError.openFilesHint
        case .malformedXML, .notAModel:
            return "open the model in Xcode (which reports the same problem) or restore the file from version control"
        case .unknownAttributeType:
            return "use a Core Data type name: Integer 16, Integer 32, Integer 64, Decimal, Double, Float, String, Boolean, Date, Binary, UUID, URI, Transformable, ObjectID"
        case .invalidElement, .duplicateEntity, .inheritanceCycle, .unknownParentEntity, .unknownDestinationEntity:
            return "fix the model in Xcode (it refuses to compile this model too) or restore the file from version control"
        case .unreadableCurrentVersion, .unknownCurrentVersion:
            return "pick the current version again in Xcode (File inspector → Model Version), or delete .xccurrentversion to use the last version"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .notAModelFolder, .missingContents: return .noInput
        case .tooManyOpenFiles: return .ioError
        default: return .notAStore
        }
    }
}
