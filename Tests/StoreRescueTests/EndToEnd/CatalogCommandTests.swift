import Foundation
import Testing

/// `storerescue catalog show` and `catalog learn` run as a process. They need `CatalogCommand`
/// registered in `StoreRescueCommand` (done when the catalog work is merged); until then the
/// suite is skipped.
@Suite(.enabled(if: CatalogCommandAvailability.isRegistered, "catalog is not registered in this build of storerescue"))
struct CatalogCommandTests {
    static let journal = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Journal/catalog.json").path

    /// Review rv10: every command taking a catalog reads one given through a symbolic link with
    /// its relative paths resolved from the file the link leads to (they failed with exit 66).
    @Test func aLinkedCatalogWorksForEveryCommandThatTakesOne() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path("cat"), withIntermediateDirectories: true)
        let link = dir.path("cat/link.json")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: Self.journal)
        let store = dir.path("Journal.sqlite")
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: Self.journal).deletingLastPathComponent().path + "/Journal.sqlite", toPath: store)
        let runs: [(String, [String], Int32)] = [
            ("catalog show", ["catalog", "show", link], 0),
            ("match", ["match", store, "--catalog", link], 0),
            ("migrate --dry-run", ["migrate", store, "--catalog", link, "--dry-run"], 0),
            ("create", ["create", "--catalog", link, "--version", "V2", dir.path("new.sqlite")], 0),
            ("salvage", ["salvage", store, "--catalog", link, "--out", dir.path("salvaged.sqlite")], 0),
            ("upgrade --dry-run", ["upgrade", store, "--catalog", link, "--dry-run", "--backup-dir", dir.path("backups")], 0),
        ]
        for (name, arguments, status) in runs {
            let result = try CommandRunner.run(arguments, timeout: 120)
            #expect(result.status == status, "\(name): \(result.status) \(result.stderr)")
            #expect(!result.stderr.contains("no such folder"), "\(name): \(result.stderr)")
        }
    }

    @Test func showTextOnTheJournalSample() throws {
        let result = try CommandRunner.run(["catalog", "show", Self.journal])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let text = result.stdout
        #expect(text.hasPrefix("\(Self.journal)\n  App             Journal\n  Versions        4\n  Current         V4\n"))
        for header in ["Version V1\n", "Version V2\n", "Version V3\n", "Version V4 (current)\n"] {
            #expect(text.contains("\n" + header), "missing \(header)")
        }
        #expect(text.contains("  Identifiers     \"4\"\n"))
        #expect(text.contains("  V3 → V4  custom       map 1  gives every entry a new unique id; adds isFavorite and photo\n"))
        #expect(text.contains("\nPlan\n  ok: Core Data can run these stages\n"))
        #expect(text.hasSuffix("Warnings\n  none\n"))
        // Every entity line carries a 44-character base64 hash.
        let hashLines = text.split(separator: "\n").filter { $0.hasPrefix("    Entry ") || $0.hasPrefix("    Tag ") }
        #expect(hashLines.count == 8)
        #expect(hashLines.allSatisfy { $0.split(separator: " ").last?.count == 44 })
    }

    @Test func showJSONOnTheJournalSample() throws {
        let result = try CommandRunner.run(["catalog", "show", "--json", Self.journal])
        #expect(result.status == 0)
        let json = try result.json()
        #expect(json["app"] as? String == "Journal")
        #expect(json["currentVersion"] as? String == "V4" && json["latestVersion"] as? String == "V4")
        #expect(json["error"] is NSNull)
        #expect((json["duplicateChecksums"] as? [Any])?.isEmpty == true)
        let versions = try #require(json["versions"] as? [[String: Any]])
        #expect(versions.map { $0["name"] as? String } == ["V1", "V2", "V3", "V4"])
        #expect(versions.map { $0["origin"] as? String } == ["xcdatamodel", "xcdatamodel", "xcdatamodel", "inline"])
        #expect(versions.map { $0["entityCount"] as? Int } == [2, 2, 2, 2])
        #expect(versions.map { $0["isCurrent"] as? Bool } == [false, false, false, true])
        #expect(versions[1]["versionIdentifiers"] as? [String] == ["2"])
        let entities = try #require(versions[0]["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["Entry", "Tag"])
        #expect(entities.allSatisfy { ($0["versionHash"] as? String)?.count == 44 })
        #expect(versions.allSatisfy { ($0["versionChecksum"] as? String)?.count == 44 && ($0["hashesDigest"] as? String)?.count == 88 })
        let stages = try #require(json["stages"] as? [[String: Any]])
        #expect(stages.map { $0["kind"] as? String } == ["lightweight", "lightweight", "custom"])
    }

    @Test func showReportsDuplicateChecksumsAndErrors() throws {
        let dir = try TemporaryDirectory()
        let entity = #"{"name": "Note", "attributes": [{"name": "title", "type": "String", "default": "D"}]}"#
        let catalog = #"{"app": "Notes", "versions": [{"name": "A", "entities": [ENTITY]}, {"name": "B", "entities": [OTHER]}]}"#
            .replacingOccurrences(of: "ENTITY", with: entity)
            .replacingOccurrences(of: "OTHER", with: entity.replacingOccurrences(of: "\"D\"", with: "\"E\""))
        try Data(catalog.utf8).write(to: dir.url.appendingPathComponent("notes.json"))
        let text = try CommandRunner.run(["catalog", "show", dir.path("notes.json")])
        #expect(text.status == 0)
        #expect(text.stdout.contains("warning: versions \"A\", \"B\" have the same checksum"))
        let json = try CommandRunner.run(["catalog", "show", "--json", dir.path("notes.json")]).json()
        let duplicates = try #require(json["duplicateChecksums"] as? [[String: Any]])
        #expect(duplicates.count == 1 && duplicates[0]["versions"] as? [String] == ["A", "B"])

        try Data(#"{"app": "Notes", "versions": [{"name": "A", "entities": [{"name": "N", "attributes": [{"name": "t", "type": "Strng"}]}]}]}"#.utf8)
            .write(to: dir.url.appendingPathComponent("bad.json"))
        let bad = try CommandRunner.run(["catalog", "show", dir.path("bad.json")])
        #expect(bad.status == 65)
        #expect(bad.stderr.hasPrefix("Error: \(dir.path("bad.json")): versions[0].entities[0].attributes[0].type: unknown type \"Strng\""))
        #expect(bad.stderr.contains("\nTry: "))
        let badJSON = try CommandRunner.run(["catalog", "show", "--json", dir.path("bad.json")])
        #expect(badJSON.status == 65)
        let error = try #require(try badJSON.json()["error"] as? [String: Any])
        #expect(error["exitStatus"] as? Int == 65)
        let missing = try CommandRunner.run(["catalog", "show", dir.path("absent.json")])
        #expect(missing.status == 66)
        #expect(missing.stderr.hasPrefix("Error: \(dir.path("absent.json")): no such file or folder"))
    }

    @Test(.enabled(if: Samples.available)) func learnCreatesACatalogAndRefusesADuplicateName() throws {
        let dir = try TemporaryDirectory()
        let store = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let catalog = dir.path("sync.json")
        let usage = try CommandRunner.run(["catalog", "learn", store, "--catalog", catalog])
        #expect(usage.status == 64)
        let created = try CommandRunner.run(["catalog", "learn", store, "--catalog", catalog, "--name", "V3", "--app", "Sync"])
        #expect(created.status == 0)
        #expect(created.stdout.hasPrefix("\(catalog): created\nAdded version \"V3\" (2 entities, identifiers \"\")\n"))
        #expect(created.stdout.contains("  Checksum  GuHTA/HnFj+qOrWtQ82hDdTCKqWSki1JPVIij/T8COs=\n"))
        let again = try CommandRunner.run(["catalog", "learn", store, "--catalog", catalog, "--name", "V3"])
        #expect(again.status == 73)
        #expect(again.stderr.hasPrefix("Error: \(catalog): the catalog already has a version named \"V3\"; it is not replaced\nTry: "))
        let dry = try CommandRunner.run(["catalog", "learn", store, "--catalog", catalog, "--name", "V3b", "--dry-run", "--json"])
        #expect(dry.status == 0)
        let json = try dry.json()
        #expect(json["written"] as? Bool == false && json["createdCatalog"] as? Bool == false)
        #expect((json["warnings"] as? [String])?.first?.contains("same checksum as \"V3\"") == true)
        #expect((json["version"] as? [String: Any])?["name"] as? String == "V3b")
        let shown = try CommandRunner.run(["catalog", "show", "--json", catalog]).json()
        #expect((shown["versions"] as? [[String: Any]])?.map { $0["name"] as? String } == ["V3"])

        let old = try dir.copySample("stores/plaso_ios_kik.sqlite")
        let noCache = try CommandRunner.run(["catalog", "learn", old, "--catalog", catalog, "--name", "Kik"])
        #expect(noCache.status == 65)
        #expect(noCache.stderr.contains("it has no Z_MODELCACHE table (framework 519 predates the model cache)"))
        #expect(noCache.stderr.contains("Try: learn this version from a model file instead"))
    }

    /// No file descriptor left to list a model folder or open one of its files (`ulimit -n` set
    /// low in a child shell): exit 74 with "raise the limit on open files", never 65 "cannot
    /// list the folder … check out the model folder again" or "copy the whole .momd folder out
    /// of the app bundle again" (a review, under `ulimit -n 5`). Every model source `catalog
    /// show` reads is run under limits 4 to 8; each must meet the limit at least once, so the
    /// check cannot pass without reaching it.
    @Test(.enabled(if: Samples.available, "needs the shared samples"))
    func noFileDescriptorLeftForAModelSourceIsTheLimitNotTheModel() throws {
        let samples = try #require(Samples.root).path
        let journalFolder = (Self.journal as NSString).deletingLastPathComponent
        let sources = [
            "xcdatamodeld": samples + "/lineages/Employees/MWKCoreDataTests.xcdatamodeld",
            "xcdatamodel": journalFolder + "/Journal.xcdatamodeld/Journal 3.xcdatamodel",
            "momd": samples + "/models/Model.momd",
            "mom": samples + "/models/Model.momd/Model.mom",
            "json": Self.journal,
        ]
        var metTheLimit: Set<String> = []
        for (kind, source) in sources {
            for limit in 4...8 {
                let result = try BackupFixtures.run(
                    "/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$@\"", "sh", CommandRunner.executable.path, "catalog", "show", source])
                let name = "\(kind) under ulimit -n \(limit)"
                #expect(![65, 66].contains(result.status), "\(name): \(result.standardError)")
                #expect(!result.standardError.contains("check out the model folder again"), "\(name): \(result.standardError)")
                #expect(!result.standardError.contains("copy the whole .momd folder"), "\(name): \(result.standardError)")
                if result.standardError.contains("cannot be opened, no file descriptor left") {
                    metTheLimit.insert(kind)
                    #expect(result.status == 74, "\(name): \(result.standardError)")
                    #expect(result.standardError.contains("Try: not a lack of disk space: raise the limit on open files"), "\(name)")
                } else if result.status != 0 {
                    Issue.record("\(name): exit \(result.status), not the limit: \(result.standardError)")
                }
            }
        }
        #expect(metTheLimit == Set(sources.keys))
    }

    /// An `.xcdatamodeld` copied without its extension is known by its `.xcdatamodel` children;
    /// no file descriptor left to list them read as "is a folder but not a model folder" (65)
    /// with nothing said of the limit (a review). Under limits 4 to 8 every run ends read, or
    /// with exit 74 and the open-files hint; at least one must meet the limit and one succeed.
    @Test func noFileDescriptorLeftToListAFolderWithoutExtensionIsTheLimit() throws {
        let temp = try TemporaryDirectory()
        let folder = temp.path("JournalModel")
        let bundle = ((Self.journal as NSString).deletingLastPathComponent as NSString).appendingPathComponent("Journal.xcdatamodeld")
        try FileManager.default.copyItem(atPath: bundle, toPath: folder)
        var metTheLimit = false
        var succeeded = false
        for limit in 4...8 {
            let result = try BackupFixtures.run(
                "/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$@\"", "sh", CommandRunner.executable.path, "catalog", "show", folder])
            let name = "ulimit -n \(limit)"
            if result.status == 0 {
                succeeded = true
                continue
            }
            #expect(!result.standardError.contains("not a model folder"), "\(name): \(result.standardError)")
            #expect(result.status == 74, "\(name): \(result.standardError)")
            #expect(result.standardError.contains(": cannot be opened, no file descriptor left"), "\(name): \(result.standardError)")
            #expect(result.standardError.contains("\nTry: not a lack of disk space: raise the limit on open files"), "\(name)")
            if result.status == 74 { metTheLimit = true }
        }
        #expect(metTheLimit)
        #expect(succeeded)
    }
}

enum CatalogCommandAvailability {
    /// True when the built executable lists the `catalog` subcommand.
    static let isRegistered: Bool = {
        guard CommandRunner.isAvailable, let help = try? CommandRunner.run(["--help"]) else { return false }
        return help.stdout.contains("catalog")
    }()
}
