import Foundation
import Testing
@testable import StoreRescue

/// A catalog of versions built in the test, stores created at one of them (with `StoreCreator`)
/// and filled by model names, migrations run through the public API, and the results read back
/// by model names: tests say what they mean in the model's terms, never in column names.
final class MigrationFixture {
    let directory: TemporaryDirectory
    var catalog: Catalog

    init(versions: [CatalogVersion], stages: [CatalogStage] = [], current: String? = nil) throws {
        directory = try TemporaryDirectory()
        catalog = Catalog(name: "Test", versions: versions, currentVersionName: current, stages: stages, sourcePath: "test-catalog")
    }

    /// A catalog read from JSON (written to the fixture's folder first).
    init(catalogJSON: String) throws {
        directory = try TemporaryDirectory()
        let path = directory.path("catalog.json")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(catalogJSON.utf8)))
        catalog = try Catalog.load(path: path)
    }

    func version(_ name: String) throws -> CatalogVersion {
        try #require(catalog.version(named: name), "no version \(name)")
    }

    /// Creates an empty store at `version` (framework 1523 unless said) and returns its path.
    @discardableResult
    func store(at version: String, name: String = "store.sqlite", history: Bool = false, frameworkVersion: Int = 1523) throws -> String {
        let path = directory.path(name)
        let described = try self.version(version)
        try StoreCreator.create(
            model: described.model, versionIdentifiers: described.versionIdentifiers, at: path,
            options: StoreCreationOptions(includesPersistentHistory: history, frameworkVersion: frameworkVersion))
        return path
    }

    /// Runs `body` with a context on the store at `path`, which is at `version` (writes commit).
    func edit(_ path: String, at version: String, _ body: (MigrationContext) throws -> Void) throws {
        let described = try self.version(version)
        let layout = try StoreLayoutBuilder.layout(for: described.model)
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        try MigrationFunctions.register(on: connection)
        try connection.inTransaction {
            try body(MigrationContext(runner: DataStepRunner(connection: connection, version: described, layout: layout, schema: "main")))
        }
    }

    /// Every object of `entity` (subentities included) in the store at `path`, at `version`.
    func objects(_ path: String, at version: String, _ entity: String) throws -> [MigrationObject] {
        var result: [MigrationObject] = []
        let described = try self.version(version)
        let layout = try StoreLayoutBuilder.layout(for: described.model)
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        let context = MigrationContext(runner: DataStepRunner(connection: connection, version: described, layout: layout, schema: "main"))
        try context.objects(of: entity) { result.append($0) }
        return result
    }

    /// The links of `entity.relationship` in the store at `path` (at `version`), read from where
    /// the layout keeps them: (owner `Z_PK`, target `Z_PK`, owner's position of the target when
    /// ordered), sorted.
    func links(_ path: String, at version: String, _ entity: String, _ relationship: String) throws -> [[Int64]] {
        let described = try self.version(version)
        let layout = try StoreLayoutBuilder.layout(for: described.model)
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        let state = VirtualVersion.base(
            version: described, layout: layout, schema: "main", physical: try PhysicalSchema.read(from: connection),
            primaryKeys: try PrimaryKeyEntry.readAll(from: connection))
        let (set, side) = try #require(state.linkSet(for: LinkSet.End(entity: entity, relationship: relationship)))
        let (this, other, order) = side == .a ? ("a", "b", "na") : ("b", "a", "nb")
        return try connection.rows("SELECT \(this), \(other), \(order) FROM (\(set.query)) WHERE \(this) IS NOT NULL AND \(other) IS NOT NULL")
            .map { row in row.compactMap(\.int64) }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Migrates the store at `path` into `output` (in the fixture's folder).
    func migrate(_ path: String, to target: String? = nil, from source: String? = nil, output: String = "out.sqlite",
                 dryRun: Bool = false, handlers: [CustomStageHandlers] = []) -> MigrationReport {
        StoreMigrator.migrate(
            store: path, catalog: catalog, to: directory.path(output),
            options: MigrationOptions(targetVersion: target, sourceVersion: source, isDryRun: dryRun, handlers: handlers))
    }

    /// The schema objects of a store (type, name, SQL), for comparing with what `create` writes.
    static func schemaObjects(_ path: String) throws -> Set<String> {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        return Set(try connection.rows("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema").map { row in
            row.map { $0.string ?? "" }.joined(separator: "|")
        })
    }

    /// Checks that a migrated store is, table for table, what `create` writes for `version`.
    ///
    /// - Parameter carrying: tables Core Data does not lay out that the store carries over.
    func expectExactLayout(
        _ path: String, version: String, history: Bool = false, carrying: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reference = directory.path("reference-\(UUID().uuidString).sqlite")
        let described = try self.version(version)
        try StoreCreator.create(model: described.model, versionIdentifiers: described.versionIdentifiers, at: reference,
                                options: StoreCreationOptions(includesPersistentHistory: history))
        let migrated = try Self.schemaObjects(path).filter { object in !carrying.contains { object.contains("|\($0)|") } }
        let created = try Self.schemaObjects(reference)
        #expect(migrated == created, "only migrated: \(migrated.subtracting(created).sorted()); only created: \(created.subtracting(migrated).sorted())",
                sourceLocation: sourceLocation)
        let readout = StoreInspector.read(store: try OpenedStore(path: path))
        #expect(readout.metadata?.versionChecksum == described.versionChecksum, sourceLocation: sourceLocation)
        #expect(readout.metadata?.hashesDigest == described.hashesDigest, sourceLocation: sourceLocation)
        #expect(readout.metadata?.versionIdentifiers == described.versionIdentifiers, sourceLocation: sourceLocation)
        #expect(readout.report.file?.journalMode == "wal", sourceLocation: sourceLocation)
    }
}

/// Models for tests, written briefly.
enum TestModel {
    static func attribute(_ name: String, _ type: AttributeType = .string, optional: Bool = true, default value: String? = nil,
                          renamedFrom: String? = nil) -> PropertyDescription {
        .attribute(AttributeDescription(name: name, type: type, isOptional: optional, defaultValue: value, renamingIdentifier: renamedFrom))
    }

    static func toOne(_ name: String, _ destination: String, inverse: String? = nil, optional: Bool = true, renamedFrom: String? = nil) -> PropertyDescription {
        .relationship(RelationshipDescription(
            name: name, destinationEntityName: destination, inverseName: inverse, isOptional: optional, renamingIdentifier: renamedFrom))
    }

    static func toMany(_ name: String, _ destination: String, inverse: String? = nil, ordered: Bool = false, optional: Bool = true,
                       deleteRule: DeleteRule = .nullify, renamedFrom: String? = nil) -> PropertyDescription {
        .relationship(RelationshipDescription(
            name: name, destinationEntityName: destination, inverseName: inverse, maxCount: 0, isToMany: true, isOrdered: ordered,
            isOptional: optional, deleteRule: deleteRule, renamingIdentifier: renamedFrom))
    }

    static func version(_ name: String, _ entities: [EntityDescription], identifiers: [String] = []) -> CatalogVersion {
        CatalogVersion(name: name, model: ManagedObjectModel(entities: entities, versionIdentifiers: identifiers), origin: "inline")
    }
}
