import Foundation
import Testing
@testable import StoreRescue

/// A signal during the SQLite check of a backup's snapshot (`BackupVerifier.integrityCheck`),
/// in `restore` and in `upgrade`'s check of the backup it took: the check is one step of SQLite's
/// program, which no progress handler can cut short, so it is interrupted
/// (`SQLiteConnection.interruptible`). Without that the command ran the check to its end and
/// was ended by the handler's forced end, `InterruptHandling.grace` (1 s) after the signal; a
/// check shorter than that ran to its verdict. Each test signals once the check has begun, on a
/// store whose check takes longer than the grace, and expects exit 75 well before the forced end,
/// with the store, and the backup, as they were. (`verify`'s own check:
/// `BackupVerifierTests.aCancellationDuringTheIntegrityCheckInterruptsIt`.)
@Suite(.enabled(if: CommandRunner.isAvailable, "needs the built executable"))
struct IntegrityCheckInterruptionTests {
    /// Sooner than `InterruptHandling.grace` (1 s): an exit this soon after the signal is the
    /// command's own, not the forced end's.
    static let promptExit: TimeInterval = 0.9

    /// A Core Data store of `rows` rows of `Item` at V1 of a two-version catalog (V2 adds one
    /// attribute): eight small-number attributes, each with a fetch index of its own and in
    /// sixteen pairs (32 indexes in the layout). `integrity_check` looks up every row in every
    /// index, so its time grows with rows × indexes while the bytes to back up, sum and
    /// decompress (the test build's SHA-256 is slow) grow with the small index entries: a check
    /// of seconds on a store of about 25 MB (60,000 rows).
    static func indexedStore(in directory: String, rows: Int) throws -> (store: String, catalog: String) {
        let names = ["a", "b", "c", "d", "e", "f", "g", "h"]
        let attributes = names.map { #"{"name": "\#($0)", "type": "Int16"}"# }.joined(separator: ", ")
        let pairs = names.indices.flatMap { first in names[(first + 1)...].map { (names[first], $0) } }.prefix(16)
        let indexes = (names.map { #"{"name": "by_\#($0)", "elements": ["\#($0)"]}"# }
            + pairs.map { #"{"name": "by_\#($0.0)\#($0.1)", "elements": ["\#($0.0)", "\#($0.1)"]}"# }).joined(separator: ", ")
        let json = """
            {"formatVersion": 1, "app": "Indexed", "versions": [
              {"name": "V1", "entities": [{"name": "Item", "attributes": [\(attributes)], "fetchIndexes": [\(indexes)]}]},
              {"name": "V2", "entities": [{"name": "Item", "attributes": [\(attributes), {"name": "flag", "type": "Bool", "default": false}],
                "fetchIndexes": [\(indexes)]}]}]}
            """
        let catalog = directory + "/indexed.json"
        let store = directory + "/Indexed.sqlite"
        #expect(FileManager.default.createFile(atPath: catalog, contents: Data(json.utf8)))
        let version = try #require(try Catalog.load(path: catalog).version(named: "V1"))
        try StoreCreator.create(model: version.model, versionIdentifiers: nil, at: store)
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        let columns = names.map { "Z" + $0.uppercased() }.joined(separator: ", ")
        // Values scattered, so no index is filled in order.
        let values = (0..<names.count).map { "((i * \(2_654_435_761 + $0 * 40_503)) % 97)" }.joined(separator: ", ")
        try connection.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, \(columns)) SELECT i, 1, 1, \(values) FROM n;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows);
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
        return (store, catalog)
    }

    /// Waits (polling every 5 ms, at most 60 s) until `ready` holds, sends `signal`, and records
    /// when it was sent and whether `ready` held.
    final class Signaller: @unchecked Sendable {
        var sentAt: Date?
        var wasReady = false

        func send(_ signal: Int32, when ready: @escaping () -> Bool) -> (Process) -> Void {
            { process in
                let deadline = Date().addingTimeInterval(60)
                while process.isRunning, Date() < deadline {
                    if ready() { self.wasReady = true; break }
                    Thread.sleep(forTimeInterval: 0.005)
                }
                kill(process.processIdentifier, signal)
                self.sentAt = Date()
            }
        }
    }

    /// The size of the file in `folder` whose name starts with `prefix` and this tool's
    /// temporary marker, or nil when there is none.
    static func temporarySize(_ prefix: String, in folder: String) -> Int64? {
        guard let name = BackupFixtures.fileNames(in: folder).first(where: { $0.hasPrefix(prefix + TemporaryItems.marker) }) else { return nil }
        var info = stat()
        guard stat(folder + "/" + name, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The paths the open descriptors of process `pid` lead to (`/proc/PID/fd`).
    static func openFiles(of pid: Int32) -> [String] {
        let folder = "/proc/\(pid)/fd"
        return BackupFixtures.fileNames(in: folder).compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0) }
    }

    /// `restore --force --full-check` signalled once the snapshot is whole beside the target
    /// (decompressed and summed: the check is what is left before the replacement): exit 75
    /// before the forced end, the target store and the backup untouched, nothing beside them.
    @Test func restoreSignalledDuringItsCheckStopsPromptlyAndReplacesNothing() throws {
        let signal = SIGTERM
        let directory = try TemporaryDirectory()
        let (store, _) = try Self.indexedStore(in: directory.url.path, rows: 60_000)
        let backup = try BackupRunner.run(store: store, options: BackupOptions.testing(directory.path("backups")))
        let target = directory.path("target/r.sqlite")
        try FileManager.default.createDirectory(atPath: directory.path("target"), withIntermediateDirectories: false)
        try BackupFixtures.makeStore(at: target, rows: 10, journalMode: "DELETE")
        let targetBefore = try FileDigest.of(path: target)
        let backupBefore = try FileDigest.of(path: backup.backupPath)
        let manifestBefore = try FileDigest.of(path: backup.manifestPath)
        let whole = backup.manifest.snapshotSize

        let signaller = Signaller()
        let result = try CommandRunner.run(
            ["restore", backup.backupPath, "--to", target, "--force", "--full-check", "--backups-dir", directory.path("replaced")],
            timeout: 90,
            whileRunning: signaller.send(signal, when: { Self.temporarySize(".r.sqlite", in: directory.path("target")) == whole }))
        let exitedAfter = Date().timeIntervalSince(try #require(signaller.sentAt))

        #expect(signaller.wasReady, "the snapshot was never whole beside the target")
        #expect(!result.timedOut)
        #expect(result.status == ExitStatus.temporaryFailure.rawValue, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT")"), "\(result.stderr)")
        #expect(exitedAfter < Self.promptExit, "exited \(exitedAfter) s after the signal: the check ran on to the forced end")
        #expect(try FileDigest.of(path: target) == targetBefore)
        #expect(BackupFixtures.fileNames(in: directory.path("target")) == ["r.sqlite"])
        #expect(BackupFixtures.fileNames(in: directory.path("replaced")) == [])
        #expect(try FileDigest.of(path: backup.backupPath) == backupBefore)
        #expect(try FileDigest.of(path: backup.manifestPath) == manifestBefore)
    }

    /// `upgrade` signalled once the verification of its backup, which runs beside the write,
    /// has read the whole `.gz` (the process had it open, and has closed it): what is left of it
    /// is the check of the kept snapshot (`integrity_check`, the default). The write stops at
    /// the signal and the run then waits for the verification, so only an interrupted check lets
    /// it end before the forced end. Exit 75, the store as it was, the published backup whole,
    /// nothing beside the store.
    @Test func upgradeSignalledDuringItsBackupCheckStopsPromptlyAndLeavesTheStore() throws {
        let signal = SIGINT
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path("app"), withIntermediateDirectories: false)
        let (store, catalog) = try Self.indexedStore(in: directory.path("app"), rows: 60_000)
        try FileManager.default.moveItem(atPath: catalog, toPath: directory.path("indexed.json"))
        let storeBefore = try FileDigest.of(path: store)
        let backups = directory.path("backups")

        let signaller = Signaller()
        var pid: Int32 = 0
        var sawTheBackupOpen = false
        let result = try CommandRunner.run(
            ["upgrade", store, "--catalog", directory.path("indexed.json"), "--backup-dir", backups],
            timeout: 90,
            whileRunning: { process in
                pid = process.processIdentifier
                signaller.send(signal, when: {
                    let isOpen = Self.openFiles(of: pid).contains { $0.hasPrefix(backups + "/") && $0.hasSuffix(".gz") }
                    defer { sawTheBackupOpen = sawTheBackupOpen || isOpen }
                    return sawTheBackupOpen && !isOpen
                })(process)
            })
        let exitedAfter = Date().timeIntervalSince(try #require(signaller.sentAt))

        #expect(signaller.wasReady, "the verification was never seen reading the .gz to its end")
        #expect(!result.timedOut)
        #expect(result.status == ExitStatus.temporaryFailure.rawValue, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT")"), "\(result.stderr)")
        #expect(exitedAfter < Self.promptExit, "exited \(exitedAfter) s after the signal: the check ran on to the forced end")
        #expect(try FileDigest.of(path: store) == storeBefore)
        #expect(BackupFixtures.fileNames(in: directory.path("app")) == ["Indexed.sqlite"])
        let names = BackupFixtures.fileNames(in: backups)
        #expect(names.count == 2 && names.allSatisfy { !$0.contains(TemporaryItems.marker) }, "\(names)")
        let manifestName = try #require(names.first { $0.hasSuffix(".manifest.json") })
        let manifest = try BackupManifest.read(from: backups + "/" + manifestName)
        let gz = try #require(names.first { $0.hasSuffix(".gz") })
        #expect(try FileDigest.of(path: backups + "/" + gz).sha256 == manifest.backupSHA256)
    }
}
