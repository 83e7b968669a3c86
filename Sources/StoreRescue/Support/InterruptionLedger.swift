import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an interruption has to know about a process, under one lock: its live temporaries, its
/// running publish sections, whether its final result is in place, and who reports its outcome.
/// `TemporaryItems.ledger` is the process's; a test makes its own.
///
/// The command's main thread and the signal handler that ends an interrupted process
/// (`storerescue`'s `InterruptHandling`) race near the end of a run; these rules decide every
/// race in one place:
///
/// - **One outcome.** Whoever prints the outcome claims it first — the command its result or
///   error (`claimOutcome(exitStatus:)`), the interruption in `terminate`. The first claim wins;
///   the other side prints nothing and does not choose the exit status. A command that lost the
///   claim waits for the interruption to end the process.
/// - **Sections.** `uninterruptible` runs the steps that must not be cut in half (a link, a
///   rename, a backup and its manifest). `terminate` starts no new one and waits for the running
///   ones, at most `sectionTimeout`.
/// - **The final result.** `uninterruptible(publishing:)` runs the step that puts the command's
///   final result in place and records it (`publishedResult`) the moment the step returns. From
///   then on an interruption lets the command finish and report; only a command that has not
///   claimed the outcome within `commandGrace` is ended, saying that the result is in place.
/// - **Nothing left.** The interruption claims the outcome and takes every live temporary in
///   one step under the lock; from then on `register` refuses, so a temporary created later is
///   removed by its creator. Temporaries are removed only once the interruption owns the
///   outcome, so no error they cause is ever printed.
///
/// ```swift
/// let ledger = InterruptionLedger()
/// try ledger.uninterruptible(publishing: PublishedResult(path: output, description: "the salvaged store")) {
///     try target.publish(file)
/// }
/// switch ledger.terminate() {                        // on the signal queue, later
/// case .commandReports: break                        // the command prints its real outcome
/// case .interruptedAfterPublishing(let result, _): print("\(result.path) is in place")
/// case .interrupted: print("nothing was replaced")
/// }
/// ```
///
/// No lock is held while a section's body runs or while temporaries are removed, so a section
/// that registers a temporary or a command that prints never waits for `terminate`, and
/// `terminate` never waits longer than its bounds.
public final class InterruptionLedger: @unchecked Sendable {
    /// What `terminate` decided, and what its caller does next.
    public enum Termination: Equatable, Sendable {
        /// The command claimed the outcome first: it prints and exits by itself with
        /// `exitStatus`. Print nothing; nothing was removed.
        case commandReports(exitStatus: Int32)
        /// The interruption owns the outcome and the final result is not in place: `removed` are
        /// the temporaries removed. `unfinishedPublish` is a final publish still running when
        /// the wait for it ended: its path holds the previous file or the complete new one.
        case interrupted(removed: [String], unfinishedPublish: PublishedResult?)
        /// The interruption owns the outcome and the final result is in place: the command had
        /// not reported within `commandGrace`.
        case interruptedAfterPublishing(PublishedResult, removed: [String])
    }

    /// Who reports the outcome.
    enum Reporter: Equatable {
        case command(exitStatus: Int32)
        case interruption
    }

    private let condition = NSCondition()
    private var live: [Int: (path: String, isFolder: Bool)] = [:]
    private var nextToken = 0
    private var sectionDepth = 0
    private var nextSection = 0
    private var runningPublishes: [Int: PublishedResult] = [:]
    /// True while `terminate` waits for sections, and for good once the interruption owns the
    /// outcome: no new section starts.
    private var isHoldingSections = false
    private var published: PublishedResult?
    private var storedReporter: Reporter?

    /// Called at the points a test stops at (`TestPause`); nil outside tests. At
    /// `.terminationWaiting` and `.commandAwaited` it runs with the lock held: it may signal,
    /// not call the ledger.
    private let pause: ((TestPause.Point) -> Void)?

    public init() {
        pause = nil
    }

    init(pause: ((TestPause.Point) -> Void)?) {
        self.pause = pause
    }

    /// Who has claimed the outcome, if anyone.
    var reporter: Reporter? {
        condition.lock()
        defer { condition.unlock() }
        return storedReporter
    }

    // MARK: Temporaries

    /// Records a live temporary. Returns nil once the interruption owns the outcome (it has
    /// taken the temporaries to remove): the caller removes what it created and throws.
    func register(_ path: String, isFolder: Bool) -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard storedReporter != .interruption else { return nil }
        nextToken += 1
        live[nextToken] = (path, isFolder)
        return nextToken
    }

    /// Forgets a temporary (published or removed by its owner). 0 is no registration.
    func unregister(_ token: Int) {
        guard token != 0 else { return }
        condition.lock()
        live[token] = nil
        condition.unlock()
    }

    /// The live temporaries (paths), oldest first.
    public var liveItems: [String] {
        condition.lock()
        defer { condition.unlock() }
        return live.keys.sorted().compactMap { live[$0]?.path }
    }

    /// Removes every live temporary now, without waiting for anything: for a process that ends
    /// normally (what is still registered then is garbage). Returns the paths removed.
    @discardableResult
    public func removeLiveItemsNow() -> [String] {
        condition.lock()
        let items = live.keys.sorted().compactMap { live[$0] }
        live = [:]
        condition.unlock()
        return Self.remove(items)
    }

    // MARK: Sections

    /// Runs `body` as a section an interruption waits for (at most `terminate`'s
    /// `sectionTimeout`) instead of cutting it in half; while `terminate` waits, or once the
    /// interruption owns the outcome, a new section waits (a nested one may start, to finish its
    /// outer).
    ///
    /// - Parameter result: set for the step that puts the command's final result in place: it is
    ///   recorded as `publishedResult` when `body` returns (not when it throws).
    public func uninterruptible<Value>(publishing result: PublishedResult? = nil, _ body: () throws -> Value) rethrows -> Value {
        guard result != nil else { return try section(publishing: nil, body) }
        pause?(.beforeFinalPublish)
        let value = try section(publishing: result, body)
        pause?(.afterFinalPublish)
        return value
    }

    private func section<Value>(publishing result: PublishedResult?, _ body: () throws -> Value) rethrows -> Value {
        condition.lock()
        while isHoldingSections && sectionDepth == 0 { condition.wait() }
        sectionDepth += 1
        nextSection += 1
        let section = nextSection
        if let result { runningPublishes[section] = result }
        condition.unlock()
        var returned = false
        defer {
            condition.lock()
            sectionDepth -= 1
            runningPublishes[section] = nil
            if returned, let result { published = result }
            condition.broadcast()
            condition.unlock()
        }
        let value = try body()
        returned = true
        return value
    }

    /// The command's final result, once a `publishing` section has put it in place.
    public var publishedResult: PublishedResult? {
        condition.lock()
        defer { condition.unlock() }
        return published
    }

    // MARK: The outcome

    /// Claims the right to print the outcome and choose the exit status (`exitStatus`), for the
    /// command. True when the command has it (now or before); false when the interruption
    /// claimed it first: then print nothing and do not exit — the interruption ends the process.
    public func claimOutcome(exitStatus: Int32) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        switch storedReporter {
        case .interruption: return false
        case .command: return true
        case nil:
            storedReporter = .command(exitStatus: exitStatus)
            condition.broadcast()
            return true
        }
    }

    /// For an interruption that is to end the process: decides who reports the outcome and, when
    /// it is the interruption, removes every live temporary.
    ///
    /// 1. Starts no new section and waits, at most `sectionTimeout`, for the running ones.
    /// 2. When the final result is in place, lets the command go on (sections start again) and
    ///    waits, at most `commandGrace`, for it to claim the outcome.
    /// 3. Unless the command has claimed it, claims the outcome for the interruption and takes
    ///    every live temporary (`register` refuses from then on), then removes them.
    ///
    /// - Returns: what the caller prints, if anything (`Termination`). After `.interrupted` or
    ///   `.interruptedAfterPublishing` the caller ends the process: the command is still running
    ///   and may go on until then, but prints nothing.
    public func terminate(sectionTimeout: TimeInterval = 10, commandGrace: TimeInterval = 10) -> Termination {
        condition.lock()
        if case .command(let status) = storedReporter {
            condition.unlock()
            return .commandReports(exitStatus: status)
        }
        if storedReporter == nil {
            waitForSections(timeout: sectionTimeout)
            if published != nil, storedReporter == nil {
                // The result is in place: the command finishes and reports, if it can in time.
                isHoldingSections = false
                condition.broadcast()
                pause?(.commandAwaited)
                let deadline = Date().addingTimeInterval(commandGrace)
                while storedReporter == nil, condition.wait(until: deadline) {}
                if storedReporter == nil { waitForSections(timeout: sectionTimeout) }
            }
            if case .command(let status) = storedReporter {
                isHoldingSections = false
                condition.broadcast()
                condition.unlock()
                return .commandReports(exitStatus: status)
            }
            storedReporter = .interruption
        }
        let items = live.keys.sorted().compactMap { live[$0] }
        live = [:]
        let result = published
        let unfinished = runningPublishes.keys.sorted().first.flatMap { runningPublishes[$0] }
        condition.unlock()
        let removed = Self.remove(items)
        if let result { return .interruptedAfterPublishing(result, removed: removed) }
        return .interrupted(removed: removed, unfinishedPublish: unfinished)
    }

    /// With the lock held: holds new sections and waits for the running ones, until `timeout`.
    private func waitForSections(timeout: TimeInterval) {
        isHoldingSections = true
        pause?(.terminationWaiting)
        let deadline = Date().addingTimeInterval(timeout)
        while sectionDepth > 0, condition.wait(until: deadline) {}
    }

    // MARK: Failures after a signal

    /// The rule for a failure a command is about to report after a signal has asked it to stop:
    /// true when the interruption explains it, and the interruption is what is reported instead.
    ///
    /// Explained: the statuses an interrupted run produces — 66 (a file of its own gone: its
    /// temporaries removed under it), 70 (an unforeseen error, such as SQLite interrupted in the
    /// middle of a statement), 74 (a read or write cut short), 75 (the job's own "interrupted",
    /// or a wait it was told to stop) — and any message naming one of this tool's temporaries
    /// (`TemporaryItems.marker`), which no genuine failure shows. Never explained: what the input
    /// or the command line decides — 64 usage, 65 not a store, 73 an output in the way, the
    /// refusals and checks 1–5 — which are reported as they are, signal or not. A genuine 66 or
    /// 74 that happens to come after a signal is reported as the interruption (exit 75); the
    /// next run shows it. Once the final result is in place (`afterPublishing`), a 70 is not
    /// explained: what fails then is a check of the result itself (`upgrade`'s match of the
    /// store it put in place), and reporting it as the interruption would call it complete.
    public static func isExplainedByInterruption(_ failure: ErrorSummary, afterPublishing: Bool = false) -> Bool {
        if afterPublishing, failure.exitStatus == ExitStatus.internalError.rawValue { return false }
        let explained: [ExitStatus] = [.noInput, .internalError, .ioError, .temporaryFailure]
        return explained.map(\.rawValue).contains(failure.exitStatus) || failure.message.contains(TemporaryItems.marker)
    }

    // MARK: Removing

    /// Removes `items`. A folder is first renamed to a new temporary name beside it, so that the
    /// command — still running until the process ends — can create nothing more in it by its
    /// path (SQLite's `-journal`, a file of the workspace): what it writes then fails instead of
    /// re-filling the folder as it is removed.
    static func remove(_ items: [(path: String, isFolder: Bool)]) -> [String] {
        for item in items {
            guard item.isFolder else {
                unlink(item.path)
                continue
            }
            let parent = SafeFileOutput.folder(of: item.path)
            let aside = parent + "/" + TemporaryItems.name(label: ".removed", random: String(UInt32.random(in: 0...UInt32.max), radix: 36))
            let path = rename(item.path, aside) == 0 ? aside : item.path
            if (try? FileManager.default.removeItem(atPath: path)) == nil {
                try? FileManager.default.removeItem(atPath: path)  // a file appeared meanwhile
            }
        }
        return items.map(\.path)
    }
}
