import Foundation
import Testing
@testable import StoreRescue

/// The built `storerescue` executable, run as an operator would. Enabled once the main command
/// registers `backup`, `verify` and `restore` (until then its `--help` does not list them).
@Suite(.enabled(if: StoreRescueExecutable.hasBackupCommands, "storerescue does not register backup/verify/restore yet"))
struct BackupCommandEndToEndTests {
    static func storerescue(_ arguments: [String]) throws -> (status: Int32, standardOutput: String, standardError: String) {
        try BackupFixtures.run(StoreRescueExecutable.path, arguments)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// A store already damaged when it was backed up (the project's Damaged sample): restore
    /// refuses its snapshot, saying how to put it back anyway; `--as-backed-up` does, when the
    /// bytes are exactly the backup's, and says what SQLite's check found.
    @Test func aBackupOfADamagedStoreIsRestoredOnlyAsBackedUp() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("Notes.sqlite")
        let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")
        try FileManager.default.copyItem(atPath: samples.appendingPathComponent("Damaged/Notes.sqlite").path, toPath: store)
        let backup = try Self.storerescue(["backup", store, "--to", temp.path("b"), "--json"])
        #expect(backup.status == 0, "\(backup.standardError)")
        let report = try Self.json(backup.standardOutput)
        let gz = try #require(report["backup"] as? String)
        let refused = try Self.storerescue(["restore", gz, "--to", temp.path("back.sqlite")])
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("fails PRAGMA quick_check"))
        #expect(refused.standardError.contains("add --as-backed-up"))
        #expect(!FileManager.default.fileExists(atPath: temp.path("back.sqlite")))
        let restored = try Self.storerescue(["restore", gz, "--to", temp.path("back.sqlite"), "--as-backed-up", "--json"])
        #expect(restored.status == 0, "\(restored.standardError)")
        let result = try Self.json(restored.standardOutput)
        #expect((result["damagedSnapshotCheck"] as? String)?.hasPrefix("PRAGMA quick_check: ") == true, "\(result)")
        let digest = try #require(result["snapshotSHA256"] as? String)
        #expect(try FileDigest.of(path: temp.path("back.sqlite")).sha256 == digest)
    }

    @Test func backupVerifyRestoreWithJSON() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 500)

        let backup = try Self.storerescue(["backup", store, "--to", temp.path("b"), "--reason", "pre-upgrade", "--json"])
        #expect(backup.status == 0)
        #expect(backup.standardError == "", "no progress bar when stderr is not a terminal")
        let report = try Self.json(backup.standardOutput)
        let gz = try #require(report["backup"] as? String)
        #expect((report["details"] as? [String: Any])?["reason"] as? String == "pre-upgrade")
        #expect((report["compressionRatio"] as? Double ?? 0) > 1)

        let verify = try Self.storerescue(["verify", gz, "--json"])
        #expect(verify.status == 0)
        #expect(try Self.json(verify.standardOutput)["good"] as? Bool == true)

        let refused = try Self.storerescue(["restore", gz, "--to", store])
        #expect(refused.status == ExitStatus.cannotCreateOutput.rawValue)
        #expect(refused.standardError.hasPrefix("Error: refusing to overwrite \(store): \(store)"))
        #expect(refused.standardError.contains("\nTry: restore to a new path, or add --force"))

        let refusedJSON = try Self.storerescue(["restore", gz, "--to", store, "--json"])
        let error = try #require(try Self.json(refusedJSON.standardOutput)["error"] as? [String: Any])
        #expect(error["exitStatus"] as? Int == 73)
        #expect((error["message"] as? String)?.hasPrefix("refusing to overwrite") == true)
        #expect(error["hint"] is String)

        let forced = try Self.storerescue(["restore", gz, "--to", store, "--force", "--json"])
        #expect(forced.status == 0)
        let replaced = try #require(try Self.json(forced.standardOutput)["replacedStoreBackup"] as? String)
        #expect(FileManager.default.fileExists(atPath: replaced))
    }

    @Test func verifyReportsProblemsWithStatus1() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let data = try Data(contentsOf: URL(fileURLWithPath: backup.backupPath))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: backup.backupPath))
        let verify = try Self.storerescue(["verify", backup.backupPath])
        #expect(verify.status == ExitStatus.checkFailed.rawValue)
        #expect(verify.standardError.hasPrefix("FAILED: \(backup.backupPath)\n  - gzip check failed: \(backup.backupPath) is truncated"))
    }

    @Test func badArgumentsAndAMissingStoreUseTheirStatuses() throws {
        let temp = try TemporaryDirectory()
        #expect(try Self.storerescue(["backup", "x.sqlite", "--level", "12"]).status == ExitStatus.usage.rawValue)
        #expect(try Self.storerescue(["backup", "x.sqlite", "--keep", "0"]).status == ExitStatus.usage.rawValue)
        let missing = try Self.storerescue(["backup", temp.path("none.sqlite"), "--to", temp.path("b")])
        #expect(missing.status == ExitStatus.noInput.rawValue)
        #expect(missing.standardError == "Error: the store \(temp.path("none.sqlite")) does not exist\n"
            + "Try: check the path; a store is the main file (e.g. default.store), not its -wal or -shm\n")
    }
}

enum StoreRescueExecutable {
    static var path: String {
        (BackupFixtures.probePath as NSString).deletingLastPathComponent + "/storerescue"
    }

    static let hasBackupCommands: Bool = {
        guard FileManager.default.isExecutableFile(atPath: path),
              let help = try? BackupFixtures.run(path, ["--help"]) else { return false }
        return help.standardOutput.contains("\n  backup ") && help.standardOutput.contains("\n  restore ")
    }()
}
