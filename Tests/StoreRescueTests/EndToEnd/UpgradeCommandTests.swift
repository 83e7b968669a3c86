import Foundation
import Testing
@testable import StoreRescue

/// `storerescue upgrade` and `adopt` as an operator runs them: every exit status on the project's
/// samples, the JSON contract, and what holds whatever happens — a file-size limit, a read-only
/// folder, SIGTERM, `kill -9` — the store at its path is the original (every row) or the finished
/// upgrade, never a mix, and nothing is left beside it.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct UpgradeCommandTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")

    /// A sample store copied into `app/` of a fresh folder; its catalog's path.
    private func sample(_ folder: String, _ store: String, catalog: String = "catalog.json", in fixture: UpgradeFixture) throws -> (String, String) {
        let path = fixture.appFolder + "/" + store
        try FileManager.default.copyItem(atPath: Self.samples.appendingPathComponent("\(folder)/\(store)").path, toPath: path)
        return (path, Self.samples.appendingPathComponent("\(folder)/\(catalog)").path)
    }

    @Test func everySampleEndsWithItsOwnStatus() throws {
        let fixture = try UpgradeFixture()
        // Seed 004: adopted as V1 and migrated to V2 in one run (0); then already current (2).
        let (items, itemsCatalog) = try sample("Seed004", "Items.sqlite", in: fixture)
        let upgraded = try CommandRunner.run(["upgrade", items, "--catalog", itemsCatalog, "--backup-dir", fixture.backups, "--json"])
        #expect(upgraded.status == 0, "\(upgraded.stdout) \(upgraded.stderr)")
        let json = try upgraded.json()
        for key in ["command", "store", "catalog", "dryRun", "status", "source", "target", "phases", "backup", "adoption", "migration",
                    "refusals", "published", "fallback", "recovered", "notes", "seconds", "error"] {
            #expect(json[key] != nil, "missing \(key)")
        }
        #expect(json["status"] as? String == "upgraded" && json["error"] is NSNull && json["fallback"] is NSNull)
        #expect((json["phases"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["read", "backup", "adopt", "migrate", "verify", "publish"])
        let backup = try #require(json["backup"] as? [String: Any])
        for key in ["kind", "path", "manifest", "sha256", "snapshotSHA256", "size", "snapshotSize", "verified", "integrityCheck", "seconds"] {
            #expect(backup[key] != nil, "backup key \(key)")
        }
        #expect(backup["verified"] as? Bool == true)
        let adoption = try #require(json["adoption"] as? [String: Any])
        #expect(adoption["version"] as? String == "V1" && adoption["needed"] as? Bool == true)
        let published = try #require(json["published"] as? [String: Any])
        #expect(published["version"] as? String == "V2" && published["rowsByEntity"] as? [String: Int] == ["Item": 3])
        let again = try CommandRunner.run(["upgrade", items, "--catalog", itemsCatalog, "--backup-dir", fixture.backups])
        #expect(again.status == 2, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("Already exactly at V2: nothing to do, nothing written."))

        // Seed 000: 134110 without the map (3, nothing changed); with it, upgraded (0).
        let (cats, catsCatalog) = try sample("Seed000", "Cats.sqlite", in: fixture)
        let before = try FileDigest.of(path: cats)
        let refused = try CommandRunner.run(["upgrade", cats, "--catalog", catsCatalog, "--backup-dir", fixture.backups])
        #expect(refused.status == 3, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stdout.contains("Cat.age") && refused.stdout.contains("(134110)") && refused.stdout.contains("Try:"))
        #expect(try FileDigest.of(path: cats) == before)
        let mapped = try CommandRunner.run([
            "upgrade", cats, "--catalog", Self.samples.appendingPathComponent("Seed000/catalog-with-map.json").path, "--backup-dir", fixture.backups,
        ])
        #expect(mapped.status == 0, "\(mapped.stdout) \(mapped.stderr)")

        // Seed 001: the ten-version lineage, V1 → V10.
        let (lineage, lineageCatalog) = try sample("Seed001", "Lineage.sqlite", in: fixture)
        let ten = try CommandRunner.run(["upgrade", lineage, "--catalog", lineageCatalog, "--backup-dir", fixture.backups, "--json"])
        #expect(ten.status == 0, "\(ten.stdout) \(ten.stderr)")
        #expect((try ten.json()["published"] as? [String: Any])?["version"] as? String == "V10")
        #expect(try UpgradeFixture.count("ZITEM", in: lineage) == 5)

        // The Journal: adopt alone (4).
        let (journal, journalCatalog) = try sample("Journal", "Journal.sqlite", in: fixture)
        let adopted = try CommandRunner.run(["adopt", journal, "--catalog", journalCatalog, "--backup-dir", fixture.backups])
        #expect(adopted.status == 4, "\(adopted.stdout) \(adopted.stderr)")
        #expect(adopted.stdout.contains("Adopted as V1"))

        // The damaged notes: refused (3) with keep; fell back to clean (5) with clean.
        let (notes, notesCatalog) = try sample("Damaged", "Notes.sqlite", in: fixture)
        let kept = try CommandRunner.run(["upgrade", notes, "--catalog", notesCatalog, "--backup-dir", fixture.backups])
        #expect(kept.status == 3, "\(kept.stdout) \(kept.stderr)")
        let clean = try CommandRunner.run(["upgrade", notes, "--catalog", notesCatalog, "--backup-dir", fixture.backups, "--on-failure", "clean", "--json"])
        #expect(clean.status == 5, "\(clean.stdout) \(clean.stderr)")
        let fallback = try #require(try clean.json()["fallback"] as? [String: Any])
        for key in ["state", "store", "createdAt", "reasons", "quarantine", "quarantinedFiles", "backup", "backupKind", "cleanStore",
                    "salvageDatabase", "rowsUnreadable", "entities", "restoreCommand", "restoreByHand", "notes"] {
            #expect(fallback[key] != nil, "fallback key \(key)")
        }
        #expect(fallback["state"] as? String == "complete")
        // The UUID only the salvage could read is kept, and said so (a review's said "new").
        let cleanStore = try #require(fallback["cleanStore"] as? [String: Any])
        #expect(cleanStore["uuid"] as? String == "D4A3A6ED-0000-4000-8000-000000000300" && cleanStore["uuidKept"] as? Bool == true, "\(cleanStore)")
        let backedUp = try #require(try clean.json()["backup"] as? [String: Any])
        #expect(backedUp["verified"] as? Bool == false && (backedUp["integrityCheck"] as? String)?.contains("malformed") == true, "\(backedUp)")
        let note = try #require((fallback["entities"] as? [[String: Any]])?.first { $0["entity"] as? String == "Note" })
        #expect(note["rowsInCleanStore"] as? Int == 267 && note["keptIn"] as? String == "clean store", "\(note)")
        #expect(try UpgradeFixture.count("ZNOTE", in: notes) == 267)
        #expect(try fixture.strayNames(besides: items) == ["Cats.sqlite", "Journal.sqlite", "Lineage.sqlite", "Notes.sqlite"])
    }

    /// Every refusal in `--json`, whatever its code, has the nine keys JSON-OUTPUT.md documents,
    /// `null` for what does not apply — in `refusals` and in the incident's `reasons`. A
    /// `storeDamaged` refusal (no entity, property, count, kind or version) left five of them
    /// out, while a 134110 refusal carried them (a review).
    @Test func everyRefusalHasEveryDocumentedKeyWhateverItsCode() throws {
        let fixture = try UpgradeFixture()
        let documented: Set = ["code", "hop", "entity", "property", "rowCount", "message", "remedy", "propertyKind", "destinationVersion"]
        func refusals(_ result: CommandRunner.Result, in path: [String] = []) throws -> [[String: Any]] {
            var object = try result.json()
            for key in path { object = try #require(object[key] as? [String: Any], "\(key): \(result.stdout)") }
            return try #require(object[path.isEmpty ? "refusals" : "reasons"] as? [[String: Any]], "\(result.stdout)")
        }
        let (cats, catsCatalog) = try sample("Seed000", "Cats.sqlite", in: fixture)
        let mandatory = try refusals(try CommandRunner.run(["upgrade", cats, "--catalog", catsCatalog, "--backup-dir", fixture.backups, "--json"]))
        #expect(mandatory.first?["code"] as? String == "mandatoryValueMissing" && mandatory.first?["entity"] as? String == "Cat", "\(mandatory)")
        let (notes, notesCatalog) = try sample("Damaged", "Notes.sqlite", in: fixture)
        let damaged = try refusals(try CommandRunner.run(["upgrade", notes, "--catalog", notesCatalog, "--backup-dir", fixture.backups, "--json"]))
        let reasons = try refusals(
            try CommandRunner.run(["upgrade", notes, "--catalog", notesCatalog, "--backup-dir", fixture.backups, "--on-failure", "clean", "--json"]),
            in: ["fallback"])
        for refusal in [mandatory, damaged, reasons].flatMap({ $0 }) {
            #expect(Set(refusal.keys) == documented, "\(refusal["code"] ?? "?"): \(refusal.keys.sorted())")
        }
        for refusal in damaged + reasons {
            #expect(refusal["code"] as? String == "storeDamaged" && refusal["hop"] as? String == "", "\(refusal)")
            for key in ["entity", "property", "rowCount", "propertyKind", "destinationVersion"] {
                #expect(refusal[key] is NSNull, "storeDamaged \(key): \(refusal[key] ?? "missing")")
            }
        }
        #expect(!damaged.isEmpty && !reasons.isEmpty)
    }

    @Test func theIncidentsRestoreCommandPutsTheOriginalBack() throws {
        let fixture = try UpgradeFixture()
        let (cats, catsCatalog) = try sample("Seed000", "Cats.sqlite", in: fixture)
        let rows = try UpgradeFixture.rows("ZCAT", in: cats)
        let clean = try CommandRunner.run(["upgrade", cats, "--catalog", catsCatalog, "--backup-dir", fixture.backups, "--on-failure", "clean", "--json"])
        #expect(clean.status == 5, "\(clean.stdout) \(clean.stderr)")
        let fallback = try #require(try clean.json()["fallback"] as? [String: Any])
        #expect(try UpgradeFixture.count("ZCAT", in: cats) == 0)
        let command = try #require(fallback["restoreCommand"] as? String)
        let restored = try CommandRunner.run(program: "/bin/sh", ["-c", command.replacingOccurrences(of: "storerescue ", with: "\"$0\" "), CommandRunner.executable.path])
        #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
        #expect(try UpgradeFixture.rows("ZCAT", in: cats) == rows)
    }

    /// A store whose name is near the file-name limit (243 bytes): the backup, the quarantine
    /// folder and the salvage database take cut names, the fallback completes (5), and its
    /// restore command puts the original back. (Before: exit 73 or 74, "File name too long".)
    @Test func aStoreWithAVeryLongNameFallsBackAndIsRestored() throws {
        let fixture = try UpgradeFixture()
        let notes = fixture.appFolder + "/" + String(repeating: "n", count: 236) + ".sqlite"
        try FileManager.default.copyItem(atPath: Self.samples.appendingPathComponent("Damaged/Notes.sqlite").path, toPath: notes)
        let original = try Data(contentsOf: URL(fileURLWithPath: notes))
        let catalog = Self.samples.appendingPathComponent("Damaged/catalog.json").path
        let clean = try CommandRunner.run(["upgrade", notes, "--catalog", catalog, "--backup-dir", fixture.backups, "--on-failure", "clean", "--json"])
        #expect(clean.status == 5, "\(clean.stdout) \(clean.stderr)")
        #expect(try UpgradeFixture.count("ZNOTE", in: notes) == 267)
        let names = try FileManager.default.subpathsOfDirectory(atPath: fixture.backups).map { ($0 as NSString).lastPathComponent }
        #expect(names.allSatisfy { $0.utf8.count <= 255 } && names.contains { $0.hasSuffix(".salvaged.sqlite") }, "\(names)")
        let fallback = try #require(try clean.json()["fallback"] as? [String: Any])
        let command = try #require(fallback["restoreCommand"] as? String)
        let restored = try CommandRunner.run(program: "/bin/sh", ["-c", command.replacingOccurrences(of: "storerescue ", with: "\"$0\" "), CommandRunner.executable.path])
        #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
        // The original's pages, byte for byte; in the header only the counters SQLite bumps when
        // it writes a file (change counter, schema cookie, version-valid-for) may differ.
        var back = try Data(contentsOf: URL(fileURLWithPath: notes))
        var expected = original
        for range in [24..<28, 40..<44, 92..<100] {
            back.replaceSubrange(range, with: Data(count: range.count))
            expected.replaceSubrange(range, with: Data(count: range.count))
        }
        #expect(back == expected)
    }

    @Test func aDryRunWritesNothingAnywhere() throws {
        let fixture = try UpgradeFixture()
        let (notes, notesCatalog) = try sample("Damaged", "Notes.sqlite", in: fixture)
        let before = try fixture.appFiles()
        let run = try CommandRunner.run(["upgrade", notes, "--catalog", notesCatalog, "--backup-dir", fixture.backups, "--on-failure", "clean", "--dry-run"])
        #expect(run.status == 5, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("fallback") && run.stdout.contains("predicted"))
        #expect(try fixture.appFiles() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.backups))
    }

    @Test func badInputGetsAOneLineErrorAndItsStatus() throws {
        let fixture = try UpgradeFixture()
        let (journal, catalog) = try sample("Journal", "Journal.sqlite", in: fixture)
        let missing = try CommandRunner.run(["upgrade", fixture.appFolder + "/nothing.sqlite", "--catalog", catalog, "--backup-dir", fixture.backups])
        #expect(missing.status == 66 && missing.stderr.hasPrefix("Error: ") && !missing.stderr.contains("Fatal error"))
        let badCatalog = try CommandRunner.run(["upgrade", journal, "--catalog", fixture.appFolder + "/none.json", "--backup-dir", fixture.backups])
        #expect([65, 66].contains(badCatalog.status), "\(badCatalog.stderr)")
        let policy = try CommandRunner.run(["upgrade", journal, "--catalog", catalog, "--on-failure", "delete"])
        #expect(policy.status == 64)
        let beside = try CommandRunner.run(["upgrade", journal, "--catalog", catalog, "--backup-dir", fixture.appFolder, "--json"])
        #expect(beside.status == 64)
        #expect((try beside.json()["error"] as? [String: Any])?["message"] != nil)
        #expect(try fixture.strayNames(besides: journal) == [])
    }

    /// A big V1 → V2 store (the migrate tests' `BigStore`) in `app/`.
    private func largeStore(_ fixture: UpgradeFixture, rows: Int) throws -> (store: String, catalog: String) {
        try BigStore.make(store: fixture.appFolder + "/big.sqlite", catalog: fixture.directory.path("big.json"), rows: rows)
    }

    @Test func aFileSizeLimitIsAClearErrorAndTheStoreStaysTheOriginal() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try largeStore(fixture, rows: 20_000)
        let before = try fixture.appFiles()
        let result = try CommandRunner.run(program: "/bin/sh", [
            "-c", "ulimit -f 4096 && exec \"$0\" upgrade \"$1\" --catalog \"$2\" --backup-dir \"$3\"",
            CommandRunner.executable.path, store, catalog, fixture.backups,
        ])
        #expect(result.status == 74, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: ") && result.stderr.split(separator: "\n").count <= 2)
        #expect(try fixture.appFiles() == before, "the store, byte for byte, and nothing beside it")
    }

    /// A healthy store whose rows are in its `-wal` is read through a private copy beside it; a
    /// file-size limit that copy hits (EFBIG) is an I/O error (74) whatever the command and
    /// `--on-failure`, with the free-space hint and the error in `--json` — it was exit 3, "the
    /// store cannot be read as a store", with advice to quarantine a healthy store.
    @Test(arguments: [["upgrade"], ["upgrade", "--on-failure", "clean"], ["upgrade", "--json"], ["adopt"], ["adopt", "--json"]])
    func aFileSizeLimitOnTheReadCopyIsAnIOErrorNotAStoreToSave(command: [String]) throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try sample("Journal", "Journal.sqlite", in: fixture)
        try UpgradeFixture.moveEntriesIntoWAL(of: store)
        let before = try fixture.appFiles()
        // 40 blocks of 512 bytes: less than the 45 KB main file, more than the report.
        let result = try CommandRunner.run(program: "/bin/sh", [
            "-c", "ulimit -f 40 && exec \"$0\" \"$@\"", CommandRunner.executable.path,
        ] + command + [store, "--catalog", catalog, "--backup-dir", fixture.backups])
        #expect(result.status == 74, "\(command): \(result.stdout) \(result.stderr)")
        #expect(!result.stdout.contains("--on-failure") && !result.stderr.contains("--on-failure"), "\(command): no advice to quarantine it")
        let hint = "free space in \(fixture.appFolder), where the private copy is made, or raise the file-size limit (ulimit -f)"
        if command.contains("--json") {
            let json = try result.json()
            #expect(json["status"] as? String == "failed")
            #expect(json["refusals"] as? [Any] == nil || (json["refusals"] as? [Any])?.isEmpty == true)
            let error = try #require(json["error"] as? [String: Any], "\(command): the error is in the JSON")
            #expect(error["exitStatus"] as? Int == 74)
            #expect((error["message"] as? String)?.contains("File too large") == true)
            #expect(error["hint"] as? String == hint)
        } else {
            #expect(result.stderr.contains("cannot make a private copy to read: cannot write the copy: File too large"), "\(result.stderr)")
            #expect(result.stderr.contains("Try: \(hint)"), "\(result.stderr)")
        }
        #expect(try fixture.appFiles() == before, "the store, byte for byte, and nothing beside it")
    }

    /// `adopt` has no `--on-failure`: what it advises names only what it has (`--as`), or
    /// another command in full.
    @Test func adoptAdvisesOnlyOptionsAdoptHas() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try sample("Journal", "Journal.sqlite", in: fixture)
        let before = try fixture.appFiles()
        // --as a version the store's hashes contradict: 3, what to try is adopt's.
        for json in [false, true] {
            let wrong = try CommandRunner.run(["adopt", store, "--catalog", catalog, "--backup-dir", fixture.backups, "--as", "V2"] + (json ? ["--json"] : []))
            #expect(wrong.status == 3, "\(wrong.stdout) \(wrong.stderr)")
            #expect(!wrong.stdout.contains("--on-failure") && !wrong.stderr.contains("--on-failure"), "\(wrong.stdout) \(wrong.stderr)")
            #expect(!wrong.stdout.contains("cannot be read as a store"))
            if json {
                let error = try #require(try wrong.json()["error"] as? [String: Any])
                #expect(error["exitStatus"] as? Int == 3)
                #expect((error["message"] as? String)?.contains("is not V2: its hashes are exactly V1's") == true)
            } else {
                #expect(wrong.stderr.contains("is not V2: its hashes are exactly V1's"), "\(wrong.stderr)")
            }
        }
        #expect(try fixture.appFiles() == before)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chattr"), "needs chattr"))
    func aReadOnlyFolderIsRefusedBeforeAnythingIsWritten() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try sample("Journal", "Journal.sqlite", in: fixture)
        let before = try fixture.appFiles()
        // Read-only even for root: the folder is made immutable (undone below).
        let locked = try CommandRunner.run(program: "/usr/bin/chattr", ["+i", fixture.appFolder])
        try #require(locked.status == 0, "chattr +i is not permitted here: \(locked.stderr)")
        defer { _ = try? CommandRunner.run(program: "/usr/bin/chattr", ["-i", fixture.appFolder]) }
        let result = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--backup-dir", fixture.backups])
        _ = try CommandRunner.run(program: "/usr/bin/chattr", ["-i", fixture.appFolder])
        #expect(result.status == 73, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("not writable"))
        #expect(try fixture.appFiles() == before)
    }

    @Test func sigtermStopsItAndLeavesTheOriginalOrTheUpgrade() throws {
        let fixture = try UpgradeFixture()
        let (store, catalog) = try largeStore(fixture, rows: 150_000)
        let process = Process()
        process.executableURL = CommandRunner.executable
        process.arguments = ["upgrade", store, "--catalog", catalog, "--backup-dir", fixture.backups]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Signalled once it works in its private folder beside the store (its handlers are in
        // place), and a little into the work; a fixed sleep can come before that under load.
        let folder = (store as NSString).deletingLastPathComponent
        InterruptionTests.signalling(SIGTERM, after: 0.8, when: InterruptionTests.hasTemporary(".upgrade", in: folder))(process)
        let sent = Date()
        process.waitUntilExit()
        #expect([0, 75].contains(process.terminationStatus), "status \(process.terminationStatus)")
        #expect(Date().timeIntervalSince(sent) < 5)
        let match = StoreMatcher.match(storePath: store, catalog: try Catalog.load(path: catalog))
        #expect(match.outcome == .exact && (match.version == "V1" || match.version == "V2"))
        #expect(try UpgradeFixture.count("ZITEM", in: store) == 150_000)
        #expect(try fixture.strayNames(besides: store) == [])
    }

    /// `kill -9` at a handful of instants (the full campaign is `Scripts/crash-upgrade.sh`): the
    /// store opens with all its rows, as V1 or V2; the next run finishes and sweeps what was left.
    @Test func killedAtAnyInstantTheStoreIsTheOriginalOrTheUpgrade() throws {
        let fixture = try UpgradeFixture()
        let (pristine, catalog) = try largeStore(fixture, rows: 50_000)
        let loaded = try Catalog.load(path: catalog)
        let template = fixture.directory.path("template.sqlite")
        try FileManager.default.moveItem(atPath: pristine, toPath: template)
        var outcomes: [String] = []
        for (round, delay) in [0.05, 0.3, 0.7, 1.2].enumerated() {
            let store = fixture.appFolder + "/big.sqlite"
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: store + suffix) }
            try FileManager.default.copyItem(atPath: template, toPath: store)
            let process = Process()
            process.executableURL = CommandRunner.executable
            process.arguments = ["upgrade", store, "--catalog", catalog, "--backup-dir", fixture.backups + "-\(round)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let match = StoreMatcher.match(storePath: store, catalog: loaded)
            #expect(match.outcome == .exact && ["V1", "V2"].contains(match.version ?? ""), "round \(round): \(match.outcome) \(match.version ?? "")")
            #expect(try UpgradeFixture.count("ZITEM", in: store) == 50_000, "round \(round)")
            let check = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly)).scalar("PRAGMA quick_check")?.string
            #expect(check == "ok", "round \(round)")
            outcomes.append(match.version ?? "?")
            // What the kill left (a private workspace) is swept by the next run once stale.
            for name in try FileManager.default.contentsOfDirectory(atPath: fixture.appFolder) where name.contains(TemporaryItems.marker) {
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: fixture.appFolder + "/" + name)
            }
            let next = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--backup-dir", fixture.backups + "-\(round)"])
            #expect([0, 2].contains(next.status), "round \(round): \(next.stdout) \(next.stderr)")
            #expect(StoreMatcher.match(storePath: store, catalog: loaded).version == "V2")
            #expect(try fixture.strayNames(besides: store) == [], "round \(round): swept")
        }
        #expect(!outcomes.isEmpty)
    }
    /// The Journal sample grown to 3,000 entries, then 100 more left only in its `-wal` (as an app
    /// killed leaves them), then three pages of its main file zeroed: a damaged store with a
    /// live `-wal`, which `--on-failure clean` quarantines.
    private func damagedJournalWithALiveWAL(at store: String) throws {
        try FileManager.default.copyItem(atPath: Self.samples.appendingPathComponent("Journal/Journal.sqlite").path, toPath: store)
        do {
            let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try writer.execute("""
                WITH RECURSIVE n(i) AS (SELECT 6 UNION ALL SELECT i + 1 FROM n WHERE i < 3005)
                INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZCREATEDAT, ZBODY, ZTITLE) SELECT i, 1, 1, 752112000, 'body ' || i || printf('%.*c', 300, 'x'), 'title ' || i FROM n;
                UPDATE Z_PRIMARYKEY SET Z_MAX = 3005 WHERE Z_ENT = 1;
                """)
            _ = try writer.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
            try writer.disableCheckpointOnClose()
            try writer.execute("""
                PRAGMA wal_autocheckpoint = 0;
                WITH RECURSIVE n(i) AS (SELECT 3006 UNION ALL SELECT i + 1 FROM n WHERE i < 3105)
                INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZCREATEDAT, ZBODY, ZTITLE) SELECT i, 1, 1, 752112000, 'late ' || i, 'late ' || i FROM n;
                UPDATE Z_PRIMARYKEY SET Z_MAX = 3105 WHERE Z_ENT = 1;
                """)
        }
        try UpgradeFixture.zeroPagesInTheMiddle(of: store, after: [0, 1, 7])
    }

    /// The database as SQLite reads the store's files: the main file with the committed `-wal`
    /// frames laid over it, page by page (a page that cannot be read as zeros).
    private func pagesAsRead(_ store: String) throws -> [UInt8] {
        let source = try PageSource(path: store)
        var pages: [UInt8] = []
        var page: [UInt8] = []
        for number in 1...max(1, source.pageCount) {
            if !source.read(number, into: &page) { page = [UInt8](repeating: 0, count: source.geometry.pageSize) }
            pages += page
        }
        return pages
    }

    /// `--on-failure clean` of a damaged store with a live `-wal`, killed at instants spread over
    /// a run and packed near its end (the swap): the store's path holds its content as SQLite
    /// read it, or the clean store with no `-wal` beside it — never the main file without the
    /// `-wal`'s transactions (a review's kill did that until stop 25). The next run finishes.
    @Test func aFallbackKilledAtAnyInstantLeavesTheStoresContentOrTheCleanStore() throws {
        let fixture = try UpgradeFixture()
        let template = fixture.directory.path("template/Journal.sqlite")
        try FileManager.default.createDirectory(atPath: fixture.directory.path("template"), withIntermediateDirectories: false)
        try damagedJournalWithALiveWAL(at: template)
        let original = try pagesAsRead(template)
        let catalog = Self.samples.appendingPathComponent("Journal/catalog.json").path
        let loaded = try Catalog.load(path: catalog)
        let store = fixture.appFolder + "/Journal.sqlite"
        func fresh() throws {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: store + suffix) }
            for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: template + suffix, toPath: store + suffix) }
        }
        // An uncut run, timed.
        try fresh()
        let started = Date()
        let uncut = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--backup-dir", fixture.backups + "-uncut", "--on-failure", "clean"])
        let wall = Date().timeIntervalSince(started)
        #expect(uncut.status == 5, "\(uncut.stdout) \(uncut.stderr)")
        var states: [String] = []
        for (round, fraction) in [0.3, 0.6, 0.85, 0.9, 0.94, 0.97, 0.99, 1.0].enumerated() {
            try fresh()
            let backups = fixture.backups + "-\(round)"
            let process = Process()
            process.executableURL = CommandRunner.executable
            process.arguments = ["upgrade", store, "--catalog", catalog, "--backup-dir", backups, "--on-failure", "clean"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: wall * fraction)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let match = StoreMatcher.match(storePath: store, catalog: loaded)
            let isClean = match.outcome == .exact && match.version == "V4" && !FileManager.default.fileExists(atPath: store + "-wal")
            let isOriginal = try pagesAsRead(store) == original
            #expect(isClean || isOriginal, "round \(round): neither the store's content nor the clean store")
            states.append(isClean ? "clean" : "original")
            for name in try FileManager.default.contentsOfDirectory(atPath: fixture.appFolder) where name.contains(TemporaryItems.marker) {
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: fixture.appFolder + "/" + name)
            }
            let next = try CommandRunner.run(["upgrade", store, "--catalog", catalog, "--backup-dir", backups, "--on-failure", "clean"])
            #expect([0, 2, 5].contains(next.status), "round \(round): \(next.stdout) \(next.stderr)")
            #expect(StoreMatcher.match(storePath: store, catalog: loaded).version == "V4", "round \(round)")
            #expect(try UpgradeFixture.count("ZENTRY", in: store, where: "ZTITLE LIKE 'late %'") == 100, "round \(round): the -wal's entries carried")
            #expect(try fixture.strayNames(besides: store) == [], "round \(round): swept")
            // Every quarantine folder says what became of it: its incident, or (a run killed
            // before it wrote one) its journal.
            for quarantine in (try? FileManager.default.contentsOfDirectory(atPath: backups + "/quarantine")) ?? [] {
                let folder = backups + "/quarantine/" + quarantine
                let intent = (try? Data(contentsOf: URL(fileURLWithPath: folder + "/intent.json")))
                    .flatMap { try? JSONDecoder().decode(FallbackIntent.self, from: $0) }
                let state = IncidentFiles.state(in: folder) ?? intent?.state
                #expect(state == "complete" || state == "abandoned", "round \(round): \(quarantine) \(state ?? "none")")
            }
        }
        #expect(states.count == 8)
    }

    /// `--to` a version after the catalog's current one (the Employees lineage's folder names its
    /// first version current): what the dry run says (0) is what the run does (it ended in 70,
    /// "match says newer", after writing the new store); the store goes on from there.
    @Test(.enabled(if: Samples.available)) func anUpgradeToAVersionAfterTheCurrentOneDoesWhatItsDryRunSaid() throws {
        let fixture = try UpgradeFixture()
        let model = try fixture.directory.copySampleItem("lineages/Employees/MWKCoreDataTests.xcdatamodeld")
        let copied = try fixture.directory.copySample("lineages/Employees/MWKCoreDataTests.sqlite")
        let store = fixture.appFolder + "/MWKCoreDataTests.sqlite"
        try FileManager.default.moveItem(atPath: copied, toPath: store)
        let arguments = ["upgrade", store, "--catalog", model, "--to", "MWKCoreDataTests2", "--backup-dir", fixture.backups]
        let dryRun = try CommandRunner.run(arguments + ["--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.stdout) \(dryRun.stderr)")
        #expect(dryRun.stdout.contains("match newer MWKCoreDataTests2 (its hashes exactly; the catalog's current version is MWKCoreDataTests)"), "\(dryRun.stdout)")
        let run = try CommandRunner.run(arguments + ["--json"])
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let published = try #require(try run.json()["published"] as? [String: Any])
        #expect(published["version"] as? String == "MWKCoreDataTests2" && published["matchOutcome"] as? String == "newer")
        #expect(try UpgradeFixture.count("ZEMPLOYEE", in: store) == 3)
        #expect(try fixture.strayNames(besides: store) == [])
        let again = try CommandRunner.run(arguments)
        #expect(again.status == 2, "\(again.stdout) \(again.stderr)")

        // On to the third version, past the current one too: 134110 without the custom stage the
        // folder cannot hold (3, nothing changed); with --on-failure clean, the clean store at
        // MWKCoreDataTests3 passes the fallback's check (5).
        let third = ["upgrade", store, "--catalog", model, "--to", "MWKCoreDataTests3", "--backup-dir", fixture.backups]
        let refused = try CommandRunner.run(third)
        #expect(refused.status == 3 && refused.stdout.contains("(134110)"), "\(refused.stdout) \(refused.stderr)")
        let clean = try CommandRunner.run(third + ["--on-failure", "clean", "--json"])
        #expect(clean.status == 5, "\(clean.stdout) \(clean.stderr)")
        #expect((try clean.json()["fallback"] as? [String: Any])?["state"] as? String == "complete")
        let loaded = try Catalog.load(path: model)
        let match = StoreMatcher.match(storePath: store, catalog: loaded)
        #expect(match.outcome == .newer && match.version == "MWKCoreDataTests3")
    }
}
