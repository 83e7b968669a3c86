import Foundation
import Testing
@testable import StoreRescue

/// A model read from an `.xcdatamodel` equals the compiled model Core Data cached in a store
/// written by that version, field by field, once the documented differences are set aside.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct XCDataModelComparisonTests {
    /// Differences that are expected and why:
    /// - property order: a compiled archive lists properties in hash-table order;
    /// - version identifiers: an empty `userDefinedModelVersionIdentifier` reads as none (`[]`),
    ///   the cache stores `[""]`; both stamp `[""]` (`CatalogVersion.versionIdentifiers`).
    static func comparable(_ model: ManagedObjectModel) -> ManagedObjectModel {
        var model = CatalogTestSupport.sortedForComparison(model)
        model.versionIdentifiers = model.versionIdentifiers.filter { !$0.isEmpty }
        return model
    }

    @Test func syncMetadata3EqualsTheModelCacheOfSyncMetadataV3() throws {
        let directory = try TemporaryDirectory()
        let bundle = try directory.copySampleItem("lineages/SyncMetadata/SyncMetadata.xcdatamodeld")
        let fromSource = try XCDataModelReader.readVersion(at: bundle + "/SyncMetadata 3.xcdatamodel")
        let fromCache = try SampleModels.modelCache("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        #expect(fromSource.versionIdentifiers == [] && fromCache.versionIdentifiers == [""])
        // Entities come in code-point order, as compiled: "SyncFeatureEntity" < "SyncableSettingsMetadata".
        #expect(fromSource.entities.map(\.name) == fromCache.entities.map(\.name))
        for (source, cache) in zip(fromSource.entities, fromCache.entities) {
            #expect(source.fetchIndexes == cache.fetchIndexes, "\(source.name): derived index first, then the declared one")
            #expect(source.uniquenessConstraints == cache.uniquenessConstraints)
            #expect(source.className == cache.className && source.renamingIdentifier == cache.renamingIdentifier)
            let sourceProperties = source.properties.sorted { $0.name < $1.name }
            let cacheProperties = cache.properties.sorted { $0.name < $1.name }
            #expect(sourceProperties == cacheProperties, "\(source.name)")
        }
        #expect(Self.comparable(fromSource) == Self.comparable(fromCache))
        let key = fromSource.entity(named: "SyncableSettingsMetadata")?.attributes.first { $0.name == "key" }
        #expect(key?.isIndexed == true && key?.renamingIdentifier == "key" && key?.isOptional == false)
    }

    /// PostsRevised's stores were written by framework 866: their caches agree with the sources
    /// except in class names, which that cache keeps only for the first version (store 1 has
    /// `Post`, stores 2 and 3 none, although every source names `Post`): class names are not
    /// part of the hash and are left out of the comparison.
    @Test(arguments: [(1, "CoreDataMigration_Example"), (2, "CoreDataMigration_Example 2"), (3, "CoreDataMigration_Example 3")])
    func postsRevisedSourcesEqualTheirStoresCaches(store: Int, version: String) throws {
        let directory = try TemporaryDirectory()
        let bundle = try directory.copySampleItem("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld")
        var fromSource = Self.comparable(try XCDataModelReader.readVersion(at: bundle + "/\(version).xcdatamodel"))
        var fromCache = Self.comparable(try SampleModels.modelCache("lineages/PostsRevised/CoreDataMigration_Example_\(store).sqlite"))
        #expect(fromSource.entities.allSatisfy { $0.className != nil })
        #expect(fromCache.entities.contains { $0.className == nil } == (store != 1))
        for index in fromSource.entities.indices { fromSource.entities[index].className = nil }
        for index in fromCache.entities.indices { fromCache.entities[index].className = nil }
        #expect(fromSource == fromCache)
    }
}
