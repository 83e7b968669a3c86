import Foundation

/// Asks the kernel to start writing a file's changed pages to disk now, without waiting for it:
/// Linux's `sync_file_range(…, SYNC_FILE_RANGE_WRITE)`. A file written in one go and then
/// `fsync`ed before it is published (a salvaged store) otherwise has all its bytes flushed by
/// that `fsync`, with nothing else to do meanwhile; started early, the flushing overlaps the work
/// still to come (building indexes, SQLite's `quick_check`) and the `fsync` finds little left.
///
/// Only a hint: it promises nothing about durability (the `fsync` still does that), and where the
/// call does not exist (not Linux) or fails it does nothing. It is looked up with `dlsym` because
/// Swift's Glibc module does not declare it (it sits behind `_GNU_SOURCE`).
enum Writeback {
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32

    /// `SYNC_FILE_RANGE_WRITE` (linux/fs.h): start writing dirty pages not already being written.
    private static let startWriting: UInt32 = 2

    private static let syncFileRange: SyncFileRange? = {
        #if os(Linux)
        // RTLD_DEFAULT is the null handle on glibc.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
        #else
        return nil
        #endif
    }()

    /// Starts writeback of every changed page of the open file `descriptor`.
    static func start(_ descriptor: Int32) {
        _ = syncFileRange?(descriptor, 0, 0, startWriting)
    }

    /// Starts writeback of the file at `path` (not through a symbolic link); nothing when it
    /// cannot be opened.
    ///
    /// Opens and closes a descriptor of its own, and closing any descriptor of a file drops every
    /// POSIX lock this process holds on it: call it on an SQLite file only while no connection
    /// holds a lock there (no transaction open, not in WAL mode), as salvage does between its
    /// statements (journal mode OFF or DELETE, autocommit).
    static func start(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        start(descriptor)
    }

    /// Whether the hint is available here (for tests).
    static var isAvailable: Bool { syncFileRange != nil }
}
