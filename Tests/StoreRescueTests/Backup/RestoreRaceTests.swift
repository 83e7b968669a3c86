import Foundation
import Testing
@testable import StoreRescue

/// Two `restore --force` runs into one target at once (review rv10: 3 at a time, 2 rounds of 5
/// had a run exit 70, "the replacement … is not the file this process put there: something
/// replaced it in the same instant … nothing was replaced"). A run replaces only the store it
/// found and backed up, checked under the replacement's lock: the other run finds the store
/// replaced meanwhile and exits 75, "another storerescue is writing …", nothing changed.
@Suite struct RestoreRaceTests {
    /// Deterministic: run B is held after settling (its connection open on the store, no
    /// SQLite lock taken yet) while run A restores another backup into the same target. A must
    /// leave the target alone, exit 75 "another storerescue is restoring …", and B then finish
    /// (before: A replaced the store, and B then renamed its file over A's, which nothing had
    /// backed up; or each waited for the other to close the store until the timeout).
    @Test func aSecondRestoreWhileOneIsReplacingExits75AndChangesNothing() throws {
        let temp = try TemporaryDirectory()
        let backupB = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let otherStore = temp.path("other.sqlite")
        try BackupFixtures.makeStore(at: otherStore, rows: 50, uuid: "OTHER")
        let backupA = try BackupRunner.run(store: otherStore, options: .testing(temp.path("b")))
        let target = temp.path("t.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "TARGET")
        let options = RestoreOptions(targetPath: target, force: true, replacedStoreBackupDirectory: temp.path("safety"), lockTimeout: 2)

        var attemptByA: Result<RestoreResult, any Error>?
        _ = try BackupRestorer.restore(backup: backupB.backupPath, options: options, progress: nil, cancellation: nil,
                                       faultInjection: { step in
            guard step == .settled, attemptByA == nil else { return }
            attemptByA = Result { try BackupRestorer.restore(backup: backupA.backupPath, options: options) }
        })
        let attempt = try #require(attemptByA)
        guard case .failure(let thrown) = attempt else {
            Issue.record("run A restored while run B was replacing the same store")
            return
        }
        let error = try #require(thrown as? any OperatorFacingError)
        #expect(error.exitStatus == .temporaryFailure)
        #expect(error.description == "another storerescue is restoring \(target) at this moment; this restore left it as it is and restored nothing", "\(error.description)")
        #expect(error.recoverySuggestion?.hasPrefix("another storerescue is writing \(target) (restore, upgrade or adopt): try again when it finishes") == true, "\(error.recoverySuggestion ?? "")")
        #expect(try FileDigest.of(path: target).sha256 == backupB.manifest.snapshotSHA256, "B's restored store is in place")
        #expect(BackupFixtures.fileNames(in: temp.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) }, "A's temporary file is gone")
    }

    /// The store replaced by another process (here: a rename, as another run's would be) after
    /// this restore found and backed it up: left as it is, exit 75, nothing restored (before:
    /// the restore renamed its file over it, exit 0).
    @Test func aTargetReplacedAfterItWasBackedUpIsLeftAndExits75() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("t.sqlite")
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "TARGET")
        let newcomer = temp.path("newcomer.sqlite")
        try BackupFixtures.makeStore(at: newcomer, rows: 3, uuid: "NEW")
        let newcomerDigest = try FileDigest.of(path: newcomer)
        let options = RestoreOptions(targetPath: target, force: true, replacedStoreBackupDirectory: temp.path("safety"), lockTimeout: 2)
        let error = #expect(throws: BackupError.self) {
            try BackupRestorer.restore(backup: backup.backupPath, options: options, progress: nil, cancellation: nil,
                                       faultInjection: { step in
                if step == .settled { #expect(rename(newcomer, target) == 0) }
            })
        }
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(error?.description == "\(target) was replaced by another process while this restore was under way (another storerescue writing it at the same time); it was left as that process made it, and nothing was restored", "\(String(describing: error))")
        #expect(try FileDigest.of(path: target) == newcomerDigest, "the newcomer left as it is")
    }

    /// The review's command lines: three `restore --force` at once, three rounds. Every run ends
    /// 0 or 75 (never 70), at least one restores, and the target is the backup's snapshot.
    @Test(.enabled(if: StoreRescueExecutable.hasBackupCommands, "storerescue does not register restore yet"))
    func threeConcurrentRestoresEndWith0Or75() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp, rows: 300)
        let target = temp.path("R3/s.sqlite")
        try FileManager.default.createDirectory(atPath: temp.path("R3"), withIntermediateDirectories: true)
        try BackupFixtures.makeStore(at: target, rows: 7, uuid: "TARGET")
        let arguments = ["restore", backup.backupPath, "--to", target, "--force", "--backups-dir", temp.path("RB3"), "--json"]
        for round in 1...3 {
            let group = DispatchGroup()
            let collected = Collected()
            for _ in 1...3 {
                DispatchQueue.global().async(group: group) {
                    if let run = try? CommandRunner.run(arguments) { collected.append(run) }
                }
            }
            group.wait()
            let runs = collected.results
            #expect(runs.count == 3)
            for run in runs {
                #expect([0, 75].contains(run.status), "round \(round): \(run.status) \(run.stdout) \(run.stderr)")
                if run.status == 75 { #expect(run.stdout.contains("another storerescue"), "round \(round): \(run.stdout)") }
            }
            #expect(runs.contains { $0.status == 0 }, "round \(round)")
            #expect(try FileDigest.of(path: target).sha256 == backup.manifest.snapshotSHA256, "round \(round)")
        }
    }

    /// The runs' results, gathered from the threads that waited for them.
    private final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [CommandRunner.Result] = []
        var results: [CommandRunner.Result] { lock.withLock { stored } }
        func append(_ result: CommandRunner.Result) { lock.withLock { stored.append(result) } }
    }
}
