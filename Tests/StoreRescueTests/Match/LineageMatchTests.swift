import Foundation
import Testing
@testable import StoreRescue

/// Issue 3's acceptance on the real lineages: catalogs from the apps' own model folders, stores
/// their builds wrote, and stores `create` writes.
@Suite(.enabled(if: Samples.available, "../shared/samples is absent"))
struct LineageMatchTests {
    private func copiedCatalog(_ relative: String, in dir: TemporaryDirectory) throws -> Catalog {
        try Catalog.load(path: try dir.copySampleItem(relative))
    }

    @Test func syncMetadataV3MatchesVersion3ExactlyWithNoDrift() throws {
        let dir = try TemporaryDirectory()
        let catalog = try copiedCatalog("lineages/SyncMetadata/SyncMetadata.xcdatamodeld", in: dir)
        #expect(catalog.versions.map(\.name) == ["SyncMetadata", "SyncMetadata 2", "SyncMetadata 3", "SyncMetadata 4"])
        let store = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(result.outcome == .exact)
        #expect(result.version == "SyncMetadata 3")
        let best = try #require(result.candidates.first)
        #expect(best.version == "SyncMetadata 3" && best.hashesMatch && best.checksumMatches)
        #expect(best.differences.isEmpty, "\(best.differences.map(\.detail))")
        #expect(result.diagnosis.prediction == .migrates)
        #expect(result.diagnosis.stages.count == 1)
    }

    @Test func createWritesEverySyncMetadataVersionAndVersion3EqualsTheRealStore() throws {
        let dir = try TemporaryDirectory()
        let catalog = try copiedCatalog("lineages/SyncMetadata/SyncMetadata.xcdatamodeld", in: dir)
        for (index, version) in catalog.versions.enumerated() {
            let out = dir.path("created-\(index).sqlite")
            try StoreCreator.create(model: version.model, versionIdentifiers: version.versionIdentifiers, at: out)
            let report = StoreInspector.inspect(path: out)
            #expect(report.kind == .coreDataStore)
            #expect(report.metadata?.versionHashes == version.versionHashes.mapValues { $0.base64EncodedString() })
            #expect(report.metadata?.hashesDigest == version.hashesDigest)
            #expect(report.metadata?.versionChecksum == version.versionChecksum)
            let matched = StoreMatcher.match(storePath: out, catalog: catalog)
            #expect(matched.outcome == .exact && matched.version == version.name)
            #expect(matched.candidates.first?.differences.isEmpty == true, "\(version.name): \(matched.candidates.first?.differences.map(\.detail) ?? [])")
        }
        let real = StoreInspector.inspect(path: try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite"))
        let created = StoreInspector.inspect(path: dir.path("created-2.sqlite"))
        func tables(_ r: InspectionReport) -> [String: Set<String>] {
            Dictionary(uniqueKeysWithValues: r.tables.filter { $0.category == .entity || $0.category == .bookkeeping || $0.category == .joinTable }
                .map { ($0.name, Set($0.columns.map { "\($0.name) \($0.type)" })) })
        }
        func indexes(_ r: InspectionReport) -> Set<String> {
            Set(r.indexes.filter { $0.isExplicit && !$0.table.hasPrefix("A") }.map { "\($0.name) \($0.table)(\($0.columns.joined(separator: ","))) \($0.isUnique)" })
        }
        #expect(tables(created) == tables(real))
        #expect(indexes(created) == indexes(real))
        #expect(indexes(created).count == 6)
    }

    @Test(arguments: Samples.allStores.filter { !SampleInspectionTests.withoutModelCache.contains($0) })
    func everyStoreMatchesACatalogLearnedFromItselfAndCreateReproducesIt(relativePath: String) throws {
        let dir = try TemporaryDirectory()
        let store = try dir.copySample(relativePath)
        let version = try StoreModelReader.readVersion(fromStore: store, name: "learned")
        let catalog = Catalog(name: "learned", versions: [version], sourcePath: store)
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(result.outcome == .exact, "\(relativePath)")
        #expect(result.version == "learned")
        // Apple's own store against its own model has no blocking difference: knowledgeC 10.13
        // enforces a uniqueness constraint by an older form (a UNIQUE column constraint), which
        // a review saw reported as "uniqueness is not enforced".
        let blocking = result.candidates.first { $0.version == "learned" }?.differences.filter { $0.impact == .blocking }.map(\.detail) ?? ["no candidate"]
        #expect(blocking.isEmpty, "\(relativePath): \(blocking)")
        let out = dir.path("created.sqlite")
        try StoreCreator.create(model: version.model, versionIdentifiers: version.versionIdentifiers, at: out)
        let real = StoreInspector.inspect(path: store)
        let created = StoreInspector.inspect(path: out)
        func tables(_ r: InspectionReport) -> [String: Set<String>] {
            Dictionary(uniqueKeysWithValues: r.tables.filter { $0.category == .entity || $0.category == .joinTable }
                .map { ($0.name, Set($0.columns.map { "\($0.name) \($0.type)" })) })
        }
        func numbering(_ r: InspectionReport) -> [String] {
            r.entities.filter { $0.ent < 16000 }.map { "\($0.ent) \($0.name) \($0.superEnt)" }
        }
        #expect(tables(created) == tables(real), "\(relativePath)")
        #expect(numbering(created) == numbering(real), "\(relativePath)")
        #expect(created.metadata?.versionChecksum == version.versionChecksum)
    }

    @Test func postsRevisedStoresMatchTheirVersionsAndPredictWhatTheAppDoes() throws {
        let dir = try TemporaryDirectory()
        let catalog = try copiedCatalog("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld", in: dir)
        let names = catalog.versions.map(\.name)
        #expect(names.count == 4)
        for n in 1...3 {
            let store = try dir.copySample("lineages/PostsRevised/CoreDataMigration_Example_\(n).sqlite")
            let result = StoreMatcher.match(storePath: store, catalog: catalog)
            #expect(result.outcome == .exact)
            #expect(result.version == names[n - 1])
            // Framework 866 wrote no checksum, but with no stages the app migrates automatically
            // and recognises the store by its hashes: no 134504, and one inferred hop to version 4.
            #expect(result.diagnosis.errorCode != 134504)
            #expect(result.diagnosis.adoptAs == nil)
            #expect(result.diagnosis.stages == ["\(names[n - 1]) → \(names[3]) (lightweight, automatic: no stage declared)"])
            #expect(result.diagnosis.reasons.contains { $0.contains("recognises the store by its entity hashes") })
            // Version 3 adds the required to-many `sections`: posts exist, so the inferred hop fails.
            let sections = result.diagnosis.mandatoryAttributes.first { $0.attribute == "sections" }
            if n < 3 {
                #expect(result.diagnosis.prediction == .mandatoryAttributeWithoutValue && result.diagnosis.errorCode == 134110)
                #expect(sections?.entity == "Post" && sections?.kind == "relationship" && sections?.rowCount == 10)
                #expect(result.diagnosis.reasons.contains { $0.contains("134110") && $0.contains("Post.sections") })
            } else {
                #expect(result.diagnosis.prediction == .migrates)
                #expect(sections == nil)
            }
        }
        // With stages declared, the app uses staged migration: checksum-less stores fail with
        // 134504 until adopted, and the custom stage's create step gives every post a section.
        var staged = catalog
        staged.stages = [
            CatalogStage(kind: .lightweight, span: .versions([names[0]]), jsonPath: "stages[0]"),
            CatalogStage(kind: .custom, span: .pair(from: names[1], to: names[2]), custom: CustomStageDefinition(create: [
                .init(entity: "Section", forEach: "Post", assignments: [.init(property: "body", expression: "content")], linksToSource: ["post"]),
            ]), jsonPath: "stages[1]"),
            CatalogStage(kind: .lightweight, span: .versions([names[3]]), jsonPath: "stages[2]"),
        ]
        let store2 = try dir.copySample("lineages/PostsRevised/CoreDataMigration_Example_2.sqlite", as: "again.sqlite")
        let result = StoreMatcher.match(storePath: store2, catalog: staged)
        #expect(result.diagnosis.prediction == .unknownModelVersion && result.diagnosis.errorCode == 134504)
        #expect(result.diagnosis.adoptAs == names[1])
        #expect(result.diagnosis.mandatoryAttributes.isEmpty)
        #expect(result.diagnosis.stages == [
            "\(names[1]) → \(names[2]) (custom, stages[1])", "\(names[2]) → \(names[3]) (lightweight, stages[2])",
        ])
    }

    @Test func employeesStore2ToVersion3NeedsItsCustomStep() throws {
        let dir = try TemporaryDirectory()
        var catalog = try copiedCatalog("lineages/Employees/MWKCoreDataTests.xcdatamodeld", in: dir)
        #expect(catalog.currentVersionName == catalog.versions.first?.name, ".xccurrentversion names the first version")
        let store = try dir.copySample("lineages/Employees/MWKCoreDataTests2.sqlite")
        #expect(StoreMatcher.match(storePath: store, catalog: catalog).outcome == .newer)
        catalog.currentVersionName = catalog.versions.last?.name
        let result = StoreMatcher.match(storePath: store, catalog: catalog)
        #expect(result.outcome == .exact && result.version == catalog.versions[1].name)
        let attributes = Set(result.diagnosis.mandatoryAttributes.map { "\($0.entity).\($0.attribute)=\($0.rowCount)" })
        #expect(attributes == ["Employee.firstName=3", "Employee.lastName=3"])
    }
}
