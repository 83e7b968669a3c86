import Foundation
import Testing

@Suite(.enabled(if: CommandRunner.isAvailable && Samples.available, "needs the built executable and ../shared/samples"))
struct MatchCommandTests {
    @Test func jsonContractOnSyncMetadata() throws {
        let dir = try TemporaryDirectory()
        let catalog = try dir.copySampleItem("lineages/SyncMetadata/SyncMetadata.xcdatamodeld")
        let store = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        let result = try CommandRunner.run(["match", store, "--catalog", catalog, "--json"])
        #expect(result.status == 0)
        let json = try result.json()
        for key in ["outcome", "version", "candidates", "diagnosis", "error"] { #expect(json[key] != nil, "key \(key)") }
        #expect(json["outcome"] as? String == "exact")
        #expect(json["version"] as? String == "SyncMetadata 3")
        let candidates = try #require(json["candidates"] as? [[String: Any]])
        #expect(candidates.count == 4)
        #expect(candidates.allSatisfy { $0["version"] is String && $0["score"] is Double && $0["differences"] is [Any] })
        let diagnosis = try #require(json["diagnosis"] as? [String: Any])
        #expect(diagnosis["prediction"] as? String == "migrates")
        #expect(diagnosis["errorCode"] is NSNull)
        #expect(try StoreFixtureBuilder.snapshot(of: dir.url.path) == before, "match never writes next to the store")
    }

    /// Review rv10: `match` of a damaged store was exit 0, exact, "cannot be planned". Now exit
    /// 65 as documented, with the version it matched and the damage, in JSON and in text.
    @Test func aDamagedStoreExits65AndStillSaysItsVersion() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("Notes.sqlite")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Damaged/Notes.sqlite"), toPath: store)
        let catalog = CatalogTestSupport.projectSample("Damaged/catalog.json")
        let result = try CommandRunner.run(["match", store, "--catalog", catalog, "--json"])
        #expect(result.status == 65, "\(result.stdout)")
        let json = try result.json()
        #expect(json["outcome"] as? String == "exact")
        #expect(json["version"] as? String == "V1")
        #expect(json["storeKind"] as? String == "damaged")
        let diagnosis = try #require(json["diagnosis"] as? [String: Any])
        #expect(diagnosis["prediction"] as? String == "storeDamaged")
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["exitStatus"] as? Int == 65)
        #expect((error["hint"] as? String)?.contains("--on-failure clean") == true)

        let text = try CommandRunner.run(["match", store, "--catalog", catalog])
        #expect(text.status == 65)
        #expect(text.stdout.contains("Outcome         exact: V1"), "\(text.stdout)")
        #expect(text.stdout.contains("Store           damaged"))
        #expect(text.stdout.contains("The store is damaged"))
        let problems = text.stderr.split(separator: "\n")
        #expect(problems.count == 2 && problems[0].hasPrefix("Error: ") && problems[0].contains("malformed") && problems[1].hasPrefix("Try: "), "\(text.stderr)")
    }

    @Test func textNamesTheDiagnosisAndErrorsHaveStatuses() throws {
        let dir = try TemporaryDirectory()
        let catalog = try dir.copySampleItem("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld")
        let store = try dir.copySample("lineages/PostsRevised/CoreDataMigration_Example_1.sqlite")
        let text = try CommandRunner.run(["match", store, "--catalog", catalog])
        #expect(text.status == 0)
        #expect(text.stdout.contains("Outcome         exact: CoreDataMigration_Example"))
        #expect(text.stdout.contains("134110"))
        #expect(text.stdout.contains("Post.sections"))
        #expect(!text.stdout.contains("Adopt as"), "no stages: automatic migration needs no checksum")

        let missingStore = try CommandRunner.run(["match", dir.path("nope.sqlite"), "--catalog", catalog])
        #expect(missingStore.status == 66)
        #expect(missingStore.stderr.contains("no such file"))
        let missingCatalog = try CommandRunner.run(["match", store, "--catalog", dir.path("nope.json"), "--json"])
        #expect(missingCatalog.status == 66)
        let error = try #require(try missingCatalog.json()["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("nope.json") == true)
        #expect(try CommandRunner.run(["match", store]).status == 64)
    }
}
