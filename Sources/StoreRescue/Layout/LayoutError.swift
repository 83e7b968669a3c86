/// Why a model cannot be given a store layout: the model is malformed, or uses something this
/// tool cannot lay out exactly as Core Data would.
public enum LayoutError: OperatorFacingError, Equatable, Sendable {
    /// Two entities share a name.
    case duplicateEntity(name: String)
    /// An entity names a superentity the model does not have.
    case unknownSuperentity(entity: String, superentity: String)
    /// Entities whose superentity chain loops back on itself.
    case inheritanceCycle(entities: [String])
    /// A relationship points at an entity the model does not have.
    case unknownDestination(entity: String, relationship: String, destination: String)
    /// A relationship names an inverse that its destination does not have (or that is an
    /// attribute).
    case unknownInverse(entity: String, relationship: String, destination: String, inverse: String)
    /// An entity, property or index name that is not a plain ASCII identifier
    /// (`[A-Za-z_][A-Za-z0-9_]*`). Core Data writes names into SQL unquoted; this tool refuses
    /// any name it could not write the same way safely.
    case invalidName(kind: String, name: String, entity: String?)
    /// Two hierarchies, or a hierarchy and a join table, would get the same table (names equal
    /// but for case). `entities` describes both ("entity \"Item\"", "join table Z_2TAGS").
    case tableNameClash(table: String, entities: [String])
    /// An entity whose table would be one Core Data keeps for itself (`_METADATA` → `Z_METADATA`,
    /// `_PRIMARYKEY`, `_MODELCACHE`, in any case).
    case reservedTableName(entity: String, table: String)
    /// An attribute type with no column of its own (composite, object ID, undefined) on a
    /// property that is not transient.
    case unsupportedAttributeType(entity: String, property: String, type: String)
    /// A fetch index or uniqueness constraint names a property the entity does not have, or one
    /// with no column (a to-many relationship, a transient property).
    case unknownIndexedProperty(entity: String, index: String, property: String)
    /// Two different indexes whose names SQLite takes as one (index names are case-insensitive).
    case indexNameClash(name: String, otherName: String)
    /// More entities than Core Data can number below the persistent history range (16001…).
    case tooManyEntities(count: Int)
    /// A table (one inheritance hierarchy) or index would have more columns than SQLite allows
    /// (2000 unless SQLite was built otherwise; Core Data's SQLite too), so neither this tool nor
    /// Core Data could create it. `entity` is the hierarchy's root.
    case tooManyColumns(entity: String, table: String, count: Int, limit: Int)

    public var description: String {
        switch self {
        case .duplicateEntity(let name):
            return "the model has two entities named \"\(name)\""
        case .unknownSuperentity(let entity, let superentity):
            return "entity \"\(entity)\" names superentity \"\(superentity)\", which the model does not have"
        case .inheritanceCycle(let entities):
            return "the superentities of \(entities.map { "\"\($0)\"" }.joined(separator: ", ")) form a cycle"
        case .unknownDestination(let entity, let relationship, let destination):
            return "relationship \(entity).\(relationship) points at entity \"\(destination)\", which the model does not have"
        case .unknownInverse(let entity, let relationship, let destination, let inverse):
            return "relationship \(entity).\(relationship) names inverse \"\(inverse)\", which is not a relationship of \(destination)"
        case .invalidName(let kind, let name, let entity):
            let place = entity.map { " in entity \"\($0)\"" } ?? ""
            return "\(kind) name \"\(name)\"\(place) is not a plain identifier (letters, digits and _, not starting with a digit)"
        case .tableNameClash(let table, let entities):
            return "\(entities.joined(separator: " and ")) would both be stored in table \(table)"
        case .reservedTableName(let entity, let table):
            return "entity \"\(entity)\" would be stored in table \(table), which Core Data keeps for its own bookkeeping"
        case .unsupportedAttributeType(let entity, let property, let type):
            return "attribute \(entity).\(property) has type \(type), which this tool cannot lay out"
        case .unknownIndexedProperty(let entity, let index, let property):
            return "index \"\(index)\" of entity \"\(entity)\" names \"\(property)\", which is not a stored attribute or to-one relationship of it"
        case .indexNameClash(let name, let otherName):
            return "indexes \(otherName) and \(name) are different but SQLite takes their names as one"
        case .tooManyEntities(let count):
            return "the model has \(count) entities; Core Data numbers entities below 16001"
        case .tooManyColumns(let entity, let table, let count, let limit):
            return "entity \"\(entity)\" and its subentities need \(count) columns in \(table); SQLite allows at most \(limit)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .invalidName, .unsupportedAttributeType:
            return "this model cannot be written by storerescue; let the app create the store, or rename the offending element in a copy of the model"
        case .tooManyEntities:
            return "split the model; Core Data itself cannot open a store with this many entities"
        case .reservedTableName:
            return "rename the entity in a copy of the model; Core Data could not store it either"
        case .tooManyColumns:
            return "the model is not one Core Data could store: move attributes into related entities, or check that this is the app's real model"
        default:
            return "the model is malformed; take it from the app's compiled .momd or its .xcdatamodeld and check it in Xcode"
        }
    }

    /// 65 (`EX_DATAERR`): the input model is wrong, as for a model that cannot be decoded.
    public var exitStatus: ExitStatus { .notAStore }
}
