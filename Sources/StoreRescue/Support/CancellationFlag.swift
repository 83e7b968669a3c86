import Foundation

/// A flag a long operation polls to stop early and clean up (set by a signal handler, for example).
///
/// ```swift
/// let flag = CancellationFlag()
/// signalSource.setEventHandler { flag.cancel() }
/// try BackupRunner.run(store: path, options: options, cancellation: flag)
/// ```
public final class CancellationFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false

    public init() {}

    /// Asks the operation to stop; it throws at its next check and removes its partial files.
    public func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
    }

    public var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }
}
