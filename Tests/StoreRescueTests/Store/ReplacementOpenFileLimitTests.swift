import Foundation
import Testing
@testable import StoreRescue

/// No file descriptor left while a store is replaced (`restore --force`, `upgrade`): exit 74,
/// "no file descriptor left" with the open-files hint, the store as it was and nothing left
/// beside it — never "cannot be checkpointed … a damaged store is saved with --on-failure
/// clean" (65), "still has -journal beside it" (73), "something replaced it meanwhile" (70), nor
/// a replacement reported done whose folder was never synced.
@Suite struct ReplacementOpenFileLimitTests {
    /// `restore --force` over a store SQLite cannot settle (its header zeroed, its rows in a
    /// `-wal`: folded into a copy, renamed over it), under `ulimit -n` 5 to 16. A review: at the
    /// one limit where only the folder's `fsync` lacked a descriptor, the rename went ahead and
    /// the folder was never synced (exit 0). Every failure must be the limit, leave the store's
    /// files as they were and no temporary; the replacement's own folder must be met at least
    /// once ("the store was not replaced"), and the highest limit must let the restore through.
    @Test(.enabled(if: CommandRunner.isAvailable, "needs the built storerescue"))
    func restoreOverADamagedStoreWithNoFileDescriptorLeftLeavesItAsItWas() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 50)
        let original = temp.path("original.sqlite")
        try ReplacementFixtures.walStoreAtRest(at: original, rows: 30)
        let mainBytes = try Data(contentsOf: URL(fileURLWithPath: original))
        let damaged = Data(repeating: 0, count: 16) + mainBytes.dropFirst(16)
        let walBytes = try Data(contentsOf: URL(fileURLWithPath: original + "-wal"))
        var metTheReplacement = false
        var succeededAt: Int?
        for limit in 5...16 {
            let folder = temp.path("L\(limit)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            let store = folder + "/d.sqlite"
            try damaged.write(to: URL(fileURLWithPath: store))
            try walBytes.write(to: URL(fileURLWithPath: store + "-wal"))
            let result = try BackupFailureTests.runUnderOpenFileLimit(
                limit, ["restore", backup.backupPath, "--to", store, "--force", "--backups-dir", folder + "/safety"])
            let name = "ulimit -n \(limit)"
            if result.status == 0 {
                succeededAt = succeededAt ?? limit
                #expect(try FileDigest.of(path: store).sha256 == backup.manifest.snapshotSHA256, "\(name)")
                continue
            }
            #expect(succeededAt == nil, "\(name) failed above a limit that succeeded: \(result.standardError)")
            #expect(result.status == ExitStatus.ioError.rawValue, "\(name): \(result.standardError)")
            #expect(result.standardError.contains("no file descriptor left"), "\(name): \(result.standardError)")
            #expect(result.standardError.contains("\nTry: not a lack of disk space: raise the limit on open files"), "\(name): \(result.standardError)")
            if result.standardError.hasPrefix("Error: cannot open \(folder): no file descriptor left (Too many open files); the store was not replaced\n") {
                metTheReplacement = true
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == damaged, "\(name): the main file changed")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "-wal")) == walBytes, "\(name): the -wal changed")
            let left = BackupFixtures.fileNames(in: folder).filter { $0 != "safety" }
            #expect(left == ["d.sqlite", "d.sqlite-wal"], "\(name): left beside the store: \(left)")
        }
        #expect(metTheReplacement, "no limit met the replacement's folder")
        #expect(succeededAt != nil)
    }

    /// The errors that keep an errno as a number say "no file descriptor left" and what to try
    /// for `EMFILE`/`ENFILE`, never "check the store's permissions" or "check the file's
    /// permissions and the disk".
    @Test(arguments: [EMFILE, ENFILE])
    func errnoErrorsSayNoFileDescriptorWasLeft(code: Int32) {
        let reason = String(cString: strerror(code))
        let locked = StoreReplacementError.cannotRead(path: "/data/default.store", code: code)
        #expect(locked.description == "cannot open /data/default.store: no file descriptor left (\(reason)); the store was not replaced")
        #expect(locked.recoverySuggestion?.hasPrefix("not a lack of disk space: raise the limit on open files") == true)
        #expect(locked.exitStatus == .ioError)
        let moved = FileMoveError.unreadable(path: "/data/default.store-wal", code: code)
        #expect(moved.description == "cannot open /data/default.store-wal: no file descriptor left (\(reason)); nothing was moved")
        #expect(moved.recoverySuggestion?.hasPrefix("not a lack of disk space: raise the limit on open files") == true)
        #expect(moved.exitStatus == .ioError)
        // Any other errno keeps its old reading.
        #expect(StoreReplacementError.cannotRead(path: "/s", code: EACCES).recoverySuggestion?.hasPrefix("check the store's permissions") == true)
        #expect(FileMoveError.unreadable(path: "/s", code: EIO).recoverySuggestion?.hasPrefix("check the file's permissions") == true)
    }
}
