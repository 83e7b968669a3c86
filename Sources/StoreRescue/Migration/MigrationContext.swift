/// Swift handlers for a custom stage, for apps and tools that embed the library: the same
/// `willMigrate` / `didMigrate` a catalog declares in JSON, as closures.
///
/// ```swift
/// let handlers = CustomStageHandlers(from: "V1", to: "V2", willMigrate: { context in
///     try context.objects(of: "Cat") { cat in
///         if cat["name"] == .text("") { try context.update("Cat", key: cat.key, set: ["name": .text("Unnamed")]) }
///     }
/// })
/// var options = MigrationOptions()
/// options.handlers = [handlers]
/// ```
public struct CustomStageHandlers: Sendable {
    public var from: String
    public var to: String
    /// Runs on the store at `from` (its model's names), before the copy.
    public var willMigrate: (@Sendable (MigrationContext) throws -> Void)?
    /// Runs on the store at `to` (its model's names), after the copy.
    public var didMigrate: (@Sendable (MigrationContext) throws -> Void)?

    public init(
        from: String, to: String, willMigrate: (@Sendable (MigrationContext) throws -> Void)? = nil,
        didMigrate: (@Sendable (MigrationContext) throws -> Void)? = nil
    ) {
        self.from = from
        self.to = to
        self.willMigrate = willMigrate
        self.didMigrate = didMigrate
    }
}

/// One object as a handler sees it: its entity, `Z_PK`, and values by property name
/// (attributes, and to-one relationships as the linked object's `Z_PK`).
public struct MigrationObject: Sendable {
    public let entity: String
    public let key: Int64
    public let values: [String: SQLiteValue]

    public subscript(_ property: String) -> SQLiteValue? { values[property] }
}

/// What a handler may do to the store at one version, by model names; it runs on the
/// migrator's private copy, never on the original.
public final class MigrationContext {
    /// The version the store is at while the handler runs.
    public let version: String
    let runner: DataStepRunner

    init(runner: DataStepRunner) {
        self.runner = runner
        version = runner.version.name
    }

    private var model: ManagedObjectModel { runner.model }
    private var layout: StoreLayout { runner.layout }
    private var schema: String { runner.schema }

    /// Calls `body` with every object of `entity` (subentities included) matching `condition`
    /// (an expression over its properties, by name), in `Z_PK` order.
    public func objects(of entity: String, where condition: String? = nil, _ body: (MigrationObject) throws -> Void) throws {
        let (table, numbers, scope) = try runner.target(entity, jsonPath: "objects(of: \(entity))")
        let names = scope.keys.sorted()
        let filter = try condition.map { " AND (" + (try runner.translate($0, scope: scope, jsonPath: "objects(of: \(entity)).where")) + ")" } ?? ""
        let statement = try runner.connection.prepare("""
            SELECT Z_PK, Z_ENT\(names.map { ", " + (scope[$0] ?? "NULL") }.joined()) FROM \(SQLLiteral.table(table, in: schema)) \
            WHERE Z_ENT IN (\(numbers))\(filter) ORDER BY Z_PK
            """)
        while try statement.step() {
            let ent = statement.column(1).int64 ?? 0
            let name = layout.entityNumbers.first { Int64($0.ent) == ent }?.name ?? entity
            var values: [String: SQLiteValue] = [:]
            for (offset, property) in names.enumerated() { values[property] = statement.column(offset + 2) }
            try body(MigrationObject(entity: name, key: statement.column(0).int64 ?? 0, values: values))
        }
    }

    /// Sets attributes (by name, values converted to each attribute's storage) on the objects of
    /// `entity` matching `condition`; returns how many changed.
    @discardableResult
    public func update(_ entity: String, set values: [String: SQLiteValue], where condition: String? = nil) throws -> Int64 {
        let (table, numbers, scope) = try runner.target(entity, jsonPath: "update(\(entity))")
        let (sets, bindings) = try assignments(values, of: entity)
        let filter = try condition.map { " AND (" + (try runner.translate($0, scope: scope, jsonPath: "update(\(entity)).where")) + ")" } ?? ""
        let statement = try runner.connection.prepare("UPDATE \(SQLLiteral.table(table, in: schema)) SET \(sets) WHERE Z_ENT IN (\(numbers))\(filter)")
        try statement.bind(bindings)
        _ = try statement.step()
        return runner.connection.changes
    }

    /// Sets attributes on one object.
    public func update(_ entity: String, key: Int64, set values: [String: SQLiteValue]) throws {
        let (table, numbers, _) = try runner.target(entity, jsonPath: "update(\(entity))")
        let (sets, bindings) = try assignments(values, of: entity)
        let statement = try runner.connection.prepare("UPDATE \(SQLLiteral.table(table, in: schema)) SET \(sets) WHERE Z_ENT IN (\(numbers)) AND Z_PK = ?")
        try statement.bind(bindings + [.integer(key)])
        _ = try statement.step()
    }

    /// Deletes the objects of `entity` matching `condition`, applying delete rules; returns the
    /// objects deleted (cascades included).
    @discardableResult
    public func delete(_ entity: String, where condition: String? = nil) throws -> Int64 {
        try runner.delete(entity, condition: condition, jsonPath: "delete(\(entity))")
    }

    /// Inserts a new object of `entity` with `values` (attributes by name; unset ones take their
    /// default), giving it the next `Z_PK` of its table; returns that key.
    @discardableResult
    public func insert(_ entity: String, values: [String: SQLiteValue] = [:]) throws -> Int64 {
        guard let description = model.entity(named: entity), !description.isAbstract, let table = layout.table(ofEntity: entity, in: model),
            let root = table.rootEntity, let ent = layout.entityNumber(of: entity), let rootNumber = layout.entityNumber(of: root)
        else { throw DataStepRunner.Failure(jsonPath: "insert(\(entity))", reason: "\(version) has no concrete entity \(entity)") }
        let largest = try runner.connection.scalar("SELECT max(Z_PK) FROM \(SQLLiteral.table(table.name, in: schema))")?.int64 ?? 0
        let counter = try runner.connection.scalar("SELECT Z_MAX FROM \(schema).Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(Int64(rootNumber))])?.int64 ?? 0
        let key = max(largest, counter) + 1
        var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
        var bindings: [SQLiteValue] = [.integer(key), .integer(Int64(ent)), .integer(1)]
        for property in model.allProperties(of: description) {
            guard case .attribute(let attribute) = property, !attribute.isTransient, let column = layout.propertyColumns[entity]?[attribute.name] else { continue }
            let value = values[attribute.name] ?? ((try? StorageValue.defaultValue(of: attribute)) ?? nil) ?? .null
            columns.append(column)
            bindings.append(try converted(value, attribute, entity))
        }
        let statement = try runner.connection.prepare("""
            INSERT INTO \(SQLLiteral.table(table.name, in: schema)) (\(columns.map(\.quotedSQLIdentifier).joined(separator: ", "))) \
            VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
            """)
        try statement.bind(bindings)
        _ = try statement.step()
        try runner.connection.execute("UPDATE \(schema).Z_PRIMARYKEY SET Z_MAX = \(key) WHERE Z_ENT = \(rootNumber) AND Z_MAX < \(key)")
        return key
    }

    /// Links object `key` of `entity` to `target` through `relationship` (both sides: the
    /// relationship's storage holds both).
    public func link(_ entity: String, key: Int64, _ relationship: String, to target: Int64) throws {
        guard let description = model.entity(named: entity),
            case .relationship(let declared)? = model.allProperties(of: description).last(where: { $0.name == relationship }),
            let storage = layout.relationshipStorage[entity]?[relationship], let table = layout.table(ofEntity: entity, in: model)
        else { throw DataStepRunner.Failure(jsonPath: "link(\(entity).\(relationship))", reason: "\(entity) has no relationship \(relationship) in \(version)") }
        let targetTable = layout.table(ofEntity: declared.destinationEntityName, in: model)?.name ?? ""
        switch storage {
        case .foreignKey(let column, let entityColumn, _):
            var sets = "\(column.quotedSQLIdentifier) = \(target)"
            if let entityColumn {
                sets += ", \(entityColumn.quotedSQLIdentifier) = (SELECT Z_ENT FROM \(SQLLiteral.table(targetTable, in: schema)) WHERE Z_PK = \(target))"
            }
            try runner.connection.execute("UPDATE \(SQLLiteral.table(table.name, in: schema)) SET \(sets) WHERE Z_PK = \(key)")
        case .inverse:
            guard let inverse = declared.inverseName, case .foreignKey(let column, let entityColumn, _)? = layout.relationshipStorage[declared.destinationEntityName]?[inverse] else { return }
            var sets = "\(column.quotedSQLIdentifier) = \(key)"
            if let entityColumn { sets += ", \(entityColumn.quotedSQLIdentifier) = \(layout.entityNumber(of: entity) ?? 0)" }
            try runner.connection.execute("UPDATE \(SQLLiteral.table(targetTable, in: schema)) SET \(sets) WHERE Z_PK = \(target)")
        case .joinTable(let join, let own, let other, _, _):
            try runner.connection.execute("INSERT OR IGNORE INTO \(SQLLiteral.table(join, in: schema)) (\(own.quotedSQLIdentifier), \(other.quotedSQLIdentifier)) VALUES (\(key), \(target))")
        case .destinationColumn(let hidden, let column, _):
            try runner.connection.execute("UPDATE \(SQLLiteral.table(hidden, in: schema)) SET \(column.quotedSQLIdentifier) = \(key) WHERE Z_PK = \(target)")
        }
    }

    private func assignments(_ values: [String: SQLiteValue], of entity: String) throws -> (String, [SQLiteValue]) {
        guard let description = model.entity(named: entity) else { return ("", []) }
        var sets: [String] = []
        var bindings: [SQLiteValue] = []
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard case .attribute(let attribute)? = model.allProperties(of: description).last(where: { $0.name == name }),
                let column = layout.propertyColumns[entity]?[name]
            else { throw DataStepRunner.Failure(jsonPath: "update(\(entity))", reason: "\(entity) has no attribute \(name) in \(version)") }
            sets.append("\(column.quotedSQLIdentifier) = ?")
            bindings.append(try converted(value, attribute, entity))
        }
        return (sets.joined(separator: ", "), bindings)
    }

    private func converted(_ value: SQLiteValue, _ attribute: AttributeDescription, _ entity: String) throws -> SQLiteValue {
        guard let stored = StorageValue.convert(value, to: attribute.type) else {
            throw DataStepRunner.Failure(
                jsonPath: "\(entity).\(attribute.name)",
                reason: "\(MigrationFunctions.describe(value)) is not a \(attribute.type.modelFileName) (\(entity).\(attribute.name))")
        }
        return stored
    }
}
