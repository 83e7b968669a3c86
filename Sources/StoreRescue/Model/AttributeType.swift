/// A Core Data attribute type, by the integer code Core Data stores (`NSAttributeType`) and hashes.
public enum AttributeType: Int, Sendable, Codable, CaseIterable {
    case undefined = 0
    case integer16 = 100
    case integer32 = 200
    case integer64 = 300
    case decimal = 400
    case double = 500
    case float = 600
    case string = 700
    case boolean = 800
    case date = 900
    case binaryData = 1000
    case uuid = 1100
    case uri = 1200
    case transformable = 1800
    case objectID = 2000
    case composite = 2100

    /// The name an `.xcdatamodel` file uses (`attributeType="Integer 64"`).
    public var modelFileName: String {
        switch self {
        case .undefined: return "Undefined"
        case .integer16: return "Integer 16"
        case .integer32: return "Integer 32"
        case .integer64: return "Integer 64"
        case .decimal: return "Decimal"
        case .double: return "Double"
        case .float: return "Float"
        case .string: return "String"
        case .boolean: return "Boolean"
        case .date: return "Date"
        case .binaryData: return "Binary"
        case .uuid: return "UUID"
        case .uri: return "URI"
        case .transformable: return "Transformable"
        case .objectID: return "ObjectID"
        case .composite: return "Composite"
        }
    }

    /// The type named by an `.xcdatamodel` file, or nil for a name Core Data does not define.
    public init?(modelFileName: String) {
        guard let match = Self.allCases.first(where: { $0.modelFileName == modelFileName }) else { return nil }
        self = match
    }

    /// The SQLite column type Core Data declares for this attribute type.
    public var columnType: String {
        switch self {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .decimal: return "DECIMAL"
        case .double, .float: return "FLOAT"
        case .string, .uri: return "VARCHAR"
        case .date: return "TIMESTAMP"
        case .binaryData, .transformable, .uuid: return "BLOB"
        case .undefined, .objectID, .composite: return "BLOB"
        }
    }
}
