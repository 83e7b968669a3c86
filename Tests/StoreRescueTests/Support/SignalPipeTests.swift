import Dispatch
import Foundation
import Testing
@testable import StoreRescue

/// Signals reach their handler whenever they arrive after `SignalPipe.install` returns.
@Suite(.serialized)
struct SignalPipeTests {
    /// In this process, with SIGUSR2 (nothing else here uses it): signals raised the instant the
    /// pipe is installed are each handed to the handler, in order, on the queue given.
    @Test func everySignalAfterInstallReachesTheHandlerInOrder() throws {
        let queue = DispatchQueue(label: "signal-pipe-test")
        let received = Received()
        try SignalPipe.install(signals: [SIGUSR2, SIGUSR1], queue: queue) { number in
            dispatchPrecondition(condition: .onQueue(queue))
            received.append(number)
        }
        // raise(): delivered to this thread before it returns, into the pipe.
        raise(SIGUSR2)
        raise(SIGUSR1)
        raise(SIGUSR2)
        let deadline = Date().addingTimeInterval(10)
        while received.numbers.count < 3, Date() < deadline { usleep(1_000) }
        #expect(received.numbers == [SIGUSR2, SIGUSR1, SIGUSR2])
        // Once per process: a second pipe would take the first one's handlers.
        #expect(throws: SignalPipe.InstallError.self) {
            try SignalPipe.install(signals: [SIGUSR2], queue: queue) { _ in }
        }
    }

    /// The command sends itself SIGTERM the instant its handling is installed (the test hook
    /// `STORERESCUE_TEST_SIGNAL_AFTER_INSTALL`). With a Dispatch signal source the signal was
    /// dropped there, and the salvage ran to its end and published (exit 0): a user's Ctrl-C in the
    /// first milliseconds was ignored. Now the run is interrupted: exit 75, nothing at `--out`.
    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"), arguments: [false, true])
    func aSignalTheInstantHandlingIsInstalledInterruptsTheCommand(json: Bool) throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try BigStore.make(store: dir.path("big.sqlite"), catalog: dir.path("big.json"), rows: 3000)
        var environment = ProcessInfo.processInfo.environment
        environment["STORERESCUE_TEST_SIGNAL_AFTER_INSTALL"] = String(SIGTERM)
        let output = dir.path("new.sqlite")
        // Started as a shell starts it, with the signals not blocked. A child inherits the
        // spawning thread's mask, and this test's thread (a Dispatch one) blocks them all: a
        // Dispatch signal source then found the signal still pending and the old code passed.
        var handled = sigset_t()
        var previous = sigset_t()
        sigemptyset(&handled)
        for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&handled, number) }
        pthread_sigmask(SIG_UNBLOCK, &handled, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        // Three runs: the old code's loss depended on when Dispatch's thread made the source
        // ready (it ran to its end in 5 of 6 runs from a shell).
        for round in 1...3 {
            let run = try CommandRunner.run(
                ["salvage", store, "--out", output, "--catalog", catalog] + (json ? ["--json"] : []), environment: environment, timeout: 60)
            #expect(run.status == 75, "round \(round): \(run.stdout)\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "round \(round)")
            if json {
                let error = try #require(try run.json()["error"] as? [String: Any], "\(run.stdout)")
                #expect((error["message"] as? String)?.hasPrefix("interrupted by SIGTERM") == true, "\(run.stdout)")
                #expect(error["exitStatus"] as? Int == 75, "\(run.stdout)")
            } else {
                #expect(run.stderr.contains("interrupted by SIGTERM"), "\(run.stderr)")
            }
            try? FileManager.default.removeItem(atPath: output)
        }
    }

    /// A signal the parent set to be ignored stays ignored, as Unix programs leave it: under
    /// `nohup` (SIGHUP ignored) a hangup does not end the run. Here the shell ignores SIGHUP and
    /// runs the command, which sends itself SIGHUP once its handling is installed: it runs to its
    /// end and publishes. Before, the handler took SIGHUP over and the run ended with exit 75.
    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func aSignalIgnoredByTheParentStaysIgnored() throws {
        let dir = try TemporaryDirectory()
        let (store, catalog) = try BigStore.make(store: dir.path("big.sqlite"), catalog: dir.path("big.json"), rows: 300)
        var environment = ProcessInfo.processInfo.environment
        environment["STORERESCUE_TEST_SIGNAL_AFTER_INSTALL"] = String(SIGHUP)
        let output = dir.path("new.sqlite")
        let run = try CommandRunner.run(
            program: "/bin/sh", ["-c", "trap '' HUP; exec \"$0\" \"$@\"", CommandRunner.executable.path, "salvage", store, "--out", output, "--catalog", catalog],
            environment: environment, timeout: 60)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: output))
    }
}

extension SignalPipeTests {
    /// When the system refuses the thread that reads the pipe (`ulimit -u`, a pids limit; here
    /// `STORERESCUE_TEST_REFUSE_THREADS`, since root is not limited), a signal takes its default
    /// action: SIGTERM the instant the handling is installed ends the process, before it has
    /// written anything — also when the parent started it with the signals blocked (they are
    /// unblocked all the same). Before, the handler put it into a pipe nobody read, and the
    /// backup ran to its end and published (exit 0) whatever the operator sent.
    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"), arguments: [false, true])
    func withoutAThreadToReadThePipeASignalTakesItsDefaultAction(startedBlocked: Bool) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 3000)
        var environment = ProcessInfo.processInfo.environment
        environment["STORERESCUE_TEST_REFUSE_THREADS"] = "1"
        environment["STORERESCUE_TEST_SIGNAL_AFTER_INSTALL"] = String(SIGTERM)
        // Started as a shell starts it, with the signals not blocked, or with them blocked (a
        // child inherits the spawning thread's mask).
        var handled = sigset_t()
        var previous = sigset_t()
        sigemptyset(&handled)
        for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&handled, number) }
        pthread_sigmask(startedBlocked ? SIG_BLOCK : SIG_UNBLOCK, &handled, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let run = try CommandRunner.run(["backup", store, "--to", dir.path("b")], environment: environment, timeout: 60)
        #expect(run.signal == SIGTERM, "ended by SIGTERM: status \(run.status), \(run.stdout)\(run.stderr)")
        #expect(BackupFixtures.fileNames(in: dir.path("b")).filter { $0.hasSuffix(".gz") }.isEmpty)
    }
}

/// What the handler received, from the queue's thread.
private final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Int32] = []

    func append(_ number: Int32) {
        lock.lock()
        list.append(number)
        lock.unlock()
    }

    var numbers: [Int32] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}
