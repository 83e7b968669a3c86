import Foundation
import Testing
@testable import StoreRescue

@Suite struct BackupVerifierTests {
    /// A fresh backup of a generated store, in `temp/b`.
    static func makeBackup(_ temp: TemporaryDirectory, rows: Int = 4_000) throws -> BackupResult {
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: rows)
        return try BackupRunner.run(store: store, options: .testing(temp.path("b")))
    }

    @Test func goodBackupPasses() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(verification.problems == [])
        #expect(verification.isGood)
        #expect(verification.integrityCheck == "ok")
        #expect(verification.manifest == backup.manifest)
        // The manifest path works as well as the .gz path.
        #expect(try BackupVerifier.verify(backup: backup.manifestPath).isGood)
    }

    /// SIGINT/SIGTERM while `PRAGMA integrity_check` runs (here: the command's cancellation set
    /// as the check starts, at the progress's `verify` phase): SQLite's b-tree check is one step
    /// of its program, which a progress handler cannot cut short, so the check is interrupted
    /// (`SQLiteConnection.interruptible`) and the verification ends `interrupted` (exit 75),
    /// with nothing left in its temporary folder. Nothing looks at the cancellation once the
    /// check has returned: this error comes from SQLite's interrupted check. It used to run to
    /// its end (seconds on a large backup) and report a verdict (exit 0) after the signal.
    @Test func aCancellationDuringTheIntegrityCheckInterruptsIt() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp, rows: 150_000)
        try FileManager.default.createDirectory(atPath: temp.path("t"), withIntermediateDirectories: true)
        let flag = CancellationFlag()
        var phases: [BackupProgress.Phase] = []
        let error = #expect(throws: BackupError.self) {
            try BackupVerifier.verify(backup: backup.backupPath, temporaryDirectory: temp.path("t"), progress: { progress in
                if phases.last != progress.phase { phases.append(progress.phase) }
                if progress.phase == .verify { flag.cancel() }
            }, cancellation: flag)
        }
        #expect(phases.last == .verify, "\(phases)")
        #expect(error == .interrupted)
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(error?.description == "interrupted; partial files were removed and the store was left untouched")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.path("t")) == [])
    }

    @Test func flippedByteIsCaught() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        var data = try Data(contentsOf: URL(fileURLWithPath: backup.backupPath))
        data[data.count / 2] ^= 0x10
        try data.write(to: URL(fileURLWithPath: backup.backupPath))

        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(!verification.isGood)
        #expect(verification.problems.contains { $0.contains("SHA-256 of \(backup.backupPath) does not match the manifest") })
        #expect(verification.problems.contains { $0.hasPrefix("gzip check failed") || $0.contains("decompressed snapshot's SHA-256") })
    }

    @Test func truncatedBackupIsCaught() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        let data = try Data(contentsOf: URL(fileURLWithPath: backup.backupPath))
        try data.prefix(data.count - 100).write(to: URL(fileURLWithPath: backup.backupPath))

        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(verification.problems.first == "gzip check failed: \(backup.backupPath) is truncated: the gzip stream ends early, at byte \(data.count - 100)")
        #expect(verification.problems.contains { $0.contains("SHA-256 of \(backup.backupPath) does not match") })
        #expect(verification.integrityCheck == nil)
    }

    @Test func editedManifestIsCaught() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        var edited = backup.manifest
        edited.snapshotSHA256 = String(repeating: "0", count: 64)
        try edited.encoded().write(to: URL(fileURLWithPath: backup.manifestPath))

        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(verification.problems == [
            "the decompressed snapshot's SHA-256 does not match the manifest (manifest \(edited.snapshotSHA256), decompressed \(backup.manifest.snapshotSHA256))",
        ])
        #expect(verification.integrityCheck == "ok")
    }

    @Test func editedManifestSizesAreCaught() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        var edited = backup.manifest
        edited.pageCount += 1
        edited.backupSize += 1
        try edited.encoded().write(to: URL(fileURLWithPath: backup.manifestPath))

        let problems = try BackupVerifier.verify(backup: backup.backupPath).problems
        #expect(problems.contains { $0.contains("page count \(edited.pageCount) ≠ snapshot size") })
        #expect(problems.contains { $0.contains("the size of \(backup.backupPath) does not match the manifest (manifest \(edited.backupSize) bytes") })
    }

    @Test func hostileManifestNumbersDoNotCrash() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp, rows: 50)
        var edited = backup.manifest
        edited.pageSize = Int.max
        edited.pageCount = Int.max
        try edited.encoded().write(to: URL(fileURLWithPath: backup.manifestPath))
        let problems = try BackupVerifier.verify(backup: backup.backupPath).problems
        #expect(problems == [
            "the manifest \(backup.manifestPath) is inconsistent: page size \(Int.max) × page count \(Int.max) ≠ snapshot size \(edited.snapshotSize)",
            "the manifest \(backup.manifestPath) records a page size of \(Int.max): SQLite's are powers of two from 512 to 65536",
            "the snapshot's header says page size 4096, the manifest \(Int.max)",
        ])
    }

    /// A hand-made backup of an empty "snapshot" (gzip of nothing, a manifest of 0 pages with
    /// matching sums) fails verification and is never restored: an empty file passes
    /// integrity_check, and a review's restore --force replaced a store with 0 bytes. A manifest
    /// whose page size the snapshot's header contradicts fails too.
    @Test func anEmptyOrContradictedSnapshotIsRefused() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp, rows: 50)
        let emptyGzip = Data([31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        try emptyGzip.write(to: URL(fileURLWithPath: backup.backupPath))
        var edited = backup.manifest
        edited.pageCount = 0
        edited.snapshotSize = 0
        edited.snapshotSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        edited.backupSize = Int64(emptyGzip.count)
        edited.backupSHA256 = "f61f27bd17de546264aa58f40f3aafaac7021e0ef69c17f6b1b4cd7664a037ec"
        try edited.encoded().write(to: URL(fileURLWithPath: backup.manifestPath))
        let problems = try BackupVerifier.verify(backup: backup.backupPath).problems
        #expect(problems == [
            "the manifest \(backup.manifestPath) records 0 pages: a store has at least one",
            "the decompressed snapshot has no SQLite header (0 bytes): it is not a store",
        ], "\(problems)")

        let target = temp.path("live.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 5, uuid: "LIVE")
        let before = try FileDigest.of(path: target)
        #expect(throws: BackupError.self) {
            try BackupRestorer.restore(backup: backup.backupPath, options: RestoreOptions(targetPath: target, force: true))
        }
        #expect(try FileDigest.of(path: target) == before)

        // The real snapshot, with a manifest that says half its page size and twice its pages.
        let otherFolder = try TemporaryDirectory()
        let other = try Self.makeBackup(otherFolder, rows: 50)
        var halved = other.manifest
        halved.pageSize /= 2
        halved.pageCount *= 2
        try halved.encoded().write(to: URL(fileURLWithPath: other.manifestPath))
        let contradicted = try BackupVerifier.verify(backup: other.backupPath).problems
        #expect(contradicted == ["the snapshot's header says page size \(other.manifest.pageSize), the manifest \(halved.pageSize)"])
    }

    @Test func decompressionStopsAtTheManifestSize() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        var edited = backup.manifest
        edited.pageCount = 2
        edited.snapshotSize = Int64(2 * edited.pageSize)
        try edited.encoded().write(to: URL(fileURLWithPath: backup.manifestPath))
        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(verification.problems == [
            "\(backup.backupPath) decompresses to more than the manifest's snapshot size (\(edited.snapshotSize) bytes); decompression was stopped",
        ])
        #expect(verification.integrityCheck == nil)
    }

    @Test func unreadableManifestIsNamed() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.makeBackup(temp)
        try Data("{\"formatVersion\": 1".utf8).write(to: URL(fileURLWithPath: backup.manifestPath))
        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(verification.problems == ["cannot read the backup manifest \(backup.manifestPath): it is not valid JSON"])
        #expect(verification.integrityCheck == "ok")

        try FileManager.default.removeItem(atPath: backup.manifestPath)
        let missing = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(missing.problems == ["cannot read the backup manifest \(backup.manifestPath): it does not exist"])
    }

    @Test func damagedSnapshotFailsIntegrityCheck() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 4_000, journalMode: "DELETE")
        // Damage a b-tree page of the source; the backup copies it faithfully, verify must notice.
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seek(toOffset: 4096 * 5 + 100)
        try handle.write(contentsOf: Data(repeating: 0xEE, count: 600))
        try handle.close()
        let backup = try BackupRunner.run(store: store, options: .testing(temp.path("b")))

        let verification = try BackupVerifier.verify(backup: backup.backupPath)
        #expect(!verification.isGood)
        #expect(verification.integrityCheck != "ok")
        #expect(verification.problems.contains { $0.contains("fails PRAGMA integrity_check") })
    }

    @Test func missingBackupIsAnError() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path("nope.gz")
        #expect(throws: BackupError.backupMissing(path: path)) { try BackupVerifier.verify(backup: path) }
        #expect(BackupError.backupMissing(path: path).exitStatus == .noInput)
    }
}
