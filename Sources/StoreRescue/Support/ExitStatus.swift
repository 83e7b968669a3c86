/// The process exit statuses of `storerescue`, documented in `Docs/CLI.md`. Values follow BSD
/// `sysexits.h` where one fits, so cron and CI wrappers can tell "retry later" from "fix input".
public enum ExitStatus: Int32, Sendable, Codable, CaseIterable {
    /// The command did what it was asked (for `inspect`: the input was read, findings or not).
    case success = 0
    /// A check ran and failed (`verify` found a bad backup).
    case checkFailed = 1
    /// Nothing to do: the store is already at the version asked for (`migrate`, `upgrade`).
    case nothingToDo = 2
    /// The store was read but the plan cannot take it there: 134504, 134110, a change no
    /// mapping can infer, an ambiguous, unknown or newer store. Nothing was written.
    case refused = 3
    /// `upgrade`: only phase 1 was needed (the store was stamped as the version it is, which
    /// is the target).
    case adoptedOnly = 4
    /// `upgrade --on-failure clean`: the store could not be saved; it was quarantined and a
    /// clean store created in its place, with what could be salvaged.
    case fellBackToClean = 5
    /// The command line was wrong.
    case usage = 64
    /// The input exists but is not a readable store (not SQLite, empty, truncated, damaged).
    case notAStore = 65
    /// The input is missing, unreadable, a directory, or a symlink that was not allowed.
    case noInput = 66
    /// A bug in this tool.
    case internalError = 70
    /// An output could not be created: it exists (and `--force` was not given), or its folder is
    /// not writable, or a symlink was planted there.
    case cannotCreateOutput = 73
    /// Reading or writing failed part way (disk full, file-size limit, I/O error; `salvage`:
    /// also memory running out).
    case ioError = 74
    /// Try again later: the store stayed locked by another process past the timeout.
    case temporaryFailure = 75
}

/// An error this tool reports to an operator: what failed, on which file, and what to try.
public protocol OperatorFacingError: Error, CustomStringConvertible {
    /// What the operator should try next, or nil when there is nothing useful to suggest.
    var recoverySuggestion: String? { get }
    /// The exit status a command ends with when this error stops it.
    var exitStatus: ExitStatus { get }
}
