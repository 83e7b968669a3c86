import Foundation
import Testing
@testable import StoreRescue

/// `storerescue inspect` run as a process: exit statuses, JSON contract, messages.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct InspectCommandTests {
    @Test func usageErrorsExit64() throws {
        let noArgument = try CommandRunner.run(["inspect"])
        #expect(noArgument.status == 64)
        #expect(noArgument.stderr.contains("Missing expected argument"))
        let unknownFlag = try CommandRunner.run(["inspect", "x.sqlite", "--frobnicate"])
        #expect(unknownFlag.status == 64)
    }

    @Test func missingInputExits66WithWhatToTry() throws {
        let dir = try TemporaryDirectory()
        let result = try CommandRunner.run(["inspect", dir.path("absent.sqlite")])
        #expect(result.status == 66)
        #expect(result.stderr.contains("Error: \(dir.path("absent.sqlite")): no such file"))
        #expect(result.stderr.contains("Try: "))
        #expect(!result.stderr.contains("Fatal error"))
    }

    /// No file descriptor left to open the store (`ulimit -n` set low in a child shell, so the
    /// test's own limit is untouched): exit 74 with "raise the limit on open files", never 66
    /// "run as a user that can read the file" (a review: `salvage` under `ulimit -n 5`; `inspect`,
    /// `match` and `backup` read the same way). Each command is run under limits 5 to 8; at least
    /// one must meet the limit on the store itself, so the check cannot pass without it.
    @Test(.enabled(if: Samples.available, "needs the shared samples"))
    func noFileDescriptorLeftForTheStoreIsTheLimitNotTheFile() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try FileManager.default.copyItem(at: Samples.url("lineages/Employees/MWKCoreDataTests.sqlite"), to: URL(fileURLWithPath: store))
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        var metTheLimit: Set<String> = []
        for command in [["inspect", store], ["salvage", store, "--out", directory.path("out.sqlite")], ["backup", store, "--to", directory.path("backups")]] {
            for limit in 5...8 {
                let result = try BackupFixtures.run("/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$@\"", "sh", CommandRunner.executable.path] + command)
                let name = "\(command[0]) under ulimit -n \(limit)"
                #expect(!result.standardError.contains("run as a user that can read"), "\(name): \(result.standardError)")
                #expect(result.status != ExitStatus.noInput.rawValue, "\(name): \(result.standardError)")
                if result.standardError.hasPrefix("Error: \(store): cannot be opened, no file descriptor left") {
                    metTheLimit.insert(command[0])
                    #expect(result.status == ExitStatus.ioError.rawValue, "\(name)")
                    #expect(result.standardError.contains("Try: not a lack of disk space: raise the limit on open files"), "\(name)")
                }
                try? FileManager.default.removeItem(atPath: directory.path("out.sqlite"))
            }
        }
        #expect(metTheLimit == ["inspect", "salvage", "backup"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    /// The store opened but no descriptor left for its `-wal`: salvage stops there, naming the
    /// `-wal` and the limit (exit 74). It went on with a note ("it cannot be opened"), without
    /// the `-wal`'s committed frames, and failed only later, at its own new file.
    @Test(.enabled(if: Samples.available, "needs the shared samples"))
    func noFileDescriptorLeftForTheWALStopsTheSalvage() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.copyItem(at: Samples.url("lineages/SyncMetadata/SyncMetadata_V3.sqlite" + suffix), to: URL(fileURLWithPath: store + suffix))
        }
        let result = try BackupFixtures.run(
            "/bin/sh", ["-c", "ulimit -n 4 && exec \"$@\"", "sh", CommandRunner.executable.path, "salvage", store, "--out", directory.path("out.sqlite")])
        #expect(result.status == ExitStatus.ioError.rawValue, "\(result.standardError)")
        #expect(result.standardError.hasPrefix("Error: \(store)-wal: cannot be opened, no file descriptor left"), "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("out.sqlite")))
    }

    /// A `-wal` the user cannot read: the input is unreadable (66, "run as a user that can read
    /// the file"), not a failed private copy (74, "free space in $TMPDIR"), as a review found.
    /// Run as `nobody` through setpriv, since root reads any file.
    @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"),
          .enabled(if: Samples.available, "needs the shared samples"))
    func anUnreadableWALIsAnUnreadableInput() throws {
        let dir = try TemporaryDirectory()
        let store = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        for path in [dir.url.path, store, store + "-wal"] { chmod(path, path == dir.url.path ? 0o777 : 0o644) }
        chmod(store + "-wal", 0)
        let result = try CommandRunner.run(
            program: "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", CommandRunner.executable.path, "inspect", "--json", store])
        #expect(result.status == 66, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("\"kind\" : \"unreadable\"") || result.stdout.contains("\"kind\": \"unreadable\""), "\(result.stdout)")
        #expect(result.stdout.contains("run as a user that can read the file"))
        #expect(result.stdout.contains("\(store)-wal cannot be read: Permission denied"))
        chmod(store + "-wal", 0o644)
    }

    /// `largestPrimaryKey` is on every entity, `null` where there is none — a subentity (its
    /// root's table holds the keys), an empty table —, as the contract writes absent values;
    /// it was left out there.
    @Test func largestPrimaryKeyIsNullNotMissing() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.sqlite")
        try StoreFixtureBuilder.coreDataStore(at: path, plist: StoreFixtureBuilder.metadataPlist(hashes: ["Item": Data(repeating: 7, count: 32)]))
        try StoreFixtureBuilder.database(at: path, sql: """
            CREATE TABLE ZEMPTY (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            INSERT INTO Z_PRIMARYKEY VALUES (2, 'Book', 1, 0), (3, 'Empty', 0, 0);
            """)
        let result = try CommandRunner.run(["inspect", "--json", path])
        let entities = try #require(try result.json()["entities"] as? [[String: Any]], "\(result.stdout)")
        let byName = Dictionary(entities.compactMap { entity in (entity["name"] as? String).map { ($0, entity) } }, uniquingKeysWith: { first, _ in first })
        #expect(Set(byName.keys) == ["Item", "Book", "Empty"])
        #expect(byName["Item"]?["largestPrimaryKey"] as? Int == 3)
        for name in ["Book", "Empty"] {
            #expect(byName[name]?["largestPrimaryKey"] is NSNull, "\(name): \(byName[name] ?? [:])")
        }
    }

    /// A file name that is not UTF-8 cannot reach the tool (arguments are UTF-8 strings): the
    /// "no such file" says why and what to do (a review found it only said "no such file").
    @Test func aNameThatIsNotUTF8IsExplained() throws {
        let dir = try TemporaryDirectory()
        let name = dir.url.path + "/st\u{FFFD}ore.sqlite"
        let result = try CommandRunner.run(["inspect", name])
        #expect(result.status == 66)
        #expect(result.stderr.contains("the path holds bytes that are not UTF-8"), "\(result.stderr)")
    }

    /// A store whose full path is past SQLite's 512 bytes cannot be opened by SQLite: said so,
    /// with what to do (a review got "run as a user that can read the file").
    @Test(.enabled(if: Samples.available, "needs the shared samples"))
    func aPathPastSQLitesLimitIsExplained() throws {
        let dir = try TemporaryDirectory()
        var folder = dir.url.path
        for _ in 0..<6 { folder += "/" + String(repeating: "d", count: 100) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try dir.copySample("stores/swiftdata_CartKitSwiftData_v1.sqlite")
        try FileManager.default.moveItem(atPath: store, toPath: folder + "/s.sqlite")
        let result = try CommandRunner.run(["inspect", folder + "/s.sqlite"])
        #expect(result.status == 66)
        #expect(result.stderr.contains("longer than the 512 bytes SQLite opens"), "\(result.stderr)")
    }

    @Test func notAStoreExits65AndStillPrintsJSON() throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.path("notes.txt"), contents: Data("hello\n".utf8)))
        let result = try CommandRunner.run(["inspect", "--json", dir.path("notes.txt")])
        #expect(result.status == 65)
        let json = try result.json()
        #expect(json["kind"] as? String == "notSQLite")
        #expect(json["metadata"] is NSNull)
        #expect(json["model"] is NSNull)
        let error = try #require(json["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("not an SQLite database") == true)
        #expect(error["exitStatus"] as? Int == 65)
    }

    /// A model cache that inflates past `inspect`'s 128 MiB bound (129 MiB of zeros in 130 KiB)
    /// is refused with a finding, and refusing it costs no more memory than reading a sound store:
    /// both run under a 64 MiB data-size limit (`ulimit -d`). Inflating into a buffer that grew
    /// by doubling once took 158 MB and died there with SIGILL.
    @Test func aModelCacheBombIsRefusedWithoutItsMemory() throws {
        let dir = try TemporaryDirectory()
        let plist = StoreFixtureBuilder.metadataPlist(hashes: ["Item": Data(repeating: 7, count: 32)])
        let bomb = try RawDeflate.deflate(Data(count: 129 << 20), level: 9)
        #expect(bomb.count < 1 << 20)
        let sound = try RawDeflate.deflate(Data(repeating: 1, count: 4_096))
        for (name, cache) in [("bomb", bomb), ("sound", sound)] {
            try StoreFixtureBuilder.coreDataStore(at: dir.path("\(name).sqlite"), plist: plist)
            try StoreFixtureBuilder.run(dir.path("\(name).sqlite"), "INSERT INTO Z_MODELCACHE VALUES (?)", [.blob(cache)])
        }
        func inspect(_ name: String) throws -> CommandRunner.Result {
            try CommandRunner.run(program: "/bin/sh", [
                "-c", "ulimit -d 65536 && exec \"$0\" inspect --json \"$1\"", CommandRunner.executable.path, dir.path("\(name).sqlite"),
            ])
        }
        let refused = try inspect("bomb")
        #expect(refused.status == 0, "\(refused.stderr)")
        let findings = try #require(try refused.json()["findings"] as? [[String: Any]])
        let unreadable = try #require(findings.first { $0["code"] as? String == "model-cache-unreadable" })
        #expect((unreadable["message"] as? String)?.contains("expands past the limit of 134217728 bytes") == true)
        // The same store with a cache that inflates (not a model, so also unreadable, but for
        // what it holds): the limit lets a sound run through.
        let control = try inspect("sound")
        #expect(control.status == 0, "\(control.stderr)")
        let controlFindings = try #require(try control.json()["findings"] as? [[String: Any]])
        #expect(controlFindings.contains { $0["code"] as? String == "model-cache-unreadable" && ($0["message"] as? String)?.contains("expands past") == false })
    }

    /// A `Z_PLIST` that expands: under 200 bytes whose arrays share their children, a million
    /// values; or a 1 MiB blob referenced 200 times, 200 MiB. Every command reads a store's plists
    /// (`StoreMetadata.read`) within `PropertyListLimits.storeContent`, so each is refused as
    /// unreadable metadata inside 64 MiB of data. The default limits decoded the first (`inspect`
    /// died here of "failed to allocate"); the second took the build before to 1.4 GB (at 300).
    @Test(arguments: ["values", "bytes"])
    func anExpandingMetadataPlistIsRefusedWithoutItsMemory(expansion: String) throws {
        let plist = expansion == "values"
            ? HandMadePropertyList.expanding(doublings: 20) : HandMadePropertyList.sharedBlob(references: 200, blobBytes: 1 << 20)
        let refusal = expansion == "values" ? "more than the limit of 250000 values" : "more than the limit of 16777216 bytes of data and text"
        let dir = try TemporaryDirectory()
        let store = dir.path("store.sqlite")
        try StoreFixtureBuilder.coreDataStore(at: store, plist: plist.data)
        let result = try CommandRunner.run(program: "/bin/sh", [
            "-c", "ulimit -d 65536 && exec \"$0\" inspect --json \"$1\"", CommandRunner.executable.path, store,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.utf8.count < 1 << 20, "the report does not carry the expansion")
        let findings = try #require(try result.json()["findings"] as? [[String: Any]])
        let unreadable = try #require(findings.first { $0["code"] as? String == "metadata-unreadable" })
        #expect((unreadable["message"] as? String)?.contains(refusal) == true, "\(unreadable)")
    }

    @Test func symlinkIsRefusedUnlessAllowed() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.database(at: dir.path("real.db"), sql: "CREATE TABLE t(x);")
        try FileManager.default.createSymbolicLink(atPath: dir.path("link.db"), withDestinationPath: dir.path("real.db"))
        let refused = try CommandRunner.run(["inspect", dir.path("link.db")])
        #expect(refused.status == 66)
        #expect(refused.stderr.contains("--follow-symlinks"))
        let followed = try CommandRunner.run(["inspect", "--follow-symlinks", dir.path("link.db")])
        #expect(followed.status == 0)
        #expect(followed.stdout.contains("SQLite database (not Core Data)"))
    }

    @Test(.enabled(if: Samples.available)) func jsonContractOnTheWALSample() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store")
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        let result = try CommandRunner.run(["inspect", "--json", "--counts", path])
        #expect(result.status == 0)
        let json = try result.json()
        for key in ["path", "kind", "sidecars", "metadata", "model", "entities", "tables", "findings"] {
            #expect(json[key] != nil, "missing key \(key)")
        }
        #expect(json["path"] as? String == path)
        #expect(json["kind"] as? String == "coreDataStore")
        #expect(json["sidecars"] as? [String] == ["-wal", "-shm"])
        let metadata = try #require(json["metadata"] as? [String: Any])
        for key in ["uuid", "frameworkVersion", "versionIdentifiers", "versionHashes", "hashesDigest", "versionChecksum"] {
            #expect(metadata[key] != nil, "metadata.\(key)")
        }
        let model = try #require(json["model"] as? [String: Any])
        #expect(model["hashesMatchMetadata"] as? Bool == true)
        let modelEntities = try #require(model["entities"] as? [[String: Any]])
        #expect(modelEntities.allSatisfy { $0["name"] is String && ($0["versionHash"] as? String)?.count == 44 })
        let entities = try #require(json["entities"] as? [[String: Any]])
        let item = try #require(entities.first { $0["name"] as? String == "Item" })
        #expect(item["ent"] as? Int == 3 && item["superEnt"] as? Int == 0)
        #expect(item["max"] as? Int == 12)
        #expect(item["rowCount"] as? Int == 7)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.allSatisfy { $0["severity"] is String && $0["code"] is String && $0["message"] is String })
        #expect(try StoreFixtureBuilder.snapshot(of: dir.url.path) == before)
    }

    @Test(.enabled(if: Samples.available)) func textReportHasItsSections() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample("stores/plaso_ios_netusage.sqlite")
        let result = try CommandRunner.run(["inspect", path])
        #expect(result.status == 0)
        for section in ["Metadata", "Model cache", "Entities (Z_PRIMARYKEY)", "Tables", "Findings"] {
            #expect(result.stdout.contains("\n\(section)\n"), "section \(section)")
        }
        #expect(result.stdout.contains("recomputed hashes match the metadata"))
        #expect(result.stderr.isEmpty)
    }
}
