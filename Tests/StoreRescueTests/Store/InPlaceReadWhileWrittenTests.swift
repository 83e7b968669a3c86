import Foundation
import Testing
@testable import StoreRescue

/// A store read in place (`immutable=1`) that a rollback-journal app writes meanwhile. Such an
/// app holds no lock between transactions, so it may begin one at any moment; before stop 19,
/// `inspect` of a healthy store written by a `DELETE`-mode writer said "database disk image is
/// malformed" (exit 65, advising salvage or a clean start) in 5 of 400 runs, and `migrate` read
/// the app's half-written pages. The app here begins a transaction, spills half-written pages
/// into the main file and dies: a hot `-journal` and a torn main file appear after the store
/// was looked at, which is what a reader sees, at its worst moment, of an app part way through.
@Suite struct InPlaceReadWhileWrittenTests {
    /// Begins a transaction on the `DELETE`-mode store at `path` that rewrites every row of
    /// `table`'s `column` and spills pages into the main file, then kills itself: the store is
    /// left as a crash leaves it (its committed content is that of before).
    static func dieHalfWayThroughATransaction(store path: String, table: String, column: String) throws {
        let python = try #require(BackupFixtures.pythonPath)
        let result = try BackupFixtures.run(python, ["-c", """
            import os, sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("PRAGMA cache_size = 4")
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE \(table) SET \(column) = \(column) || ' ' || \(column) || ' rewritten'")
            os.kill(os.getpid(), 9)
            """, path])
        #expect(result.status != 0, "the writer died part way through")
        #expect(StoreFileSet.discover(mainPath: path).sidecar("-journal")?.holdsData == true, "a hot -journal is left")
    }

    /// Two versions of one `Item` entity; migrating V1 to V2 reads every row.
    static func itemFixture() throws -> MigrationFixture {
        typealias M = TestModel
        return try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("size", .integer32)])]),
            M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("size", .integer64), M.attribute("note")])]),
        ])
    }

    /// A V1 store of `fixture` holding `rows` items.
    static func itemStore(in fixture: MigrationFixture, rows: Int, name: String = "store.sqlite") throws -> String {
        let path = try fixture.store(at: "V1", name: name)
        try fixture.edit(path, at: "V1") { context in
            for index in 0..<rows { try context.insert("Item", values: ["title": .text("\(name) item \(index)"), "size": .integer(Int64(index))]) }
        }
        return path
    }

    /// A `DELETE`-mode store of `rows` rows, alone in a folder of `temp` (the folder's snapshot
    /// is the store's files), and its committed content.
    static func rollbackStoreInAFolder(of temp: TemporaryDirectory, rows: Int) throws
        -> (folder: String, store: String, committed: [String: [String]]) {
        let folder = temp.path("store")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let store = folder + "/s.sqlite"
        try BackupFixtures.makeStore(at: store, rows: rows, journalMode: "DELETE")
        return (folder, store, try BackupFixtures.content(of: store, mode: .immutable))
    }

    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func aTransactionBegunAfterTheProbeIsReadAsCommitted() throws {
        let temp = try TemporaryDirectory()
        let (folder, store, committed) = try Self.rollbackStoreInAFolder(of: temp, rows: 3000)
        let probe = try InputProbe(path: store)
        #expect(!probe.files.sidecarsHoldData, "the probe saw a store at rest")

        try Self.dieHalfWayThroughATransaction(store: store, table: "ZITEM", column: "ZTITLE")
        let crashed = try StoreFixtureBuilder.snapshot(of: folder)
        let (method, content) = try OpenedStore.readingConsistently(probe: probe) { opened in
            (opened.accessMethod, try? BackupFixtures.content(of: opened.connection.path, mode: opened.accessMethod == .privateCopy ? .readOnly : .immutable))
        }
        #expect(method == .privateCopy, "read again through a copy, where SQLite rolls the journal back")
        #expect(content == committed, "the committed rows, not the app's half-written ones")
        #expect(try StoreFixtureBuilder.snapshot(of: folder) == crashed, "the original and its -journal are left as found")
    }

    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func aMigrationWhoseSourceIsWrittenMeanwhileIsTakenAgainNotPublished() throws {
        let fixture = try Self.itemFixture()
        let path = try Self.itemStore(in: fixture, rows: 3000)
        do {  // the connection closes at the end of this scope: the store is at rest, in rollback-journal mode
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("PRAGMA journal_mode = DELETE")
        }
        let output = fixture.directory.path("out.sqlite")
        let report = StoreMigrator.migrate(
            store: path, catalog: fixture.catalog, to: output, options: MigrationOptions(), progress: nil, cancellation: nil,
            faultInjection: { stage in
                if stage == .prepared { try Self.dieHalfWayThroughATransaction(store: path, table: "ZITEM", column: "ZTITLE") }
            })
        #expect(report.exitStatus == .temporaryFailure, "\(report.error?.message ?? "migrated")")
        #expect(report.error?.message == "\(path) changed while it was being migrated; nothing was written")
        #expect(!FileManager.default.fileExists(atPath: output), "nothing published")
    }

    /// Found by review (stop 19): migrate plans from the original read in place, then its write
    /// attaches the original by its path again. An app that replaces the store by a rename in
    /// between made the write read the new file: "the migrated store failed its checks … report
    /// a bug" (exit 70) on a healthy store.
    @Test func aMigrationWhoseSourceIsReplacedByARenameIsTakenAgainNotPublished() throws {
        let fixture = try Self.itemFixture()
        let path = try Self.itemStore(in: fixture, rows: 300)
        let other = try Self.itemStore(in: fixture, rows: 7, name: "other.sqlite")
        let output = fixture.directory.path("out.sqlite")
        let report = StoreMigrator.migrate(
            store: path, catalog: fixture.catalog, to: output, options: MigrationOptions(), progress: nil, cancellation: nil,
            faultInjection: { stage in
                if stage == .prepared { #expect(rename(other, path) == 0) }
            })
        #expect(report.exitStatus == .temporaryFailure, "\(report.error?.message ?? "migrated")")
        #expect(report.error?.message == "\(path) changed while it was being migrated; nothing was written")
        #expect(!FileManager.default.fileExists(atPath: output), "nothing published")
    }

    /// The command-level race, as CI and a support engineer meet it: `inspect` and `match` of a
    /// healthy store while an app commits in a loop, spilling pages. Every answer is the store
    /// (or "kept changing", exit 75), never "damaged".
    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func inspectingAStoreAnAppWritesNeverCallsItDamaged() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 2000, journalMode: "DELETE")
        let (writer, output) = try BackupFixtures.python("""
            import os, sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
            db.execute("PRAGMA cache_size = 8")
            print("ready", flush=True)
            end = time.time() + 60
            n = 0
            while time.time() < end and not os.path.exists(sys.argv[2]):
                n += 1
                db.execute("BEGIN IMMEDIATE")
                db.execute("UPDATE ZITEM SET ZVALUE = ZVALUE + 1, ZTITLE = substr(ZTITLE || ' x', 1, 200) WHERE Z_PK % 3 = ?", (n % 3,))
                db.execute("DELETE FROM ZITEM WHERE Z_PK % 50 = ?", (n % 50,))
                db.executemany("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZVALUE, ZTITLE) VALUES (?, 1, 1, ?, 'new row')",
                               [(100000 + n * 100 + i, n) for i in range(100)])
                db.execute("COMMIT")
                time.sleep(0.002)  # at rest for a moment: long enough to be found so, and read in place
            print(n, flush=True)
            """, [store, temp.path("stop")])
        try writer.run()
        defer { if writer.isRunning { kill(writer.processIdentifier, SIGKILL) } }
        #expect(String(decoding: output.fileHandleForReading.readData(ofLength: 6), as: UTF8.self) == "ready\n")
        var read = 0
        var inspections = 0
        var kinds: [String: Int] = [:]
        // Until the app stops (it writes for up to 60 s), or 60 inspections with one whole read
        // among them — however slow the machine, not a fixed time.
        let started = Date()
        while writer.isRunning, inspections < 60 || read == 0, Date().timeIntervalSince(started) < 50 {
            inspections += 1
            let report = StoreInspector.inspect(path: store, options: InspectOptions(countsRows: true))
            kinds[report.kind.rawValue, default: 0] += 1
            #expect(report.kind != .damaged, "a healthy store called damaged: \(report.error?.message ?? "")")
            if let error = report.error {
                #expect(error.message.contains("kept changing while it was being copied"), "\(error.message)")
            } else {
                read += 1
            }
        }
        #expect(FileManager.default.createFile(atPath: temp.path("stop"), contents: Data()))
        writer.waitUntilExit()
        let transactions = Int(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(transactions > 1, "the app kept committing while the store was inspected")
        #expect(read > 0, "some inspections read the store: \(kinds)")
    }

    @Test func aStoreReplacedByARenameIsWrittenTo() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 10, journalMode: "DELETE")
        try BackupFixtures.makeStore(at: temp.path("other.sqlite"), rows: 10, journalMode: "DELETE")
        let watch = try #require(MainFileWatch(path: store))
        watch.checkOpenedByName()
        #expect(!watch.writtenToSince)
        let replaced = try #require(MainFileWatch(path: store))
        #expect(rename(temp.path("other.sqlite"), store) == 0)
        #expect(!watch.writtenToSince, "renamed away after the open: the reader reads the file it opened, the one watched")
        replaced.checkOpenedByName()
        #expect(replaced.writtenToSince, "renamed over before the open: the reader opened another file than the one watched")
    }

    @Test(.enabled(if: BackupFixtures.pythonPath != nil, "needs python3"))
    func aHotJournalIsATransactionInProgressUnlessTheProbeSawIt() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 2000, journalMode: "DELETE")
        let before = try #require(MainFileWatch(path: store))
        try Self.dieHalfWayThroughATransaction(store: store, table: "ZITEM", column: "ZTITLE")
        #expect(before.writtenToSince)
        let after = try #require(MainFileWatch(path: store))
        #expect(after.writtenToSince, "a hot -journal the probe did not see: pages may be half written")
        after.journalHadData = true
        #expect(!after.writtenToSince, "the one the probe saw, unchanged: read from a private copy, rolled back")
    }
}
