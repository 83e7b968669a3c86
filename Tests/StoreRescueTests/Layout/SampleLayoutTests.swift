import Foundation
import Testing
@testable import StoreRescue

/// The layout built from each sample's own model cache is the layout Core Data wrote: same
/// tables, columns (name and declared type), entity numbers and indexes — and, as it turns out,
/// the same `CREATE` statements character for character. History tables are left aside here
/// (see `PersistentHistoryLayoutTests`).
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct SampleLayoutTests {
    /// knowledgeC 10.13 was written by framework 851, which declared a one-property uniqueness
    /// constraint as a column constraint (`ZMETADATAHASH VARCHAR UNIQUE`, enforced by SQLite's
    /// own `sqlite_autoindex_ZSTRUCTUREDMETADATA_1`) where framework 866 and later write
    /// `CREATE UNIQUE INDEX Z_StructuredMetadata_UNIQUE_metadataHash`. The builder writes the
    /// current form; this is the one difference, checked exactly below.
    static let framework851Store = "stores/plaso_macos_knowledgec-10.13.db"

    static func compare(_ relativePath: String) throws -> (LayoutDifferences, StoreLayout, SampleStoreSchema) {
        let store = try SampleStoreSchema(relativePath)
        let model = try #require(store.model, "\(relativePath) has no model cache")
        let layout = try StoreLayoutBuilder.layout(for: model)
        return (LayoutDifferences(layout: layout, store: store), layout, store)
    }

    @Test(arguments: SampleStoreSchema.storesWithModelCache)
    func tablesColumnsAndNumberingMatch(relativePath: String) throws {
        let (differences, layout, store) = try Self.compare(relativePath)
        #expect(differences.tables.isEmpty, "\(relativePath):\n\(differences.tables.joined(separator: "\n"))")
        #expect(differences.columns.isEmpty, "\(relativePath):\n\(differences.columns.joined(separator: "\n"))")
        #expect(differences.numbering.isEmpty, "\(relativePath):\n\(differences.numbering.joined(separator: "\n"))")
        #expect(differences.columnOrder.isEmpty, "\(relativePath): \(differences.columnOrder)")
        #expect(!layout.tables.isEmpty && layout.tables.count == store.modelTables.count, "\(relativePath)")
        if relativePath == Self.framework851Store {
            #expect(differences.tableSQL.count == 1, "\(relativePath): \(differences.tableSQL)")
            let sql = try #require(store.modelTables.first { $0.name == "ZSTRUCTUREDMETADATA" }?.sql)
            #expect(sql.contains("ZMETADATAHASH VARCHAR UNIQUE,"))
            #expect(sql.replacingOccurrences(of: "ZMETADATAHASH VARCHAR UNIQUE,", with: "ZMETADATAHASH VARCHAR,")
                == layout.table(named: "ZSTRUCTUREDMETADATA")?.createStatement)
        } else {
            #expect(differences.tableSQL.isEmpty, "\(relativePath):\n\(differences.tableSQL.joined(separator: "\n"))")
        }
    }

    @Test(arguments: SampleStoreSchema.storesWithModelCache)
    func indexesMatch(relativePath: String) throws {
        let (differences, layout, store) = try Self.compare(relativePath)
        if relativePath == Self.framework851Store {
            #expect(differences.indexes == ["layout has UNIQUE Z_StructuredMetadata_UNIQUE_metadataHash ON ZSTRUCTUREDMETADATA (ZMETADATAHASH)"])
            let automatic = store.schema.indexes.filter { $0.table == "ZSTRUCTUREDMETADATA" && !$0.isExplicit }
            #expect(automatic.map(\.columns) == [["ZMETADATAHASH"]] && automatic.allSatisfy(\.isUnique))
        } else {
            #expect(differences.indexes.isEmpty, "\(relativePath):\n\(differences.indexes.joined(separator: "\n"))")
            #expect(layout.indexes.count == store.modelIndexes.count, "\(relativePath)")
        }
        #expect(differences.indexSQL.isEmpty, "\(relativePath):\n\(differences.indexSQL.joined(separator: "\n"))")
    }

    /// The sibling-suffix rule on RMAdminStore: entities take names in numbering order (Cloud 8
    /// and 12, Family 9 and 13, Local 10 and 14); Family's `settings` is a to-many, so Local's
    /// to-one `settings` is the second to need a column.
    @Test func siblingColumnsOfRMAdminStore() throws {
        let (_, layout, _) = try Self.compare("stores/plaso_ios_RMAdminStore-Local.sqlite")
        let columns = layout.propertyColumns
        #expect(columns["CloudOrganization"]?["settings"] == "ZSETTINGS")
        #expect(columns["FamilyOrganization"]?["settings"] == nil)
        #expect(columns["LocalOrganization"]?["settings"] == "ZSETTINGS1")
        #expect(["CloudOrganizationSettings", "FamilyOrganizationSettings", "LocalOrganizationSettings"].map { columns[$0]?["passcode"] }
            == ["ZPASSCODE", "ZPASSCODE1", "ZPASSCODE2"])
        #expect(["CloudOrganizationSettings", "LocalOrganizationSettings"].map { columns[$0]?["recoveryAltDSID"] }
            == ["ZRECOVERYALTDSID", "ZRECOVERYALTDSID1"])
        #expect(["CloudOrganizationSettings", "FamilyOrganizationSettings", "LocalOrganizationSettings"].map { columns[$0]?["organization"] }
            == ["ZORGANIZATION", "ZORGANIZATION1", "ZORGANIZATION2"])
        // Redeclared in every subentity, stored once in the root's column.
        #expect(Set(["CoreOrganizationSettings", "CloudOrganizationSettings", "FamilyOrganizationSettings", "LocalOrganizationSettings"]
            .map { columns[$0]?["sortKey"] }) == ["ZSORTKEY"])
    }

    /// Figures over every sample, so the parameterised checks above cannot pass on nothing.
    @Test func everySampleWithAModelCacheIsCompared() throws {
        var stores = 0, tables = 0, joinTables = 0, columns = 0, indexes = 0, entities = 0, exactStores = 0
        for relativePath in SampleStoreSchema.storesWithModelCache {
            let (differences, layout, _) = try Self.compare(relativePath)
            stores += 1
            tables += layout.tables.count
            joinTables += layout.tables.filter { $0.rootEntity == nil }.count
            columns += layout.tables.map(\.columns.count).reduce(0, +)
            indexes += layout.indexes.count
            entities += layout.entityNumbers.count
            if differences.structureMatches && differences.indexesMatch && differences.tableSQL.isEmpty { exactStores += 1 }
        }
        #expect(stores == 15)
        #expect(exactStores == 14, "every store but knowledgeC 10.13 reproduces exactly")
        #expect(entities == 122)
        // Counted independently with sqlite3 over the same stores: 113 entity and join tables (8
        // join tables), 1,451 columns, 182 explicit indexes (+1: knowledgeC 10.13's unique index).
        #expect(tables == 113)
        #expect(joinTables == 8)
        #expect(columns == 1_451)
        #expect(indexes == 183)
    }

    /// `Z_PRIMARYKEY` numbering from names and superentities alone, on every sample — also the
    /// four without a model cache (kik, NotesV7 with 22 entities in 4 hierarchies, Employees).
    @Test(arguments: Samples.allStores)
    func numberingRuleReproducesEveryStore(relativePath: String) throws {
        let store = try SampleStoreSchema(relativePath)
        let names = Dictionary(uniqueKeysWithValues: store.entityNumbers.map { ($0.ent, $0.name) })
        let entities = store.entityNumbers.reversed().map { number in
            EntityDescription(name: number.name, superentityName: number.superEnt == 0 ? nil : names[number.superEnt])
        }
        let numbers = try StoreLayoutBuilder.entityNumbers(for: ManagedObjectModel(entities: entities))
        #expect(!numbers.isEmpty, "\(relativePath)")
        #expect(numbers == store.entityNumbers, "\(relativePath)")
    }

    /// The model SyncMetadata 3's `.xcdatamodel` declares (fetch indexes `byKey`/`byName`, no
    /// indexed property: what an XML reader gives) lays out like the compiled model that wrote
    /// SyncMetadata_V3 — the builder adds what the model compiler derives.
    @Test func uncompiledModelGetsTheCompilersDerivedIndexes() throws {
        let store = try SampleStoreSchema("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let model = ManagedObjectModel(entities: [
            EntityDescription(
                name: "SyncableSettingsMetadata",
                properties: [
                    .attribute(AttributeDescription(name: "key", type: .string, isOptional: false)),
                    .attribute(AttributeDescription(name: "lastModified", type: .date)),
                ],
                uniquenessConstraints: [["key"]],
                fetchIndexes: [FetchIndexDescription(name: "byKey", elements: [.init(propertyName: "key")])]),
            EntityDescription(
                name: "SyncFeatureEntity",
                properties: [
                    .attribute(AttributeDescription(name: "lastModified", type: .string)),
                    .attribute(AttributeDescription(name: "name", type: .string, isOptional: false)),
                    .attribute(AttributeDescription(name: "state", type: .string)),
                ],
                uniquenessConstraints: [["name"]],
                fetchIndexes: [FetchIndexDescription(name: "byName", elements: [.init(propertyName: "name")])]),
        ])
        let differences = LayoutDifferences(layout: try StoreLayoutBuilder.layout(for: model), store: store)
        #expect(differences.structureMatches, "\(differences.report)")
        #expect(differences.indexesMatch, "\(differences.report)")
        #expect(differences.indexSQL.isEmpty && differences.tableSQL.isEmpty, "\(differences.report)")
        #expect(store.modelIndexes.count == 6)
    }
}
