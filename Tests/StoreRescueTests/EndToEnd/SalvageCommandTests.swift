import Foundation
import Testing
@testable import StoreRescue

enum SalvageCommandAvailability {
    /// True when the built executable knows `salvage`.
    static let isRegistered: Bool = {
        guard CommandRunner.isAvailable, let help = try? CommandRunner.run(["salvage", "--help"]) else { return false }
        return help.status == 0 && help.stdout.contains("--out")
    }()
}

/// `storerescue salvage` run as a process: its report as text and JSON, its errors, its exit
/// statuses.
@Suite(.enabled(if: SalvageCommandAvailability.isRegistered, "the storerescue executable is not built or has no salvage subcommand"))
struct SalvageCommandTests {
    /// Every key `Docs/JSON-OUTPUT.md` documents for `salvage --json`.
    static let reportKeys = [
        "store", "output", "mode", "version", "versionSource", "schemaSource", "file", "writeAheadLog", "pages", "tables",
        "lostAndFound", "totals", "rowsCopiedPageByPage", "indexEntriesBuiltPageByPage", "metadata", "notes", "seconds", "error",
    ]
    static let tableKeys = ["name", "disposition", "reason", "rootPage", "identifiedBy", "rows", "pages", "entities", "requiredValuesMissing"]
    static let rowCountKeys = [
        "recovered", "partial", "unreadable", "notFitting", "deleted", "duplicatesResolved", "conflictsDropped", "danglingCleared",
        "danglingRowsDropped", "valuesFixed",
    ]

    static func expectKeys(_ keys: [String], in object: [String: Any]?, null nullKeys: [String] = [], _ label: String) {
        for key in keys { #expect(object?[key] != nil, "\(label): \(key) is missing") }
        for key in nullKeys { #expect(object?[key] is NSNull, "\(label): \(key) should be null") }
    }

    @Test func plainSalvageAsText() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        try SalvageFixtures.zeroPage(4, of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let result = try CommandRunner.run(["salvage", store, "--out", output])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "no progress bar when stderr is not a terminal")
        #expect(result.stdout.hasPrefix("Salvaged \(store) into \(output) in "))
        #expect(result.stdout.contains("  Output          plain SQLite database\n"))
        #expect(result.stdout.contains("\nTables\n"))
        #expect(result.stdout.contains("  people "))
        #expect(result.stdout.contains("Lost and found"))
        #expect(FileManager.default.fileExists(atPath: output))
    }

    @Test func plainSalvageJSONHasEveryDocumentedKey() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let output = directory.path("out.sqlite")
        let json = try CommandRunner.run(["salvage", store, "--out", output, "--json"]).json()
        Self.expectKeys(Self.reportKeys, in: json, null: ["version", "versionSource", "writeAheadLog", "metadata", "error"], "report")
        #expect(json["mode"] as? String == "plain")
        Self.expectKeys(["size", "pageSize", "pageSizeSource", "reservedBytes", "textEncoding", "headerIntact", "pageCount",
                         "availablePages", "autoVacuum"], in: json["file"] as? [String: Any], "file")
        Self.expectKeys(["total", "read", "missing", "damaged", "tableLeaf", "tableInterior", "indexLeaf", "indexInterior", "overflow",
                         "freelistTrunk", "freelistLeaf", "pointerMap", "zeroed", "unknown"], in: json["pages"] as? [String: Any], "pages")
        let tables = try #require(json["tables"] as? [[String: Any]])
        #expect(!tables.isEmpty)
        for table in tables {
            Self.expectKeys(Self.tableKeys, in: table, null: ["reason"], "table")
            Self.expectKeys(["schemaTree", "pointerMap", "recordShape"], in: table["identifiedBy"] as? [String: Any], "identifiedBy")
            Self.expectKeys(["read", "damaged", "missing"], in: table["pages"] as? [String: Any], "table pages")
            Self.expectKeys(Self.rowCountKeys, in: table["rows"] as? [String: Any], "table rows")
        }
        Self.expectKeys(["rows", "rowsUnreadable", "deletedRows", "tables"], in: json["lostAndFound"] as? [String: Any], "lostAndFound")
        Self.expectKeys(Self.rowCountKeys, in: json["totals"] as? [String: Any], "totals")
    }

    @Test func coreDataSalvageJSONCarriesVersionAndMetadata() throws {
        let directory = try TemporaryDirectory()
        let (store, catalog) = try Self.fixtureStoreAndCatalog(in: directory)
        let output = directory.path("out.sqlite")
        let result = try CommandRunner.run(["salvage", store, "--out", output, "--catalog", catalog, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.json()
        Self.expectKeys(Self.reportKeys, in: json, null: ["writeAheadLog", "error"], "report")
        #expect(json["mode"] as? String == "coreData")
        #expect(json["version"] as? String == "V1")
        #expect(json["versionSource"] as? String == "metadata")
        let metadata = try #require(json["metadata"] as? [String: Any])
        Self.expectKeys(["source", "uuid", "frameworkVersion", "modelCache", "includesPersistentHistory"], in: metadata, "metadata")
        #expect(metadata["uuid"] as? String == CoreDataSalvageFixtures.uuid.uuidString)
        let item = try #require((json["tables"] as? [[String: Any]])?.first { $0["name"] as? String == "ZITEM" })
        let entities = try #require(item["entities"] as? [[String: Any]])
        #expect(entities.compactMap { $0["name"] as? String } == ["Item", "SpecialItem"])
    }

    @Test func errorsAreTwoLinesAndAStatus() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try SalvageFixtures.plainDatabase(at: store, rows: 20)
        let output = directory.path("out.sqlite")
        #expect(FileManager.default.createFile(atPath: output, contents: Data("x".utf8)))

        let exists = try CommandRunner.run(["salvage", store, "--out", output])
        #expect(exists.status == 73)
        #expect(exists.stderr == "Error: \(output) already exists; refusing to overwrite it\nTry: choose a new path; salvage never replaces a file: move the existing one away first if it is no longer needed\n")
        #expect(exists.stdout.isEmpty)

        let json = try CommandRunner.run(["salvage", store, "--out", output, "--json"])
        #expect(json.status == 73)
        let error = try #require(try json.json()["error"] as? [String: Any])
        #expect(error["exitStatus"] as? Int == 73)
        #expect(error["message"] as? String == "\(output) already exists; refusing to overwrite it")

        let missing = try CommandRunner.run(["salvage", directory.path("gone.sqlite"), "--out", directory.path("new.sqlite")])
        #expect(missing.status == 66)
        #expect(missing.stderr.hasPrefix("Error: \(directory.path("gone.sqlite")): no such file\nTry: "))

        let usage = try CommandRunner.run(["salvage", store, "--out", directory.path("new.sqlite"), "--version", "V1"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--version goes with --catalog."))

        let noCatalog = try CommandRunner.run(["salvage", store, "--out", directory.path("new.sqlite"), "--catalog", directory.path("none.json")])
        #expect(noCatalog.status == 66)
        #expect(noCatalog.stderr.hasPrefix("Error: \(directory.path("none.json")): no such file or folder\nTry: "))
        #expect(!FileManager.default.fileExists(atPath: directory.path("new.sqlite")))
    }

    /// An output name with no room for its `-journal` in the file system (255-byte names): refused
    /// before anything is read, exit 73 with the longest name that fits. It used to fail at the
    /// last step, moving the store into place, with exit 74 and "free disk space"; a name of 248
    /// to 255 bytes was even created, and the app could then not write its -wal beside it.
    @Test func anOutputNameWithNoRoomForItsJournalIsRefused() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try SalvageFixtures.plainDatabase(at: store, rows: 20)
        let limit = pathconf(directory.url.path, Int32(_PC_NAME_MAX))
        try #require(limit > 8)
        let name = String(repeating: "n", count: limit - 7)
        let result = try CommandRunner.run(["salvage", store, "--out", directory.path(name)])
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr == "Error: cannot create \(directory.path(name)): its name is \(limit - 7) bytes, and with its -journal (\(limit + 1)) it is longer than the \(limit) this file system allows\nTry: choose a file name of at most \(limit - 8) bytes\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["store.sqlite"])
        let fits = String(repeating: "f", count: limit - 8)
        #expect(try CommandRunner.run(["salvage", store, "--out", directory.path(fits)]).status == 0)
    }

    /// The output is checked before the catalog is loaded: an occupied output is refused even
    /// when the catalog is missing too.
    @Test func occupiedOutputIsRefusedBeforeTheCatalogIsRead() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try SalvageFixtures.plainDatabase(at: store, rows: 20)
        let output = directory.path("out.sqlite")
        #expect(FileManager.default.createFile(atPath: output, contents: Data("x".utf8)))
        let result = try CommandRunner.run(["salvage", store, "--out", output, "--catalog", directory.path("none.json")])
        #expect(result.status == 73)
    }

    /// SIGTERM while salvaging (sent once the private folder exists, so mid-run): the command
    /// stops at its next check, removes what it wrote, and exits 75 with the interrupted message.
    @Test func terminationIsCleanedUp() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL);
            WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400000)
            INSERT INTO t SELECT i, 'row ' || i, i / 3.0 FROM c;
            """)
        let outputFolder = directory.path("out")
        try FileManager.default.createDirectory(atPath: outputFolder, withIntermediateDirectories: true)
        let output = outputFolder + "/salvaged.sqlite"
        let process = Process()
        process.executableURL = CommandRunner.executable
        process.arguments = ["salvage", store, "--out", output]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning,
            !((try? FileManager.default.contentsOfDirectory(atPath: outputFolder)) ?? []).contains(where: { $0.hasPrefix(".salvage" + TemporaryItems.marker) })
        {
            Thread.sleep(forTimeInterval: 0.002)
        }
        process.terminate()
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 75, "\(stderr)")
        // Stopped by itself (it polls between pages), or, on a machine too loaded for that within
        // the 1 s grace, by the grace timer, which removes the temporaries too.
        #expect(stderr == "Error: interrupted; partial files were removed and the store was left untouched\nTry: run the command again when it can finish\n"
            || stderr.hasPrefix("Error: interrupted by SIGTERM; temporary files were removed and nothing was replaced\n"), "\(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outputFolder).isEmpty, "nothing at the output, the private folder removed")
    }

    /// No file descriptor left (`ulimit -n`), at whatever point the limit is reached: a run that
    /// fails says so and removes its private folder as on any other failure. Under `ulimit -n 8`
    /// SQLite could create the new file but not its journal, and the folder (holding that empty
    /// file) stayed: removing it needs a descriptor to list it, and none was left (a review).
    @Test func noFileDescriptorLeftLeavesNoPrivateFolder() throws {
        for limit in 6...12 {
            let setup = try SalvageFailureTests.Setup()
            let result = try BackupFixtures.run("/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$0\" salvage \"$1\" --out \"$2\"",
                                                             CommandRunner.executable.path, setup.store, setup.output])
            if result.status == 0 {
                #expect(setup.outputFolderNames() == ["salvaged.sqlite"], "ulimit -n \(limit)")
                continue
            }
            #expect(setup.outputFolderNames().isEmpty, "ulimit -n \(limit), exit \(result.status): left behind: \(setup.outputFolderNames())")
            if result.standardError.hasPrefix("Error: writing \(setup.output)") {
                #expect(result.status == ExitStatus.ioError.rawValue, "ulimit -n \(limit): \(result.standardError)")
                #expect(result.standardError.contains("found no file descriptor left"), "ulimit -n \(limit): \(result.standardError)")
                #expect(result.standardError.contains("Try: not a lack of disk space: raise the limit on open files"))
            }
        }
    }

    /// The Core Data salvage fixture's store in `directory`, and a catalog file of its version.
    /// The store has no model cache (create leaves it empty): the catalog is a file with the
    /// version inline, as `catalog learn` writes it.
    static func fixtureStoreAndCatalog(in directory: TemporaryDirectory) throws -> (store: String, catalog: String) {
        let store = directory.path("store.sqlite")
        try CoreDataSalvageFixtures.store(at: store)
        let catalog = directory.path("catalog.json")
        var file = CatalogFile(newAt: catalog, app: "Fixture")
        file.appendInlineVersion(CoreDataSalvageFixtures.version)
        try file.write()
        return (store, catalog)
    }

    /// True when `strace` can trace a child here (installed, and ptrace allowed).
    static let canInjectSystemCallFailures: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"),
            let probe = try? BackupFixtures.run("/usr/bin/strace", ["-f", "-o", "/dev/null", "-e", "trace=fdatasync", "/bin/true"])
        else { return false }
        return probe.status == 0
    }()

    /// An I/O error on SQLite's own `fdatasync` (injected by `strace`: the Nth call of the
    /// process's main thread fails with EIO), wherever it falls in a Core Data salvage — the
    /// new store's creation, its switch out of and back into WAL mode: exit 74 naming the I/O
    /// error, nothing left, never exit 70 "failed its own check" (a review: the switch to WAL
    /// mode reported "wal" while its header's commit failed, so the header still said rollback
    /// and the salvage's check refused it as a bug). A sync SQLite ignores (a folder's) or one
    /// past the run's last changes nothing: exit 0.
    @Test(.enabled(if: canInjectSystemCallFailures, "strace is not installed or cannot trace here"))
    func anIOErrorOnSQLitesSyncIsAnIOErrorNotAFailedCheck() throws {
        let directory = try TemporaryDirectory()
        let (store, catalog) = try Self.fixtureStoreAndCatalog(in: directory)
        try FileManager.default.createDirectory(atPath: directory.path("out"), withIntermediateDirectories: true)
        var ioErrors = 0
        for call in 1...24 {
            let output = directory.path("out/salvaged-\(call).sqlite")
            let result = try BackupFixtures.run("/usr/bin/strace", [
                "-f", "-o", "/dev/null", "-e", "trace=fdatasync", "-e", "inject=fdatasync:error=EIO:when=\(call)",
                CommandRunner.executable.path, "salvage", store, "--catalog", catalog, "--out", output,
            ])
            let left = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path("out"))) ?? []).sorted()
            if result.status == 0 {
                #expect(left == ["salvaged-\(call).sqlite"], "fdatasync \(call)")
                try FileManager.default.removeItem(atPath: output)
                continue
            }
            ioErrors += 1
            #expect(result.status == ExitStatus.ioError.rawValue, "fdatasync \(call): \(result.standardError)")
            #expect(result.standardError.hasPrefix("Error: writing \(output) failed: disk I/O error (SQLite code "), "fdatasync \(call): \(result.standardError)")
            #expect(result.standardError.contains("; nothing was left at \(output)\nTry: free disk space or raise the file-size limit"))
            #expect(left.isEmpty, "fdatasync \(call): left behind: \(left)")
        }
        #expect(ioErrors >= 8, "the injected errors reached SQLite's syncs")
    }

    /// The file-size limit (`ulimit -f`) hit while writing: exit 74, a clear message, nothing left.
    @Test func fileSizeLimitIsAClearErrorAndLeavesNothing() throws {
        let setup = try SalvageFailureTests.Setup(rows: 4000)
        let before = try setup.inputSnapshot()
        // 64 blocks of 512 bytes: far less than the salvaged store.
        let result = try BackupFixtures.run("/bin/sh", ["-c", "ulimit -f 64 && exec \"$0\" salvage \"$1\" --out \"$2\"",
                                                         CommandRunner.executable.path, setup.store, setup.output])
        #expect(result.status == ExitStatus.ioError.rawValue, "stderr: \(result.standardError)")
        #expect(result.standardError.hasPrefix("Error: writing \(setup.output) failed: "))
        #expect(result.standardError.contains("; nothing was left at \(setup.output)\nTry: free disk space or raise the file-size limit (ulimit -f), then run the command again\n"))
        #expect(setup.outputFolderNames().isEmpty)
        #expect(try setup.inputSnapshot() == before)
    }

    /// The file-size limit hit part way through the pages written behind SQLite (on the writer's
    /// own thread): the same exit 74 and message, nothing left, the input unchanged.
    @Test(arguments: [1, 2])
    func fileSizeLimitPartWayThroughThePagesIsAClearError(thirds: Int) throws {
        let setup = try SalvageFailureTests.Setup(rows: 20_000)
        let before = try setup.inputSnapshot()
        let size = try #require(FileManager.default.attributesOfItem(atPath: setup.store)[.size] as? Int)
        let blocks = size * thirds / 3 / 512
        let result = try BackupFixtures.run("/bin/sh", ["-c", "ulimit -f \(blocks) && exec \"$0\" salvage \"$1\" --out \"$2\" --json",
                                                         CommandRunner.executable.path, setup.store, setup.output])
        #expect(result.status == ExitStatus.ioError.rawValue, "stderr: \(result.standardError)")
        // A third of the way: in the pages written behind SQLite, whose writer names the
        // system's reason; two thirds: past them here (the salvaged store is smaller than the
        // damaged one, which has free pages), in SQLite's own writes, or still among them.
        let reasons = thirds == 1 ? ["File too large"] : ["File too large", "disk I/O error"]
        #expect(reasons.contains { result.standardOutput.contains("\"writing \(setup.output) failed: \($0)") }, "\(result.standardOutput)")
        #expect(result.standardOutput.contains("; nothing was left at \(setup.output)\""), "\(result.standardOutput)")
        #expect(setup.outputFolderNames().isEmpty)
        #expect(try setup.inputSnapshot() == before)
    }

    /// Killed outright (SIGKILL, no chance to clean up) at some point: whatever the moment, the
    /// output path holds nothing or the finished store — never a partial one.
    @Test func killedMidWayNeverLeavesAPartialStore() throws {
        let setup = try SalvageFailureTests.Setup(rows: 6000)
        let expected = try SalvageFixtures.rows(of: setup.store)["people"]
        for delay in [0.02, 0.06] {
            try? FileManager.default.removeItem(atPath: setup.output)
            let process = Process()
            process.executableURL = CommandRunner.executable
            process.arguments = ["salvage", setup.store, "--out", setup.output]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if FileManager.default.fileExists(atPath: setup.output) {
                #expect(try SalvageFixtures.rows(of: setup.output)["people"] == expected, "a store at the output is the finished one")
            }
            #expect(!setup.outputFolderNames().contains { $0 != "salvaged.sqlite" && !$0.hasPrefix(".salvage" + TemporaryItems.marker) })
        }
    }
}
