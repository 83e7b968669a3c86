import Foundation
import Testing

/// `migrate`, `upgrade` and `adopt` with a catalog that cannot be loaded print their whole report,
/// `status` `failed`, as every other failure of theirs does (`Docs/JSON-OUTPUT.md`: one object; a
/// failure before the plan leaves its parts empty). Review rv8 #5: they printed a bare
/// `{"error"}`, so a job reading `.status` found null.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct CatalogLoadFailureReportTests {
    static let upgradeKeys: Set<String> = [
        "command", "store", "catalog", "dryRun", "status", "source", "target", "phases", "backup", "adoption", "migration",
        "refusals", "published", "fallback", "recovered", "notes", "seconds", "error", "staleTemporariesRemoved",
    ]
    static let migrateKeys: Set<String> = [
        "store", "output", "catalog", "dryRun", "status", "source", "target", "notes", "hops", "linksToClear", "refusals",
        "planIssues", "requiredValuesAlreadyMissing", "result", "error", "staleTemporariesRemoved", "carriedColumns", "leftOutColumns",
        "carriedIndexes", "leftOutIndexes",
    ]

    /// A missing catalog (66) and one that is not a catalog (65).
    private func catalogs(in fixture: UpgradeFixture) throws -> [(path: String, status: Int)] {
        let invalid = fixture.directory.path("invalid.json")
        try Data("{\"formatVersion\": 1, \"versions\": ".utf8).write(to: URL(fileURLWithPath: invalid))
        return [(fixture.directory.path("no-such.json"), 66), (invalid, 65)]
    }

    @Test func upgradeAndAdoptReportTheFailure() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let before = try fixture.appFiles()
        for (catalog, status) in try catalogs(in: fixture) {
            for command in ["upgrade", "adopt"] {
                let result = try CommandRunner.run([command, store, "--catalog", catalog, "--backup-dir", fixture.backups, "--json"])
                #expect(result.status == Int32(status), "\(command) \(catalog): \(result.status) \(result.stderr)")
                let json = try result.json()
                #expect(Set(json.keys) == Self.upgradeKeys, "\(command): \(json.keys.sorted())")
                #expect(json["status"] as? String == "failed" && json["command"] as? String == command)
                #expect(json["store"] as? String == store && json["catalog"] as? String == catalog)
                #expect((json["phases"] as? [Any])?.isEmpty == true && (json["refusals"] as? [Any])?.isEmpty == true)
                for key in ["source", "target", "backup", "adoption", "migration", "published", "fallback"] {
                    #expect(json[key] is NSNull, "\(command): \(key) should be null")
                }
                let error = try #require(json["error"] as? [String: Any])
                #expect(error["exitStatus"] as? Int == status && (error["message"] as? String)?.contains(catalog) == true)
            }
        }
        #expect(try fixture.appFiles() == before, "the store is untouched")
        #expect(!FileManager.default.fileExists(atPath: fixture.backups), "no backup is taken")
    }

    @Test func migrateReportsTheFailure() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let output = fixture.directory.path("out.sqlite")
        for (catalog, status) in try catalogs(in: fixture) {
            for dryRun in [false, true] {
                let result = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--json"] + (dryRun ? ["--dry-run"] : ["--out", output]))
                #expect(result.status == Int32(status), "\(catalog): \(result.status) \(result.stderr)")
                let json = try result.json()
                #expect(Set(json.keys) == Self.migrateKeys, "\(json.keys.sorted())")
                #expect(json["status"] as? String == "failed" && json["dryRun"] as? Bool == dryRun)
                #expect(json["catalog"] as? String == catalog && json["store"] as? String == store)
                #expect(dryRun ? json["output"] is NSNull : json["output"] as? String == output)
                #expect((json["hops"] as? [Any])?.isEmpty == true && json["result"] is NSNull && json["source"] is NSNull)
                #expect((json["carriedColumns"] as? [Any])?.isEmpty == true && (json["leftOutColumns"] as? [Any])?.isEmpty == true)
                #expect((json["carriedIndexes"] as? [Any])?.isEmpty == true && (json["leftOutIndexes"] as? [Any])?.isEmpty == true)
                let error = try #require(json["error"] as? [String: Any])
                #expect(error["exitStatus"] as? Int == status)
                #expect(!FileManager.default.fileExists(atPath: output))
            }
        }
        // Text mode is as it was: the error on stderr, nothing on stdout.
        let text = try CommandRunner.run(["migrate", store, "--catalog", fixture.directory.path("no-such.json"), "--out", output])
        #expect(text.status == 66 && text.stdout.isEmpty && text.stderr.hasPrefix("Error: ") && text.stderr.contains("Try: "), "\(text.stderr)")
    }
}
