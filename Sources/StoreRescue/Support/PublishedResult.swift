/// A command's final result, once it is in place: what it is, where, and the exit status the
/// command gives it. Recorded by `InterruptionLedger.uninterruptible(publishing:_:)` when the
/// step that puts it in place returns, so that an interruption after that instant never says
/// "nothing was replaced".
///
/// Only a command's own output is its final result: the salvaged store of `salvage`, the store
/// `upgrade` replaced, the backup of `backup`. A file published on the way — the backup `upgrade`
/// takes first, the salvage `upgrade --on-failure clean` makes in its workspace, the store
/// `salvage` creates before filling it — is not.
///
/// ```swift
/// let result = PublishedResult(path: "/data/new.sqlite", description: "the salvaged store")
/// try TemporaryItems.uninterruptible(publishing: result) { try target.publish(file) }
/// ```
public struct PublishedResult: Sendable, Equatable {
    /// Where the result now is (a backup's `.gz`, with its manifest beside it).
    public var path: String
    /// What it is, as a sentence names it: "the salvaged store", "the upgraded store".
    public var description: String
    /// The status the command exits with for this result (`upgrade`: 0, 4 adopted only, 5 fell
    /// back to a clean store; every other command: 0).
    public var exitStatus: ExitStatus
    /// What to do when an interruption ended the command after the result was in place but
    /// before it finished its own bookkeeping (nil: check the result; running the command again
    /// would not redo it).
    public var nextStep: String?

    public init(path: String, description: String, exitStatus: ExitStatus = .success, nextStep: String? = nil) {
        self.path = path
        self.description = description
        self.exitStatus = exitStatus
        self.nextStep = nextStep
    }
}
