import Foundation
@testable import StoreRescue

/// A small Core Data store for salvage tests: owners with items (to-one `owner`, inverse
/// to-many), a `SpecialItem` subentity sharing `ZITEM`, tags in a many-to-many join table, and
/// blobs that spill onto overflow pages.
enum CoreDataSalvageFixtures {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Owner", properties: [
            .attribute(AttributeDescription(name: "name", type: .string)),
            .relationship(RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "owner", maxCount: 0, isToMany: true)),
        ]),
        EntityDescription(name: "Item", properties: [
            .attribute(AttributeDescription(name: "title", type: .string)),
            .attribute(AttributeDescription(name: "count", type: .integer32)),
            .attribute(AttributeDescription(name: "createdAt", type: .date)),
            .attribute(AttributeDescription(name: "data", type: .binaryData)),
            .relationship(RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "items")),
            .relationship(RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", maxCount: 0, isToMany: true)),
        ]),
        EntityDescription(name: "SpecialItem", superentityName: "Item", properties: [
            .attribute(AttributeDescription(name: "note", type: .string)),
        ]),
        EntityDescription(name: "Tag", properties: [
            .attribute(AttributeDescription(name: "label", type: .string)),
            .relationship(RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "tags", maxCount: 0, isToMany: true)),
        ]),
    ], versionIdentifiers: ["1"])

    static let version = CatalogVersion(name: "V1", model: model, origin: "inline")
    static let catalog = Catalog(name: "Fixture", versions: [version], sourcePath: "fixture-catalog.json")

    /// `model` with one more attribute on its first entity: a V2 whose layout differs by a column.
    static var modelWithExtraAttribute: ManagedObjectModel {
        var other = model
        other.entities[0].properties.append(.attribute(AttributeDescription(name: "extra", type: .string)))
        return other
    }

    /// A catalog of `version` (V1) and `v2`: one the salvage must tell the version from.
    static func catalog(withV2 v2: ManagedObjectModel) -> Catalog {
        Catalog(name: "Fixture", versions: [version, CatalogVersion(name: "V2", model: v2, origin: "inline")], sourcePath: "fixture-catalog.json")
    }
    static let uuid = UUID(uuidString: "0B5E1D2C-3A4F-4B6C-8D7E-9F0A1B2C3D4E")!

    /// Creates the store at `path` with `owners` owners, 10 items each, every 7th a special item,
    /// and 5 tags (each item tagged with up to 2).
    static func store(at path: String, owners: Int = 20) throws {
        try StoreCreator.create(model: model, versionIdentifiers: nil, at: path, options: StoreCreationOptions(storeUUID: uuid))
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        let ents = Dictionary(uniqueKeysWithValues: try connection.rows("SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY").map { ($0[0].string ?? "", $0[1].int64 ?? 0) })
        try connection.execute("PRAGMA secure_delete = OFF; BEGIN")
        var generator = SeededGenerator(seed: 11)
        for owner in 1...owners {
            try run(connection, "INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, 1, ?)",
                    [.integer(Int64(owner)), .integer(ents["Owner"]!), .text("owner \(owner)")])
        }
        for tag in 1...5 {
            try run(connection, "INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (?, ?, 1, ?)", [.integer(Int64(tag)), .integer(ents["Tag"]!), .text("tag \(tag)")])
        }
        let items = owners * 10
        for item in 1...items {
            let special = item % 7 == 0
            let data: SQLiteValue = item % 13 == 0 ? .blob(Data(generator.bytes(6000))) : (item % 2 == 0 ? .blob(Data(generator.bytes(20))) : .null)
            try run(connection, """
                INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZCOUNT, ZOWNER, ZCREATEDAT, ZNOTE, ZTITLE, ZDATA) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.integer(Int64(item)), .integer(ents[special ? "SpecialItem" : "Item"]!), .integer(Int64(1 + item % 3)),
                      .integer(Int64(item * 10)), .integer(Int64(1 + (item - 1) / 10)), .real(700_000_000 + Double(item)),
                      special ? .text("special \(item)") : .null, .text("item \(item)"), data])
            for tag in [1 + item % 5, 1 + item % 3] where item % 4 != 0 {
                try run(connection, "INSERT OR IGNORE INTO Z_1TAGS (Z_1ITEMS, Z_4TAGS) VALUES (?, ?)", [.integer(Int64(item)), .integer(Int64(tag))])
            }
        }
        try connection.execute("""
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(owners) WHERE Z_NAME = 'Owner';
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(items) WHERE Z_NAME = 'Item';
            UPDATE Z_PRIMARYKEY SET Z_MAX = 5 WHERE Z_NAME = 'Tag';
            COMMIT;
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
    }

    static func run(_ connection: SQLiteConnection, _ sql: String, _ values: [SQLiteValue]) throws {
        let statement = try connection.prepare(sql)
        try statement.bind(values)
        _ = try statement.step()
    }

    /// The root page of `table` in the store at `path`.
    static func rootPage(of table: String, in path: String) throws -> Int {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        return Int(try connection.scalar("SELECT rootpage FROM sqlite_schema WHERE name = ?", [.text(table)])?.int64 ?? 0)
    }

    /// The store's rows as Core Data reads them, bookkeeping aside (rebuilt on purpose).
    static func entityRows(of path: String) throws -> [String: [Int64: [SQLiteValue]]] {
        try SalvageFixtures.rows(of: path).filter { !["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"].contains($0.key) }
    }
}
