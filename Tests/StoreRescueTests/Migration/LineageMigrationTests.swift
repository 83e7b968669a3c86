import Foundation
import Testing
@testable import StoreRescue

/// Every shared lineage store migrated to its latest version: the result is what `create` writes
/// for that version plus the data, `match` says exact, the links hold, and the original store and
/// its folder are exactly as they were.
@Suite(.enabled(if: Samples.available, "../shared/samples is absent"))
struct LineageMigrationTests {
    /// Copies `paths` (stores) into a fresh folder, runs `body`, and checks that every file that
    /// was there is byte for byte the same and that nothing but `allowed` appeared.
    private func expectUntouched(_ dir: TemporaryDirectory, allowing allowed: Set<String>, _ body: () throws -> Void) throws {
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        try body()
        let after = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        for (name, bytes) in before { #expect(after[name] == bytes, "\(name) changed") }
        #expect(Set(after.keys).subtracting(before.keys).subtracting(allowed).isEmpty, "new files: \(Set(after.keys).subtracting(before.keys))")
    }

    private func catalogFile(_ json: String, in dir: TemporaryDirectory) throws -> Catalog {
        let path = dir.path("catalog.json")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        return try Catalog.load(path: path)
    }

    @Test func syncMetadataV3WithItsWALMigratesToV4() throws {
        let dir = try TemporaryDirectory()
        let catalog = try Catalog.load(path: try dir.copySampleItem("lineages/SyncMetadata/SyncMetadata.xcdatamodeld"))
        let store = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        var report: MigrationReport?
        try expectUntouched(dir, allowing: ["v4.sqlite"]) {
            report = StoreMigrator.migrate(store: store, catalog: catalog, to: dir.path("v4.sqlite"))
        }
        let result = try #require(report?.result, "\(report?.error?.message ?? "")")
        #expect(report?.source?.version == "SyncMetadata 3" && report?.target?.version == "SyncMetadata 4")
        #expect(report?.target?.staged == false)
        // The rows only the -wal holds came through.
        #expect(result.rowsByEntity == ["SyncableSettingsMetadata": 2, "SyncFeatureEntity": 2])
        let fixture = try MigrationFixture(versions: catalog.versions)
        try fixture.expectExactLayout(result.path, version: "SyncMetadata 4")
        let features = try fixture.objects(result.path, at: "SyncMetadata 4", "SyncFeatureEntity")
        #expect(Set(features.compactMap { $0["name"]?.string }) == ["TestFeature-01", "TestFeature-02"])
        #expect(features.allSatisfy { $0["lastSyncLocalTimestamp"] == .null })
        // Keys, UUID and app metadata are kept; no sidecar is published.
        let readout = StoreInspector.read(store: try OpenedStore(path: result.path))
        let original = StoreInspector.read(store: try OpenedStore(path: store))
        #expect(readout.metadata?.uuid == original.metadata?.uuid)
        #expect(!FileManager.default.fileExists(atPath: result.path + "-wal"))
    }

    @Test func postsRevisedStoresMigrateToVersion4ThroughTheSectionSplit() throws {
        let dir = try TemporaryDirectory()
        let model = try dir.copySampleItem("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld")
        let catalog = try catalogFile(LineageCatalogs.postsRevised(model: model), in: dir)
        let fixture = try MigrationFixture(versions: catalog.versions)
        for n in 1...3 {
            let store = try dir.copySample("lineages/PostsRevised/CoreDataMigration_Example_\(n).sqlite")
            let output = dir.path("posts-\(n)-v4.sqlite")
            let posts = try fixture.objects(store, at: catalog.versions[n - 1].name, "Post")
            var report: MigrationReport?
            try expectUntouched(dir, allowing: [(output as NSString).lastPathComponent]) {
                report = StoreMigrator.migrate(store: store, catalog: catalog, to: output)
            }
            #expect(report?.status == .migrated, "\(report?.refusals.map(\.message) ?? []) \(report?.error?.message ?? "")")
            try fixture.expectExactLayout(output, version: "CoreDataMigration_Example 4")
            let migrated = try fixture.objects(output, at: "CoreDataMigration_Example 4", "Post")
            #expect(migrated.map(\.key) == posts.map(\.key), "Z_PK kept")
            #expect(migrated.allSatisfy { $0["softDeleted"] == .integer(0) })
            if n == 1 {
                // The renaming identifier carried color into hexColor.
                #expect(migrated.map { $0["hexColor"] } == posts.map { $0["color"] })
            }
            let sections = try fixture.objects(output, at: "CoreDataMigration_Example 4", "Section")
            if n < 3 {
                // One section per post, linked to it, its body the post's old content.
                #expect(sections.count == posts.count)
                for post in posts {
                    let section = try #require(sections.first { $0["post"] == .integer(post.key) })
                    #expect(section["body"] == post["content"])
                    #expect(section["index"] == .integer(0))
                    #expect(section["title"]?.string?.hasSuffix("...") == true)
                }
                #expect(report?.hops.first { $0.to == "CoreDataMigration_Example 3" }?.discardedValues.first { $0.name == "Post.content" }?.count == Int64(posts.count))
            } else {
                #expect(sections.count == 14)
            }
            #expect(report?.result?.verification.danglingLinks == 0 && report?.result?.verification.missingRequiredValues == 0)
        }
    }

    @Test func employeesSplitTheRequiredNameWithACustomStageAndAreRefusedWithout() throws {
        let dir = try TemporaryDirectory()
        let model = try dir.copySampleItem("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        func catalog(map: Bool) throws -> Catalog {
            try catalogFile(LineageCatalogs.employees(model: model, map: map), in: dir)
        }
        let withMap = try catalog(map: true)
        let fixture = try MigrationFixture(versions: withMap.versions)
        for (store, hops) in [("MWKCoreDataTests.sqlite", 2), ("MWKCoreDataTests2.sqlite", 1)] {
            let path = try dir.copySample("lineages/Employees/\(store)")
            let before = try fixture.objects(path, at: store == "MWKCoreDataTests.sqlite" ? "MWKCoreDataTests" : "MWKCoreDataTests2", "Employee")
            let refused = StoreMigrator.migrate(store: path, catalog: try catalog(map: false), to: dir.path("refused.sqlite"))
            #expect(refused.status == .refused)
            #expect(Set(refused.refusals.map { "\($0.entity ?? "").\($0.property ?? "")=\($0.rowCount ?? 0):\($0.coreDataErrorCode ?? 0)" })
                == ["Employee.firstName=3:134110", "Employee.lastName=3:134110"])
            #expect(!FileManager.default.fileExists(atPath: dir.path("refused.sqlite")))

            let output = dir.path("\(store)-v3.sqlite")
            let report = StoreMigrator.migrate(store: path, catalog: try catalog(map: true), to: output)
            #expect(report.status == .migrated, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
            #expect(report.hops.count == hops)
            #expect(report.target?.version == "MWKCoreDataTests3")
            try fixture.expectExactLayout(output, version: "MWKCoreDataTests3")
            let employees = try fixture.objects(output, at: "MWKCoreDataTests3", "Employee")
            #expect(employees.map(\.key) == before.map(\.key))
            for (employee, original) in zip(employees, before) {
                let name = original["name"]?.string ?? ""
                #expect((employee["firstName"]?.string ?? "") + " " + (employee["lastName"]?.string ?? "") == name)
                // The department link survives the hop (store 2 has one per employee).
                #expect(employee["dept"] == (original["dept"] ?? .null))
            }
            // Without the map: a removed and an added attribute of the same type, no renaming
            // identifier between them — flagged as a likely rename that would lose the values.
            let likely = refused.hops.last?.entities.first { $0.name == "Employee" }?.likelyRenames ?? []
            #expect(likely.map(\.removed) == ["name", "name"] && Set(likely.map(\.added)) == ["firstName", "lastName"])
            // With the map, the custom stage computes them: no warning.
            #expect(report.hops.last?.entities.first { $0.name == "Employee" }?.likelyRenames.isEmpty == true)
        }
    }

    @Test func theJournalSampleMigratesToV4() throws {
        let dir = try TemporaryDirectory()
        let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Journal")
        let store = dir.path("Journal.sqlite")
        try FileManager.default.copyItem(atPath: samples.appendingPathComponent("Journal.sqlite").path, toPath: store)
        let catalog = try Catalog.load(path: samples.appendingPathComponent("catalog.json").path)
        let report = StoreMigrator.migrate(store: store, catalog: catalog, to: dir.path("v4.sqlite"))
        #expect(report.status == .migrated, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        let fixture = try MigrationFixture(versions: catalog.versions)
        try fixture.expectExactLayout(dir.path("v4.sqlite"), version: "V4")
        let entries = try fixture.objects(dir.path("v4.sqlite"), at: "V4", "Entry")
        #expect(entries.count == 5)
        #expect(Set(entries.compactMap { $0["id"]?.data }).count == 5)
        #expect(entries.first { $0.key == 1 }?["text"] == .text("Moved into the new flat. Boxes everywhere."))
        #expect(entries.allSatisfy { $0["wordCount"] == .integer(0) && $0["isFavorite"] == .integer(0) })
        // The many-to-many tags survive: 4 links.
        #expect(report.result?.joinRows.values.reduce(0, +) == 4)
        let v1Store = StoreInspector.read(store: try OpenedStore(path: store))
        let v4Store = StoreInspector.read(store: try OpenedStore(path: dir.path("v4.sqlite")))
        #expect(v4Store.metadata?.uuid == v1Store.metadata?.uuid)
        #expect(v4Store.metadata?.frameworkVersion == 1523, "a checksum-less store comes out with the checksum staged migration needs")
    }
}
