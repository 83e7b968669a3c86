import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// No file descriptor left: the process's limit on open files (`EMFILE`, `ulimit -n`, a
/// service's `LimitNOFILE`) or the system's (`ENFILE`). Never the file's or the folder's fault,
/// so never "damaged", "missing" or "not writable": the errors that keep an errno as a number
/// (`StoreReplacementError.cannotRead`, `FileMoveError.unreadable`) read it through this, and
/// say so with `StoreCreationError.openFilesHint` (exit 74).
enum OpenFileLimit {
    /// True when the system's error `code` says no file descriptor was left.
    static func isReached(_ code: Int32) -> Bool {
        code == EMFILE || code == ENFILE
    }

    /// "no file descriptor left (Too many open files)" for `code`.
    static func describe(_ code: Int32) -> String {
        "no file descriptor left (\(String(cString: strerror(code))))"
    }
}
