import Foundation
import Testing
@testable import StoreRescue

/// `storerescue migrate` as an operator runs it: text and JSON, every exit status, and the
/// guarantees that hold whatever happens (the store never written, nothing partial at the
/// output, nothing left behind), including a file-size limit, SIGTERM and kill -9.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct MigrateCommandTests {
    static let journal = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Journal")

    /// The Journal sample store, copied.
    private func journalStore(in dir: TemporaryDirectory) throws -> String {
        let store = dir.path("Journal.sqlite")
        try FileManager.default.copyItem(atPath: Self.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        return store
    }

    private var catalog: String { Self.journal.appendingPathComponent("catalog.json").path }

    /// Names in `folder` other than `known`.
    private func leftovers(_ folder: String, known: Set<String>) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { !known.contains($0) }.sorted()
    }

    @Test func textJSONAndDryRun() throws {
        let dir = try TemporaryDirectory()
        let store = try journalStore(in: dir)
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)

        let plan = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--dry-run"])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("Migration plan for \(store)"))
        #expect(plan.stdout.contains("Hop V1 → V2 (lightweight, stages[0])"))
        #expect(plan.stdout.contains("+ text  renamed from body  copied from body"))
        #expect(plan.stdout.contains("Dry run: the migration can run; nothing was written."))
        #expect(try StoreFixtureBuilder.snapshot(of: dir.url.path) == before, "a dry run writes nothing, anywhere near the store")

        let output = dir.path("v4.sqlite")
        let run = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", output, "--json"])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let json = try run.json()
        for key in ["store", "output", "catalog", "dryRun", "status", "source", "target", "notes", "hops", "refusals", "planIssues", "result", "error"] {
            #expect(json[key] != nil, "missing \(key)")
        }
        #expect(json["status"] as? String == "migrated" && json["error"] is NSNull)
        let source = try #require(json["source"] as? [String: Any])
        #expect(source["version"] as? String == "V1" && source["choice"] as? String == "matched")
        let hops = try #require(json["hops"] as? [[String: Any]])
        #expect(hops.map { "\($0["from"] ?? "")>\($0["to"] ?? "")" } == ["V1>V2", "V2>V3", "V3>V4"])
        let entity = try #require((hops[0]["entities"] as? [[String: Any]])?.first)
        for key in ["name", "source", "change", "sourceNumber", "destinationNumber", "sourceTable", "destinationTable", "rows",
                    "attributes", "relationships", "removedAttributes", "removedRelationships", "likelyRenames"] {
            #expect(entity[key] != nil, "entity key \(key)")
        }
        let result = try #require(json["result"] as? [String: Any])
        #expect(result["rowsByEntity"] as? [String: Int] == ["Entry": 5, "Tag": 3])
        let verification = try #require(result["verification"] as? [String: Any])
        #expect(verification["matchOutcome"] as? String == "exact" && verification["matchVersion"] as? String == "V4")
        #expect(verification["problems"] as? [String] == [])
        // Only the new store appeared; the original and its folder are as they were.
        let after = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        #expect(Set(after.keys) == Set(before.keys).union(["v4.sqlite"]))
        for (name, bytes) in before { #expect(after[name] == bytes, "\(name) changed") }

        // Again onto the same output: refused, nothing replaced.
        let again = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", output])
        #expect(again.status == 73)
        #expect(again.stderr.hasPrefix("Error: \(output) already exists"))
        // The migrated store is at the target: nothing to do, its own status.
        let current = try CommandRunner.run(["migrate", output, "--catalog", catalog, "--out", dir.path("v4-again.sqlite")])
        #expect(current.status == 2)
        #expect(current.stdout.contains("already at V4: nothing to do, nothing written"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("v4-again.sqlite")))
    }

    @Test func refusalsAndBadInputHaveTheirStatuses() throws {
        let dir = try TemporaryDirectory()
        let store = try journalStore(in: dir)
        // The catalog without the custom stage's map: V4's required id has no value (134110).
        let text = try String(contentsOfFile: catalog, encoding: .utf8)
            .replacingOccurrences(of: ",\n     \"map\": {\"Entry\": {\"id\": \"uuid()\"}}", with: "")
            .replacingOccurrences(of: "\"Journal.xcdatamodeld", with: "\"\(Self.journal.path)/Journal.xcdatamodeld")
        let withoutMap = dir.path("no-map.json")
        #expect(FileManager.default.createFile(atPath: withoutMap, contents: Data(text.utf8)))
        let refused = try CommandRunner.run(["migrate", store, "--catalog", withoutMap, "--out", dir.path("o.sqlite")])
        #expect(refused.status == 3, "\(refused.stdout)")
        #expect(refused.stdout.contains("Entry.id (attribute) is required and new, and 5 Entry rows exist with no default (134110)"))
        #expect(refused.stdout.contains("add to the custom stage V3 → V4 (stages[2]) \"map\""))
        #expect(!FileManager.default.fileExists(atPath: dir.path("o.sqlite")))

        #expect(try CommandRunner.run(["migrate", dir.path("none.sqlite"), "--catalog", catalog, "--out", dir.path("o.sqlite")]).status == 66)
        let notStore = dir.path("text.sqlite")
        #expect(FileManager.default.createFile(atPath: notStore, contents: Data("hello, not a database at all".utf8)))
        #expect(try CommandRunner.run(["migrate", notStore, "--catalog", catalog, "--out", dir.path("o.sqlite")]).status == 65)
        let unknown = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", dir.path("o.sqlite"), "--to", "V9"])
        #expect(unknown.status == 64 && unknown.stderr.contains("the catalog has no version \"V9\" (--to)"))
        #expect(try CommandRunner.run(["migrate", store, "--catalog", catalog]).status == 64, "--out or --dry-run is required")
        // --from a version the store's hashes contradict (they are exactly V1's): refused, where
        // a review's run read the store through the wrong model and lost a column's values.
        let contradicted = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--from", "V2", "--out", dir.path("o.sqlite")])
        #expect(contradicted.status == 3, "\(contradicted.stdout) \(contradicted.stderr)")
        #expect((contradicted.stdout + contradicted.stderr).contains("is not V2 (--from): its hashes are exactly V1's"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("o.sqlite")))
        // A sidecar of the output is in the way; a folder that does not exist.
        #expect(FileManager.default.createFile(atPath: dir.path("taken.sqlite-wal"), contents: Data()))
        let sidecar = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", dir.path("taken.sqlite")])
        #expect(sidecar.status == 73 && sidecar.stderr.contains("taken.sqlite-wal"))
        #expect(try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", dir.path("nope/o.sqlite")]).status == 73)
        // The store's own -wal (or -journal) as the output: its next open would delete it.
        for suffix in ["-wal", "-journal"] {
            let ownSidecar = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", store + suffix])
            #expect(ownSidecar.status == 73 && ownSidecar.stderr.contains("would be a sidecar of \(store), which exists"), "\(ownSidecar.stderr)")
            #expect(!FileManager.default.fileExists(atPath: store + suffix))
        }
        // A symbolic link as the store is refused unless trusted.
        let link = dir.path("link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: store)
        #expect(try CommandRunner.run(["migrate", link, "--catalog", catalog, "--out", dir.path("o.sqlite")]).status == 66)
        #expect(try CommandRunner.run(["migrate", link, "--catalog", catalog, "--out", dir.path("o.sqlite"), "--follow-symlinks"]).status == 0)
    }

    private func largeStore(in dir: TemporaryDirectory, rows: Int) throws -> (store: String, catalog: String) {
        try BigStore.make(store: dir.path("big.sqlite"), catalog: dir.path("big.json"), rows: rows)
    }

    @Test func aFileSizeLimitIsAClearErrorAndLeavesNothing() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try largeStore(in: dir, rows: 20_000)
        let known = Set(try FileManager.default.contentsOfDirectory(atPath: dir.url.path))
        let digest = try FileDigest.of(path: store)
        let output = dir.path("out.sqlite")
        let result = try CommandRunner.run(program: "/bin/sh", [
            "-c", "ulimit -f 2048 && exec \"$0\" migrate \"$1\" --catalog \"$2\" --out \"$3\"",
            CommandRunner.executable.path, store, catalog, output,
        ])
        #expect(result.status == 74, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("Error: writing") && result.stderr.contains("nothing was left there"))
        #expect(try leftovers(dir.url.path, known: known) == [], "nothing at the output, no workspace left")
        #expect(try FileDigest.of(path: store) == digest)
    }

    @Test func sigtermStopsItPromptlyAndCleansUp() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try largeStore(in: dir, rows: 200_000)
        let known = Set(try FileManager.default.contentsOfDirectory(atPath: dir.url.path))
        let process = Process()
        process.executableURL = CommandRunner.executable
        process.arguments = ["migrate", store, "--catalog", catalog, "--out", dir.path("out.sqlite")]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Signalled once it writes (its private folder is there, so its handlers are in place):
        // a fixed sleep can come before that on a loaded machine, and the signal then kills it.
        InterruptionTests.signalling(SIGTERM, when: InterruptionTests.hasTemporary(".migrate", in: dir.url.path))(process)
        let sent = Date()
        process.waitUntilExit()
        // Either it had finished (0) or it stopped on the signal (75), within its 1 s grace and some slack.
        #expect([0, 75].contains(process.terminationStatus), "status \(process.terminationStatus)")
        #expect(Date().timeIntervalSince(sent) < 4)
        let left = try leftovers(dir.url.path, known: known)
        #expect(left == [] || left == ["out.sqlite"], "\(left)")
    }

    @Test func killedAtAnyInstantItLeavesTheOutputAbsentOrComplete() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try largeStore(in: dir, rows: 100_000)
        let digest = try FileDigest.of(path: store)
        let loaded = try Catalog.load(path: catalog)
        for (round, delay) in [0.05, 0.2, 0.4, 0.7, 1.0].enumerated() {
            let output = dir.path("out-\(round).sqlite")
            let process = Process()
            process.executableURL = CommandRunner.executable
            process.arguments = ["migrate", store, "--catalog", catalog, "--out", output]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if FileManager.default.fileExists(atPath: output) {
                let result = StoreMatcher.match(storePath: output, catalog: loaded)
                #expect(result.outcome == .exact && result.version == "V2", "round \(round): a published store is complete")
                let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
                #expect(try connection.scalar("SELECT count(*) FROM ZITEM")?.int64 == 100_000)
            }
            #expect(!FileManager.default.fileExists(atPath: output + "-wal"))
        }
        #expect(try FileDigest.of(path: store) == digest)

        // What the killed runs left (private workspaces) is removed by the next run in that
        // folder once stale (made old here rather than waiting out TemporaryItems.staleAge).
        let workspaces = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
            .filter { $0.hasPrefix(".migrate") && TemporaryItems.ownerProcess(ofName: $0) != nil }
        for name in workspaces {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: dir.path(name))
        }
        let next = try CommandRunner.run(["migrate", store, "--catalog", catalog, "--out", dir.path("final.sqlite")])
        #expect(next.status == 0, "\(next.stderr)")
        let remaining = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.contains(TemporaryItems.marker) }
        #expect(remaining == [], "stale workspaces swept: \(remaining) (there were \(workspaces.count))")
    }
}

/// A store another process is writing: migrate reads the last committed state, never waits on or
/// disturbs the writer, and leaves the store as the writer has it.
@Suite(.enabled(if: CommandRunner.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs the executable and python3"))
struct MigrateWithAWriterTests {
    @Test(arguments: ["DELETE", "WAL"])
    func anOpenWriteTransactionIsNotSeenAndNotDisturbed(journalMode: String) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("Journal.sqlite")
        try FileManager.default.copyItem(atPath: MigrateCommandTests.journal.appendingPathComponent("Journal.sqlite").path, toPath: store)
        let setMode = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        _ = try setMode.scalar("PRAGMA journal_mode = \(journalMode)")
        let ready = dir.path("ready")
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        writer.arguments = ["-c", """
            import sqlite3, sys, time, pathlib
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (99, 2, 1, 'uncommitted')")
            pathlib.Path(sys.argv[2]).write_text("ready")
            time.sleep(2)
            db.execute("ROLLBACK")
            """, store, ready]
        try writer.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: ready), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let result = try CommandRunner.run([
            "migrate", store, "--catalog", MigrateCommandTests.journal.appendingPathComponent("catalog.json").path,
            "--out", dir.path("v4.sqlite"), "--json",
        ])
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let rows = try #require(try result.json()["result"] as? [String: Any])["rowsByEntity"] as? [String: Int]
        #expect(rows == ["Entry": 5, "Tag": 3], "the uncommitted tag is not read")
        let after = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try after.scalar("SELECT count(*) FROM ZTAG")?.int64 == 3)
    }
}
