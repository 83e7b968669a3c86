import Foundation
import Testing

/// Every documented key is present in `--json` output, written as `null` when absent: jobs
/// parse by name and must never find a documented key missing.
@Suite(.enabled(if: CommandRunner.isAvailable && Samples.available, "needs the built executable and ../shared/samples"))
struct JSONContractNullsTests {
    private func expectKeys(_ keys: [String], in object: [String: Any], null nullKeys: [String], _ label: String) {
        for key in keys { #expect(object[key] != nil, "\(label): key \(key) is missing") }
        for key in nullKeys { #expect(object[key] is NSNull, "\(label): \(key) should be null") }
    }

    @Test func inspectWritesNullsForWhatAnOldStoreLacks() throws {
        let dir = try TemporaryDirectory()
        let kik = try dir.copySample("stores/plaso_ios_kik.sqlite")
        let json = try CommandRunner.run(["inspect", "--json", kik]).json()
        let metadata = try #require(json["metadata"] as? [String: Any])
        expectKeys(
            ["uuid", "storeType", "frameworkVersion", "maximumFrameworkVersion", "versionIdentifiers", "versionHashes",
             "versionHashesVersion", "hashesDigest", "versionChecksum", "autoVacuumLevel", "otherKeys"],
            in: metadata, null: ["hashesDigest", "versionChecksum", "maximumFrameworkVersion"], "kik metadata")
        expectKeys(["model", "integrity", "error"], in: json, null: ["model", "integrity", "error"], "kik report")
        let entities = try #require(json["entities"] as? [[String: Any]])
        #expect(entities.allSatisfy { $0["table"] != nil })
        let indexes = try #require(json["indexes"] as? [[String: Any]])
        #expect(indexes.allSatisfy { $0["sql"] != nil }, "automatic indexes have sql: null")
    }

    @Test func inspectModelEntitiesCarryEveryKey() throws {
        let dir = try TemporaryDirectory()
        let store = try dir.copySample("stores/plaso_ios_netusage.sqlite")
        let json = try CommandRunner.run(["inspect", "--json", store]).json()
        let model = try #require(json["model"] as? [String: Any])
        let entities = try #require(model["entities"] as? [[String: Any]])
        for entity in entities {
            expectKeys(["name", "versionHash", "superentity", "isAbstract", "versionHashModifier"], in: entity, null: [], "entity")
            for attribute in entity["attributes"] as? [[String: Any]] ?? [] {
                expectKeys(["defaultValue", "versionHashModifier"], in: attribute, null: [], "attribute")
            }
            for relationship in entity["relationships"] as? [[String: Any]] ?? [] {
                expectKeys(["inverse"], in: relationship, null: [], "relationship")
            }
        }
    }

    @Test func matchAndCatalogWriteTheirNulls() throws {
        let dir = try TemporaryDirectory()
        let catalog = try dir.copySampleItem("lineages/SyncMetadata/SyncMetadata.xcdatamodeld")
        let store = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let match = try CommandRunner.run(["match", store, "--catalog", catalog, "--json"]).json()
        expectKeys(["version", "error"], in: match, null: ["error"], "match")
        let diagnosis = try #require(match["diagnosis"] as? [String: Any])
        expectKeys(["errorCode", "adoptAs"], in: diagnosis, null: ["errorCode", "adoptAs"], "diagnosis")
        let candidates = try #require(match["candidates"] as? [[String: Any]])
        for difference in candidates.flatMap({ $0["differences"] as? [[String: Any]] ?? [] }) {
            expectKeys(["entity", "table", "column"], in: difference, null: [], "difference")
        }
        let show = try CommandRunner.run(["catalog", "show", "--json", catalog]).json()
        expectKeys(["app", "currentVersion", "latestVersion", "error"], in: show, null: ["error"], "catalog show")
        let missing = try CommandRunner.run(["inspect", "--json", dir.path("absent.sqlite")]).json()
        let error = try #require(missing["error"] as? [String: Any])
        expectKeys(["message", "hint", "exitStatus"], in: error, null: [], "error")
    }
}
