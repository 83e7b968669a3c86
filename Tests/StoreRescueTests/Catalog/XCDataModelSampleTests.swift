import Foundation
import Testing
@testable import StoreRescue

/// The three real `.xcdatamodeld` lineages load in order, name their current version, and
/// reproduce exactly the hashes Core Data stored in the stores those versions wrote.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct XCDataModelSampleTests {
    static func bundle(_ relativePath: String) throws -> Catalog {
        let directory = try TemporaryDirectory()
        return try XCDataModelReader.readBundle(at: try directory.copySampleItem(relativePath))
    }

    @Test func syncMetadataLoadsFourVersionsAndVersion3MatchesItsStore() throws {
        let catalog = try Self.bundle("lineages/SyncMetadata/SyncMetadata.xcdatamodeld")
        #expect(catalog.name == "SyncMetadata")
        #expect(catalog.versions.map(\.name) == ["SyncMetadata", "SyncMetadata 2", "SyncMetadata 3", "SyncMetadata 4"])
        #expect(catalog.currentVersionName == "SyncMetadata 4")
        #expect(catalog.versions.map(\.model.entities.count) == [1, 1, 2, 2])
        #expect(catalog.versions.allSatisfy { $0.origin == "xcdatamodel" && $0.versionIdentifiers == [""] })

        let metadata = try CatalogTestSupport.storedMetadata("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let stored = try #require(metadata.versionHashes)
        let matching = catalog.versions.filter { $0.versionHashes == stored }
        #expect(matching.map(\.name) == ["SyncMetadata 3"])
        let version3 = try #require(catalog.version(named: "SyncMetadata 3"))
        #expect(version3.versionHashes.keys.sorted() == ["SyncFeatureEntity", "SyncableSettingsMetadata"])
        #expect(version3.hashesDigest == metadata.hashesDigest)
        if let checksum = metadata.versionChecksum {
            #expect(version3.versionChecksum == checksum)
        }
        #expect(version3.versionIdentifiers == metadata.versionIdentifiers)
    }

    @Test func postsRevisedStoresEachMatchExactlyOneVersion() throws {
        let catalog = try Self.bundle("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld")
        #expect(catalog.versions.map(\.name) == [
            "CoreDataMigration_Example", "CoreDataMigration_Example 2", "CoreDataMigration_Example 3", "CoreDataMigration_Example 4",
        ])
        #expect(catalog.currentVersionName == "CoreDataMigration_Example 4")
        for (store, version) in [(1, "CoreDataMigration_Example"), (2, "CoreDataMigration_Example 2"), (3, "CoreDataMigration_Example 3")] {
            let stored = try CatalogTestSupport.storedHashes("lineages/PostsRevised/CoreDataMigration_Example_\(store).sqlite")
            #expect(catalog.versions.filter { $0.versionHashes == stored }.map(\.name) == [version], "store \(store)")
        }
        // 1→2 renames color to hexColor through elementID.
        let hexColor = catalog.versions[1].model.entity(named: "Post")?.attributes.first { $0.name == "hexColor" }
        #expect(hexColor?.renamingIdentifier == "color")
        // Version 3's required to-many: minCount 0 although optional is NO (format notes §5).
        let sections = catalog.versions[2].model.entity(named: "Post")?.relationships.first { $0.name == "sections" }
        #expect(sections?.isOptional == false && sections?.minCount == 0 && sections?.maxCount == 0 && sections?.deleteRule == .cascade)
    }

    @Test func employeesCurrentVersionIsTheFirstAndOldStoresMatch() throws {
        let catalog = try Self.bundle("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        #expect(catalog.versions.map(\.name) == ["MWKCoreDataTests", "MWKCoreDataTests2", "MWKCoreDataTests3"])
        #expect(catalog.currentVersionName == "MWKCoreDataTests")
        #expect(catalog.latest?.name == "MWKCoreDataTests")
        #expect(catalog.versions.map(\.versionIdentifiers) == [["1"], ["2"], ["3"]])
        for (store, index) in [("MWKCoreDataTests.sqlite", 0), ("MWKCoreDataTests2.sqlite", 1)] {
            let metadata = try CatalogTestSupport.storedMetadata("lineages/Employees/\(store)")
            let stored = try #require(metadata.versionHashes)
            #expect(catalog.versions.filter { $0.versionHashes == stored }.map(\.name) == [catalog.versions[index].name], "\(store)")
            #expect(metadata.versionIdentifiers == catalog.versions[index].versionIdentifiers, "\(store)")
        }
    }
}
