import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way StoreRescue replaces a store an app will open, or moves one aside: at every
/// instant the path holds the old store (with its committed WAL content) or the new one,
/// complete, and never a `-wal` beside a main file it does not belong to (SQLite would replay it).
///
/// Replacing:
/// 1. the new file is checked: a regular file in the store's folder (a rename is atomic only
///    within one file system), with no sidecar of its own;
/// 2. the store is **settled**: opened read-write, switched to rollback-journal mode — SQLite
///    checkpoints the WAL into the main file and removes the `-wal` and `-shm` (a hot `-journal`
///    is rolled back the same way). SQLite refuses while another connection has the store open,
///    so a store in use is waited for (up to `lockTimeout`) and then refused;
/// 3. `BEGIN EXCLUSIVE` keeps every other process out until the swap (no journal is created);
/// 4. the new file is renamed over the store (atomic), the folder is `fsync`ed, the lock released.
///
/// A `kill -9` before step 4 leaves the old store, complete (in rollback mode after step 2, which
/// Core Data switches back to WAL on its next open); after it, the new store. The old bytes
/// live on only in the backup the caller took first.
///
/// Moving aside (`moveAside`, for a quarantine): the main file first, then its sidecars. A kill
/// between the two leaves sidecars with no main file; SQLite deletes a `-wal` beside an empty
/// or new main file instead of replaying it, and the next run moves them on.
///
/// ```swift
/// let replacement = StoreReplacement(storePath: "/data/default.store", lockTimeout: 30)
/// try replacement.replace(with: "/data/.storerescue-upgrade-1/migrated.sqlite")
/// ```
///
/// - Warning: Destructive: the old store is gone from its path afterwards. Back it up first.
public struct StoreReplacement: Sendable {
    public let storePath: String
    /// How long to wait for other connections to close the store before refusing.
    public var lockTimeout: TimeInterval

    public init(storePath: String, lockTimeout: TimeInterval = 30) {
        self.storePath = storePath
        self.lockTimeout = lockTimeout
    }

    /// The points at which a test can make a replacement fail (or stop, as a kill would).
    public enum Step: Sendable, CaseIterable {
        case settled, locked, renamed
    }

    /// What was done.
    public struct Result: Sendable, Equatable {
        /// The store had a `-wal` (or hot `-journal`) whose content was folded into its main file
        /// before it was replaced.
        public var settledSidecars: [String]
        /// True when a store was at the path (false: the new file was simply put there).
        public var replacedExisting: Bool
    }

    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    /// Replaces the store with `newFile` (which is moved, not copied).
    ///
    /// - Throws: `StoreReplacementError`; nothing has changed at the store's path when it throws
    ///   before the rename (the store may have been settled: same content, rollback mode).
    public func replace(with newFile: String, faultInjection: ((Step) throws -> Void)? = nil) throws -> Result {
        try checkNewFile(newFile)
        var info = stat()
        guard lstat(storePath, &info) == 0 else {
            // Nothing to replace: only stray sidecars may be in the way.
            let strays = presentSidecars()
            guard strays.isEmpty else { throw StoreReplacementError.sidecarsRemain(path: storePath, sidecars: strays) }
            try putInPlace(newFile)
            return Result(settledSidecars: [], replacedExisting: false)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreReplacementError.notARegularFile(path: storePath)
        }
        let settled = presentSidecars().filter { !$0.hasSuffix("-shm") }
        let connection = try settle()
        try faultInjection?(.settled)
        do {
            try connection.execute("BEGIN EXCLUSIVE")
        } catch let error as SQLiteError {
            throw error.isBusy ? StoreReplacementError.inUse(path: storePath, seconds: lockTimeout)
                : StoreReplacementError.cannotSettle(path: storePath, reason: error.message)
        }
        defer { try? connection.execute("ROLLBACK") }
        let strays = presentSidecars()
        guard strays.isEmpty else { throw StoreReplacementError.sidecarsRemain(path: storePath, sidecars: strays) }
        try faultInjection?(.locked)
        try putInPlace(newFile)
        try faultInjection?(.renamed)
        return Result(settledSidecars: settled, replacedExisting: true)
    }

    /// Moves the store's main file, then each sidecar, into `folder` (which must exist, on the
    /// same file system), under the same names. Never deletes anything.
    ///
    /// - Returns: the new paths, main file first.
    public func moveAside(into folder: String) throws -> [String] {
        var moved: [String] = []
        let name = (storePath as NSString).lastPathComponent
        for suffix in [""] + Self.sidecarSuffixes {
            let source = storePath + suffix
            var info = stat()
            guard lstat(source, &info) == 0 else { continue }
            let target = folder + "/" + name + suffix
            guard rename(source, target) == 0 else {
                throw StoreReplacementError.moveFailed(path: source, destination: target, code: errno)
            }
            moved.append(target)
        }
        SafeFileOutput.syncFolder(folder)
        SafeFileOutput.syncFolder(SafeFileOutput.folder(of: storePath))
        return moved
    }

    // MARK: - Steps

    /// The sidecars present beside the store.
    func presentSidecars() -> [String] {
        Self.sidecarSuffixes.map { storePath + $0 }.filter { path in
            var info = stat()
            return lstat(path, &info) == 0
        }
    }

    private func checkNewFile(_ newFile: String) throws {
        var info = stat(), folderInfo = stat()
        guard lstat(newFile, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not a regular file")
        }
        guard stat(SafeFileOutput.folder(of: storePath), &folderInfo) == 0, folderInfo.st_dev == info.st_dev else {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not on the store's file system (a rename would not be atomic)")
        }
        for suffix in Self.sidecarSuffixes {
            var sidecar = stat()
            if lstat(newFile + suffix, &sidecar) == 0 {
                throw StoreReplacementError.newFileUnusable(path: newFile, reason: "has a \(suffix) of its own; it must be checkpointed and closed")
            }
        }
    }

    /// Opens the store read-write and switches it to rollback-journal mode, which checkpoints and
    /// removes a WAL (or rolls back a hot journal); waits for other connections up to the timeout.
    private func settle() throws -> SQLiteConnection {
        let milliseconds = Int32(clamping: Int((lockTimeout * 1000).rounded()))
        do {
            let connection = try SQLiteConnection(
                path: storePath, options: SQLiteOpenOptions(mode: .readWrite, busyTimeoutMilliseconds: milliseconds))
            _ = try connection.scalar("SELECT count(*) FROM sqlite_schema")
            let mode = try connection.scalar("PRAGMA journal_mode = DELETE")?.string?.lowercased()
            guard mode == "delete" else {
                throw StoreReplacementError.inUse(path: storePath, seconds: lockTimeout)
            }
            return connection
        } catch let error as SQLiteError {
            if error.isBusy { throw StoreReplacementError.inUse(path: storePath, seconds: lockTimeout) }
            throw StoreReplacementError.cannotSettle(path: storePath, reason: "\(error.message) (SQLite code \(error.resultCode))")
        }
    }

    private func putInPlace(_ newFile: String) throws {
        guard rename(newFile, storePath) == 0 else {
            throw StoreReplacementError.renameFailed(path: storePath, code: errno)
        }
        SafeFileOutput.syncFolder(SafeFileOutput.folder(of: storePath))
    }
}

/// Why a store could not be replaced or moved aside (errno values kept as numbers).
public enum StoreReplacementError: OperatorFacingError, Equatable {
    /// Another process kept the store open past the timeout.
    case inUse(path: String, seconds: TimeInterval)
    /// The store could not be opened or checkpointed (damaged, unreadable).
    case cannotSettle(path: String, reason: String)
    /// Sidecars are still beside the store after settling (or beside a missing store).
    case sidecarsRemain(path: String, sidecars: [String])
    /// The store path is not a regular file.
    case notARegularFile(path: String)
    /// The replacement file cannot be used.
    case newFileUnusable(path: String, reason: String)
    /// `rename` failed with `code`.
    case renameFailed(path: String, code: Int32)
    case moveFailed(path: String, destination: String, code: Int32)

    public var description: String {
        switch self {
        case .inUse(let path, let seconds):
            return "\(path) is open in another process (still after \(Int(seconds)) s); it was not replaced"
        case .cannotSettle(let path, let reason): return "\(path) cannot be checkpointed before it is replaced: \(reason); it was not replaced"
        case .sidecarsRemain(let path, let sidecars):
            return "\(path) still has \(sidecars.map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")) beside it; it was not replaced"
        case .notARegularFile(let path): return "\(path) is not a regular file; it was not replaced"
        case .newFileUnusable(let path, let reason): return "the replacement \(path) \(reason)"
        case .renameFailed(let path, let code): return "cannot put the new store at \(path): \(String(cString: strerror(code))); the old store is still there"
        case .moveFailed(let path, let destination, let code):
            return "cannot move \(path) to \(destination): \(String(cString: strerror(code)))"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .inUse: return "close the app that uses the store (or wait for it to finish) and run the command again, or give a longer --timeout"
        case .cannotSettle: return "check the store with `storerescue inspect --deep`; a damaged store is saved with --on-failure clean"
        case .sidecarsRemain: return "look at the leftover files (they may belong to another process) and move them away, then run the command again"
        case .notARegularFile: return "pass the store's real main file"
        case .newFileUnusable: return "report a bug with the command line"
        case .renameFailed, .moveFailed: return "check the folder's permissions and free space, then run the command again"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .inUse: return .temporaryFailure
        case .cannotSettle: return .notAStore
        case .sidecarsRemain, .notARegularFile, .renameFailed, .moveFailed: return .cannotCreateOutput
        case .newFileUnusable: return .internalError
        }
    }
}
