import Foundation
import Testing
@testable import StoreRescue

/// The one decision point between a command that is ending and the interruption that ends it:
/// who prints the outcome, whether the final result is in place, which temporaries are removed.
/// Each test has a ledger of its own and orders the two sides with semaphores at the ledger's
/// test points, never with sleeps.
@Suite struct InterruptionLedgerTests {
    static let result = PublishedResult(path: "/data/new.sqlite", description: "the salvaged store")

    /// A ledger whose test points signal a semaphore each.
    final class Observed: @unchecked Sendable {
        let terminationWaiting = DispatchSemaphore(value: 0)
        let commandAwaited = DispatchSemaphore(value: 0)
        private(set) lazy var ledger = InterruptionLedger(pause: { [unowned self] point in
            switch point {
            case .terminationWaiting: terminationWaiting.signal()
            case .commandAwaited: commandAwaited.signal()
            case .beforeFinalPublish, .afterFinalPublish, .integrityCheck: break
            }
        })
    }

    /// Runs `terminate` on a thread of its own; `wait()` returns what it decided.
    final class Termination: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var decision: InterruptionLedger.Termination?

        init(_ ledger: InterruptionLedger, sectionTimeout: TimeInterval = 10, commandGrace: TimeInterval = 10) {
            Thread.detachNewThread { [self] in
                decision = ledger.terminate(sectionTimeout: sectionTimeout, commandGrace: commandGrace)
                done.signal()
            }
        }

        func wait() -> InterruptionLedger.Termination? {
            guard done.wait(timeout: .now() + 30) == .success else { return nil }
            return decision
        }
    }

    /// A flag set on another thread, read once that thread has signalled.
    final class Box: @unchecked Sendable {
        var value = false
    }

    /// A file and a folder registered as live temporaries of `ledger`, in `dir`.
    static func liveItems(in dir: TemporaryDirectory, _ ledger: InterruptionLedger) throws -> (file: SafeFileOutput, folder: PrivateTemporaryDirectory) {
        let file = try SafeFileOutput(destinationPath: dir.path("out.bin"), permissions: 0o600, ledger: ledger)
        try file.write([1, 2, 3])
        let folder = try PrivateTemporaryDirectory(parent: dir.url.path, prefix: ".work", ledger: ledger)
        #expect(FileManager.default.createFile(atPath: folder.path("inside"), contents: Data("x".utf8)))
        return (file, folder)
    }

    @Test func theCommandClaimingFirstReportsAndNothingIsRemoved() throws {
        let dir = try TemporaryDirectory()
        let ledger = InterruptionLedger()
        let (file, folder) = try Self.liveItems(in: dir, ledger)
        #expect(ledger.claimOutcome(exitStatus: 3))
        #expect(ledger.terminate(sectionTimeout: 0, commandGrace: 0) == .commandReports(exitStatus: 3))
        #expect(ledger.claimOutcome(exitStatus: 0), "the command keeps the outcome (and the status it claimed first)")
        #expect(ledger.reporter == .command(exitStatus: 3))
        #expect(FileManager.default.fileExists(atPath: file.temporaryPath) && FileManager.default.fileExists(atPath: folder.path("inside")))
        #expect(ledger.liveItems == [file.temporaryPath, folder.path])
    }

    @Test func theInterruptionClaimingFirstRemovesEveryTemporaryAndTheCommandPrintsNothing() throws {
        let dir = try TemporaryDirectory()
        let ledger = InterruptionLedger()
        let (file, folder) = try Self.liveItems(in: dir, ledger)
        #expect(ledger.terminate(sectionTimeout: 0, commandGrace: 0) == .interrupted(removed: [file.temporaryPath, folder.path], unfinishedPublish: nil))
        #expect(!ledger.claimOutcome(exitStatus: 66), "the command's error is never printed")
        #expect(BackupFixtures.fileNames(in: dir.url.path) == [], "the folder was renamed aside and removed with what it held")
        // The command goes on until the process ends: what it creates by its old paths fails.
        #expect(!FileManager.default.createFile(atPath: folder.path("journal"), contents: nil))
        #expect(BackupFixtures.fileNames(in: dir.url.path) == [])
    }

    /// Race 3: a temporary created once the interruption has taken the list would be left
    /// behind; its creator is refused and removes it.
    @Test func aTemporaryCreatedAfterTheInterruptionClaimedIsRemovedByItsCreator() throws {
        let dir = try TemporaryDirectory()
        let ledger = InterruptionLedger()
        _ = ledger.terminate(sectionTimeout: 0, commandGrace: 0)
        let fileError = #expect(throws: SafeFileOutputError.self) {
            try SafeFileOutput(destinationPath: dir.path("late.bin"), permissions: 0o600, ledger: ledger)
        }
        #expect(fileError == .cannotCreate(path: dir.path("late.bin"), reason: "the process is ending on an interruption"))
        let folderError = #expect(throws: CocoaError.self) {
            try PrivateTemporaryDirectory(parent: dir.url.path, prefix: ".late", ledger: ledger)
        }
        #expect(folderError?.userInfo[NSLocalizedDescriptionKey] as? String
            == "cannot create a private temporary directory in \(dir.url.path): the process is ending on an interruption")
        #expect(BackupFixtures.fileNames(in: dir.url.path) == [])
        #expect(ledger.liveItems == [])
    }

    /// Race 1: the final result was put in place, then the interruption came before the command
    /// printed. The command is let report (its real outcome, its own status).
    @Test func aFinalResultInPlaceLetsTheCommandReport() throws {
        let dir = try TemporaryDirectory()
        let observed = Observed()
        let ledger = observed.ledger
        let (file, folder) = try Self.liveItems(in: dir, ledger)
        try file.publish(as: Self.result)
        #expect(ledger.publishedResult == Self.result)
        let termination = Termination(ledger)
        #expect(observed.commandAwaited.wait(timeout: .now() + 30) == .success)
        #expect(ledger.claimOutcome(exitStatus: 0))
        #expect(termination.wait() == .commandReports(exitStatus: 0))
        #expect(FileManager.default.fileExists(atPath: dir.path("out.bin")))
        #expect(ledger.liveItems == [folder.path], "the command's workspace is its own to remove")
    }

    /// The final result in place, and the command never reports: the interruption ends it,
    /// saying where the result is (and with the result's status).
    @Test func aFinalResultInPlaceWithoutAReportEndsSayingSo() throws {
        let dir = try TemporaryDirectory()
        let ledger = InterruptionLedger()
        let (file, folder) = try Self.liveItems(in: dir, ledger)
        let adopted = PublishedResult(path: dir.path("out.bin"), description: "the adopted store", exitStatus: .adoptedOnly)
        try file.publish(as: adopted)
        #expect(ledger.terminate(sectionTimeout: 0, commandGrace: 0) == .interruptedAfterPublishing(adopted, removed: [folder.path]))
        #expect(!ledger.claimOutcome(exitStatus: 0))
        #expect(BackupFixtures.fileNames(in: dir.url.path) == ["out.bin"])
    }

    /// The interruption comes while the final publish runs: it waits for it, then sees it done.
    /// The section registers a temporary meanwhile (a copy kept under the store's lock): no
    /// deadlock, and it is removed with the rest.
    @Test func aRunningFinalPublishIsWaitedForAndThenSeenInPlace() throws {
        let dir = try TemporaryDirectory()
        let observed = Observed()
        let ledger = observed.ledger
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        let late = dir.path(".late" + TemporaryItems.marker + "1-20260101T000000Z-a")
        let registered = Box()
        Thread.detachNewThread {
            ledger.uninterruptible(publishing: Self.result) {
                entered.signal()
                proceed.wait()
                registered.value = FileManager.default.createFile(atPath: late, contents: nil) && ledger.register(late, isFolder: false) != nil
            }
            finished.signal()
        }
        #expect(entered.wait(timeout: .now() + 30) == .success)
        let termination = Termination(ledger, commandGrace: 0)
        #expect(observed.terminationWaiting.wait(timeout: .now() + 30) == .success)
        proceed.signal()
        #expect(termination.wait() == .interruptedAfterPublishing(Self.result, removed: [late]))
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(registered.value, "a section registered a temporary while terminate waited for it")
        #expect(BackupFixtures.fileNames(in: dir.url.path) == [])
    }

    /// A section that does not finish within the bound: the interruption goes on without it,
    /// and names the publish it could not wait for (never "nothing was replaced").
    @Test func aFinalPublishStillRunningAtTheBoundIsNamed() throws {
        let ledger = InterruptionLedger()
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            ledger.uninterruptible(publishing: Self.result) {
                entered.signal()
                proceed.wait()
            }
            finished.signal()
        }
        #expect(entered.wait(timeout: .now() + 30) == .success)
        #expect(ledger.terminate(sectionTimeout: 0.05, commandGrace: 10) == .interrupted(removed: [], unfinishedPublish: Self.result))
        proceed.signal()
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(!ledger.claimOutcome(exitStatus: 0), "the interruption keeps the outcome it claimed")
    }

    /// A section that is not the final result (a backup taken on the way), and a final publish
    /// that fails, leave "nothing was replaced" true.
    @Test func onlyAFinalPublishThatReturnedCounts() throws {
        struct Failed: Error {}
        let ledger = InterruptionLedger()
        ledger.uninterruptible {}
        #expect(throws: Failed.self) { try ledger.uninterruptible(publishing: Self.result) { throw Failed() } }
        #expect(ledger.publishedResult == nil)
        #expect(ledger.terminate(sectionTimeout: 0, commandGrace: 10) == .interrupted(removed: [], unfinishedPublish: nil))
    }

    /// The command claims while the interruption waits for a section (it printed an outcome it
    /// had before the publish could finish): the interruption stands down, and sections run again.
    @Test func theCommandClaimingWhileTheInterruptionWaitsKeepsTheOutcome() throws {
        let observed = Observed()
        let ledger = observed.ledger
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            ledger.uninterruptible {
                entered.signal()
                proceed.wait()
            }
            finished.signal()
        }
        #expect(entered.wait(timeout: .now() + 30) == .success)
        let termination = Termination(ledger)
        #expect(observed.terminationWaiting.wait(timeout: .now() + 30) == .success)
        #expect(ledger.claimOutcome(exitStatus: 74))
        proceed.signal()
        #expect(termination.wait() == .commandReports(exitStatus: 74))
        #expect(finished.wait(timeout: .now() + 30) == .success)
        ledger.uninterruptible {}  // would wait for good were sections still held
    }

    /// The rule for a failure printed after a signal: what an interruption produces is reported
    /// as the interruption; what the input or the command line decides, as it is.
    @Test(arguments: [
        (66, "cannot read /data/.salvage.storerescue-tmp-1-20260101T000000Z-a/salvaged.sqlite", true),
        (74, "writing /data/new.sqlite failed: No such file or directory", true),
        (70, "internal error: interrupted", true),
        (75, "interrupted; partial files were removed and the store was left untouched", true),
        (65, "SQLite cannot read /data/.upgrade.storerescue-tmp-1-20260101T000000Z-a/read.sqlite", true),
        (65, "/data/store.sqlite is not a SQLite database", false),
        (73, "/data/new.sqlite already exists; it was left untouched", false),
        (64, "--version goes with --catalog.", false),
        (3, "refused", false),
    ] as [(Int32, String, Bool)])
    func failuresAfterASignal(status: Int32, message: String, isExplained: Bool) {
        #expect(InterruptionLedger.isExplainedByInterruption(ErrorSummary(message: message, hint: nil, exitStatus: status)) == isExplained)
    }

    /// Once the final result is in place, a 70 is a check of that result failing (`upgrade`'s
    /// match of the store it put in place: `resultNotAtTarget`), never the interruption — which
    /// would report the result as complete, exit 0. What the interruption produces still is.
    @Test func afterThePublishAnInternalErrorIsTheResults() {
        let notAtTarget = ErrorSummary(message: "the upgraded store does not match V4", hint: nil, exitStatus: 70)
        #expect(InterruptionLedger.isExplainedByInterruption(notAtTarget))
        #expect(!InterruptionLedger.isExplainedByInterruption(notAtTarget, afterPublishing: true))
        let cutShort = ErrorSummary(message: "writing /data/backups/x.gz failed: No space left on device", hint: nil, exitStatus: 74)
        #expect(InterruptionLedger.isExplainedByInterruption(cutShort, afterPublishing: true))
    }
}
