/// What a custom stage does besides the inferred schema change, written with model names
/// (entities and properties), never column names (`Docs/CATALOG.md#custom-stages`).
///
/// The order is Core Data's: `willMigrate` runs on the store at the stage's `from` version (its
/// names), then the store is copied to `to` (the inferred mapping, with `map` overriding
/// destination attributes and `create` adding objects), then `didMigrate` runs at `to` (its
/// names). Expressions are SQLite expressions over the object's attributes (by name), plus
/// `uuid()`; they are evaluated only on the migrator's private copy.
///
/// ```json
/// {"kind": "custom", "from": "V2", "to": "V3",
///  "willMigrate": [{"update": "Post", "set": {"title": "trim(title)"}, "where": "title IS NOT NULL"}],
///  "map":        {"Post": {"summary": "substr(content, 1, 40)"}},
///  "create":     [{"entity": "Section", "forEach": "Post", "set": {"body": "content"}, "link": {"post": "source"}}],
///  "didMigrate": [{"delete": "Tag", "where": "name = ''"}]}
/// ```
public struct CustomStageDefinition: Sendable, Equatable {
    /// A property name and the SQL expression that gives its value.
    public struct Assignment: Sendable, Equatable {
        public var property: String
        public var expression: String
        /// Where it is in the catalog file.
        public var jsonPath: String

        public init(property: String, expression: String, jsonPath: String = "") {
            self.property = property
            self.expression = expression
            self.jsonPath = jsonPath
        }
    }

    /// An `update` or `delete` of the objects of one entity (subentities included) that match
    /// `condition` (all of them when nil).
    public struct DataStep: Sendable, Equatable {
        public enum Action: Sendable, Equatable {
            case update([Assignment])
            /// Applies the relationships' delete rules, as `context.delete` would.
            case delete
        }

        public var entity: String
        public var action: Action
        public var condition: String?
        public var jsonPath: String

        public init(entity: String, action: Action, condition: String? = nil, jsonPath: String = "") {
            self.entity = entity
            self.action = action
            self.condition = condition
            self.jsonPath = jsonPath
        }
    }

    /// The destination attributes of one entity computed from its source object (`map`).
    public struct EntityMap: Sendable, Equatable {
        /// The destination entity (at the stage's `to` version).
        public var entity: String
        /// Expressions over the source object's attributes (at `from`).
        public var assignments: [Assignment]
        public var jsonPath: String

        public init(entity: String, assignments: [Assignment], jsonPath: String = "") {
            self.entity = entity
            self.assignments = assignments
            self.jsonPath = jsonPath
        }
    }

    /// One new destination object per source object of `forEach` (`create`).
    public struct CreateStep: Sendable, Equatable {
        /// The new objects' entity (at `to`).
        public var entity: String
        /// The source entity (at `from`) whose objects each give one new object.
        public var forEach: String
        public var condition: String?
        /// The new object's attributes, as expressions over the source object (at `from`).
        public var assignments: [Assignment]
        /// Relationships of the new object that point at the source object's migrated
        /// counterpart (`"link": {"post": "source"}`); the inverse side is filled too.
        public var linksToSource: [String]
        public var jsonPath: String

        public init(
            entity: String, forEach: String, condition: String? = nil, assignments: [Assignment] = [],
            linksToSource: [String] = [], jsonPath: String = ""
        ) {
            self.entity = entity
            self.forEach = forEach
            self.condition = condition
            self.assignments = assignments
            self.linksToSource = linksToSource
            self.jsonPath = jsonPath
        }
    }

    public var willMigrate: [DataStep]
    public var map: [EntityMap]
    public var create: [CreateStep]
    public var didMigrate: [DataStep]

    public init(willMigrate: [DataStep] = [], map: [EntityMap] = [], create: [CreateStep] = [], didMigrate: [DataStep] = []) {
        self.willMigrate = willMigrate
        self.map = map
        self.create = create
        self.didMigrate = didMigrate
    }

    /// True when the stage adds nothing to the inferred mapping.
    public var isEmpty: Bool { willMigrate.isEmpty && map.isEmpty && create.isEmpty && didMigrate.isEmpty }

    /// The `map` assignments for destination entity `entity`, by attribute name.
    public func mapAssignments(for entity: String) -> [Assignment] {
        map.filter { $0.entity == entity }.flatMap(\.assignments)
    }
}
