import Foundation

/// Flushes a file still being written to the disk (`fdatasync`) on a thread of its own, each
/// time it is asked, so that the `fsync` before the file is published finds little left to do.
///
/// Why, when `Writeback` already starts the kernel writing early: on this project's machine a
/// 75 MB file written with a `Writeback` hint every 8 MiB still took 70–85 ms to `fsync`, and as
/// long 0.3 s after its last write. What the `fsync` waits for is not the kernel's writing but the
/// disk's own cache being flushed (a virtual disk acknowledges writes into the host's cache; the
/// flush writes them out), which only a sync asks for. Asked every 8 MiB on a thread that does
/// nothing else, that flush overlaps the salvage's decoding and SQLite's check of the file, and
/// the last `fsync` took 10–13 ms (`Docs/SALVAGE.md`, "Performance").
///
/// Only a flush: durability is still the publisher's `fsync` (`CreationTarget.synchronize`). A
/// flush that fails (`EIO`, `ENOSPC` met when the kernel allocates the blocks) is kept and thrown
/// by `finish`: Linux reports a writeback error once per open file, so the later `fsync` might
/// not see it again, and the file must not be published as if it were written.
///
/// The file is opened (read only, not through a symbolic link) at the first request, so it may
/// not exist yet when this is made; when it cannot be opened (no descriptor left under `ulimit
/// -n`), nothing is flushed and nothing fails. Closing that descriptor drops every POSIX lock this process
/// holds on the file: `finish` and `stop` are called only once no SQLite connection is open on
/// it (as `Salvager` does, after the output is closed). When the system refuses the thread
/// (`JoinableThread`), requests do nothing: the publisher's `fsync` does it all, as before.
final class BackgroundFlush: @unchecked Sendable {
    /// Why a flush failed: the `errno` of the `fdatasync`.
    struct Failure: Error {
        var code: Int32
    }

    let path: String
    private let condition = NSCondition()
    private var requested = false
    private var isFlushing = false
    private var isClosed = false
    private var failure: Int32?
    private var descriptor: Int32 = -1
    private var thread: JoinableThread?
    /// Flushes made (for tests).
    private(set) var flushes = 0

    /// - Parameter startThread: starts the flushing thread (`JoinableThread`; tests pass one that
    ///   fails, as the system may).
    init(path: String, startThread: (@escaping @Sendable () -> Void) -> JoinableThread? = { JoinableThread($0) }) {
        self.path = path
        thread = startThread { [self] in flushWhenAsked() }
    }

    /// Asks for a flush of everything written so far; returns at once. Requests made while a
    /// flush runs make one more after it. Any thread may call it.
    func request() {
        condition.lock()
        defer { condition.unlock() }
        guard thread != nil, !isClosed else { return }
        requested = true
        condition.broadcast()
    }

    /// Waits for the flushes asked for, ends the thread and closes the descriptor.
    ///
    /// - Throws: `Failure` when a flush failed.
    func finish() throws {
        condition.lock()
        while (requested || isFlushing) && failure == nil { condition.wait() }
        condition.unlock()
        stop()
        if let failure { throw Failure(code: failure) }
    }

    /// Ends the thread without the flushes still asked for (one running ends first) and closes
    /// the descriptor: a failed or abandoned file.
    func stop() {
        condition.lock()
        isClosed = true
        requested = false
        condition.broadcast()
        condition.unlock()
        thread?.join()
        thread = nil
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
    }

    private func flushWhenAsked() {
        condition.lock()
        while true {
            while !requested && !isClosed { condition.wait() }
            if isClosed { break }
            requested = false
            isFlushing = true
            condition.unlock()
            let code = flushOnce()
            condition.lock()
            isFlushing = false
            flushes += 1
            if code != 0 {
                failure = failure ?? code
                isClosed = true
            }
            condition.broadcast()
        }
        condition.unlock()
    }

    /// One `fdatasync` (opening the file the first time); 0 or the `errno` of a failed flush.
    ///
    /// A file that cannot be opened is not flushed, and that is no failure: the publisher's
    /// `fsync` does it all, as when the thread is refused (a review's salvage under `ulimit -n
    /// 10` failed with "Too many open files" for want of this one descriptor, where it had run).
    private func flushOnce() -> Int32 {
        if descriptor < 0 {
            let opened = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard opened >= 0 else { return 0 }
            descriptor = opened
        }
        while fdatasync(descriptor) != 0 {
            guard errno == EINTR else { return errno }
        }
        return 0
    }

    deinit { stop() }
}
