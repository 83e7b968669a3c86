import Foundation
import SRSQLite
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
///    no sidecar may be left; the caller's `whileLocked` check runs;
/// 4. the new file is renamed over the store (atomic), the folder is `fsync`ed, the lock released.
///
/// A `kill -9` before step 4 leaves the old store, complete (in rollback mode after step 2, which
/// Core Data switches back to WAL on its next open); after it, the new store. The old bytes
/// live on only in the backup the caller took first.
///
/// A **damaged** store — no valid SQLite header (empty, not SQLite, impossible page size), or
/// SQLite reports it corrupt or not a database while settling — cannot be settled: it is refused
/// (`DamagedStorePolicy.refuse`, the default), or its sidecars are moved aside first
/// (`.moveSidecarsAside(into:)`, see `DamagedStorePolicy`). SQLite is never let near the sidecars
/// of a store without a valid header: beside an empty main file it deletes a `-wal` or
/// `-journal`, and its checkpoint on close would fold a `-wal` into a damaged file (the settling
/// connection is opened with `SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE` for that reason).
///
/// Moving aside (`moveAside`, for a quarantine): the main file first, then its sidecars. A kill
/// between the two leaves sidecars with no main file; SQLite deletes a `-wal` beside an empty
/// or new main file instead of replaying it, and the next run moves them on.
///
/// ```swift
/// let replacement = StoreReplacement(storePath: "/data/default.store", lockTimeout: 30)
/// try replacement.replace(with: "/data/.storerescue-upgrade-1/migrated.sqlite") { store in
///     guard try store.sha256() == expected else { throw StoreChanged() }  // nothing replaced
/// }
/// ```
///
/// - Warning: Destructive: the old store is gone from its path afterwards. Back it up first.
public struct StoreReplacement: Sendable {
    public let storePath: String
    /// How long to wait for other connections to close the store before refusing.
    public var lockTimeout: TimeInterval
    /// Stops the wait for other connections (SIGINT, SIGTERM) within about 50 ms:
    /// `StoreReplacementError.interrupted`, nothing replaced.
    public var cancellation: CancellationFlag?
    /// The file the caller wrote (its device and inode, taken when it made it): the new file
    /// given to `replace` must be that file, when the replacement begins and when it is put in
    /// place. The store's folder is often writable by the app's user, who could rename another
    /// file over the new one while the replacement waits (a review: a root-only file, published
    /// and given to that user). Nil: the file found at the start is the one checked after.
    public var expectedNewFile: FileIdentity?

    /// A file's device and inode: which file a name leads to.
    public struct FileIdentity: Sendable, Equatable {
        public var device: UInt64
        public var inode: UInt64

        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }

        /// The file at `path` itself (never through a link), or nil.
        public init?(path: String) {
            var info = stat()
            guard lstat(path, &info) == 0 else { return nil }
            self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        }

        /// Throws unless `path` still leads to this folder: one this process made in a folder
        /// others may write in (the app user's), where it could be renamed away and another put
        /// in its place, with a file of theirs under `file`'s name (a review).
        public func requireStill(at path: String, holding file: String) throws {
            guard FileIdentity(path: path) == self else {
                throw StoreReplacementError.newFileUnusable(path: file, reason: "its folder is not the one this process made: something replaced it meanwhile")
            }
        }

        /// The file open at `descriptor`, or nil.
        public init?(descriptor: Int32) {
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return nil }
            self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        }
    }

    public init(storePath: String, lockTimeout: TimeInterval = 30, cancellation: CancellationFlag? = nil) {
        self.storePath = storePath
        self.lockTimeout = lockTimeout
        self.cancellation = cancellation
    }

    /// The points at which a test can make a replacement fail (or stop, as a kill would).
    public enum Step: Sendable, CaseIterable {
        /// The store was settled (a settleable store only).
        case settled
        /// The lock is held, before the `whileLocked` check.
        case locked
        /// A damaged store's `-wal` (or hot `-journal`) was folded into a copy of its main file,
        /// now at the store's path, before any sidecar moves (only when there is something to
        /// fold: `Fold`).
        case folded
        /// A damaged store's sidecars were moved aside, before the rename.
        case sidecarsMoved
        /// The new file is in place, before the lock is released.
        case renamed
    }

    /// What to do with a store SQLite cannot settle because it is damaged. A store in use is
    /// never one: it is refused with `StoreReplacementError.inUse` whatever the policy.
    public enum DamagedStorePolicy: Sendable, Equatable {
        /// Replace nothing: `StoreReplacementError.cannotSettle` (exit 65).
        case refuse
        /// Move the store's `-wal`, `-journal` and `-shm` into `folder` (which must exist; another
        /// file system is fine: see `FileMover`), under their own names, then rename the new file
        /// over the main file: the main path is never empty, and no foreign sidecar ever sits
        /// beside the new main file. Nothing is deleted: the old main file's bytes are gone from
        /// the path, so keep them first (a `whileLocked` copy sees them as they are under the lock).
        ///
        /// Meanwhile the store is locked as SQLite would lock it (a write lock on its lock bytes),
        /// so no SQLite connection can open it; one that already has it open makes it in use.
        case moveSidecarsAside(into: String)
    }

    /// A sidecar folded into a copy of the main file (`Fold`): its name and how many pages.
    public struct FoldedSidecar: Sendable, Equatable {
        public var name: String
        public var pages: Int
    }

    /// What was done.
    public struct Result: Sendable, Equatable {
        /// True when SQLite settled the store before it was replaced; false when there was no
        /// store, or it was damaged and its sidecars were moved aside.
        public var settled: Bool
        /// The sidecars that were beside the store and that SQLite removed while settling it: a
        /// `-wal` or hot `-journal` after folding its content into the main file, a `-shm`
        /// (which holds no data of its own) with its `-wal`.
        public var settledSidecars: [String]
        /// The new paths of the sidecars moved aside (`DamagedStorePolicy.moveSidecarsAside`).
        public var movedSidecars: [String]
        /// True when a store was at the path (false: the new file was simply put there).
        public var replacedExisting: Bool
        /// A spent `-journal` (empty, or its header zeroed: TRUNCATE or PERSIST journal mode)
        /// that this replacement removed under the lock; it held nothing. Not in `settledSidecars`.
        public var removedSpentJournal: String? = nil
        /// A damaged store's sidecar (`NAME-wal`, or a hot `NAME-journal`) folded into a copy of
        /// its main file before its sidecars moved, and how many of its pages (`Fold`); nil when
        /// nothing was folded.
        public var foldedSidecar: FoldedSidecar? = nil
    }

    /// The files SQLite keeps beside a main file, in the order they are moved: a `-shm` holds no
    /// data of its own, so it goes last (a kill part way never leaves a `-wal` whose `-shm` went).
    /// The one list every writer uses (`StoreFileSet.sidecarSuffixes` is the readers' public one).
    static let sidecarSuffixes = ["-wal", "-journal", "-shm"]

    /// Replaces the store with `newFile` (which is moved, not copied).
    ///
    /// - Parameters:
    ///   - newFile: the replacement, in the store's folder, with no sidecar of its own.
    ///   - ifDamaged: what to do when SQLite cannot settle the store (default: refuse).
    ///   - whileLocked: runs once the store is locked (settled and no sidecar left, or a damaged
    ///     store's lock taken) and before anything is moved or renamed; when it throws, nothing
    ///     is replaced and the error propagates. Read the store through the `LockedStore` it is
    ///     given, never by opening the path: closing any descriptor of the file in this process
    ///     would silently drop SQLite's lock (POSIX lock semantics). Not run when there is no
    ///     store at the path.
    /// - Throws: `StoreReplacementError` (`inUse`: exit 75; `cannotRead`, exit 74, when no file
    ///   descriptor is left to open the store, its sidecars or the new file — never `cannotSettle`,
    ///   `sidecarsRemain` or `newFileUnusable`), `FileMoveError` while moving sidecars,
    ///   or what `whileLocked` throws; nothing has changed at the store's path when it throws
    ///   before the rename (the store may have been settled: same content, rollback mode).
    @discardableResult
    public func replace(with newFile: String, ifDamaged: DamagedStorePolicy = .refuse,
                        whileLocked: ((LockedStore) throws -> Void)? = nil,
                        faultInjection: ((Step) throws -> Void)? = nil) throws -> Result {
        try replace(with: newFile, knownDamage: nil, ifDamaged: ifDamaged, whileLocked: whileLocked,
                    faultInjection: faultInjection)
    }

    /// `replace`, for a caller that already found the store damaged (`knownDamage`: why, e.g. the
    /// backup SQLite could not take): SQLite is then not asked to settle it at all, so its
    /// sidecars go aside as they are (`ifDamaged`) instead of being folded into a damaged file.
    ///
    /// `beforeFolding`: given the identity of the copy a damaged store's `-wal` is folded into,
    /// before it takes the store's name (`Fold`).
    func replace(with newFile: String, knownDamage: String?, ifDamaged: DamagedStorePolicy,
                 whileLocked: ((LockedStore) throws -> Void)?, beforeFolding: ((FileIdentity) throws -> Void)? = nil,
                 faultInjection: ((Step) throws -> Void)?) throws -> Result {
        let identity = try checkNewFile(newFile)
        var info = stat()
        guard lstat(storePath, &info) == 0 else {
            return try putInPlaceOfMissingStore(newFile, identity: identity, ifDamaged: ifDamaged, faultInjection: faultInjection)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreReplacementError.notARegularFile(path: storePath)
        }
        if let damage = try knownDamage ?? headerDamage() {
            return try replaceDamaged(with: newFile, identity: identity, reason: damage, policy: ifDamaged,
                                      whileLocked: whileLocked, beforeFolding: beforeFolding, faultInjection: faultInjection)
        }
        do {
            return try replaceSettled(with: newFile, identity: identity, whileLocked: whileLocked, faultInjection: faultInjection)
        } catch let damage as DamageFound {
            return try replaceDamaged(with: newFile, identity: identity, reason: damage.reason, policy: ifDamaged,
                                      whileLocked: whileLocked, beforeFolding: beforeFolding, faultInjection: faultInjection)
        }
    }

    /// Moves the store's main file, then each sidecar, into `folder` (which must exist), under
    /// the same names, through `FileMover` (another file system is fine). Never deletes or
    /// overwrites anything: a name already taken in `folder` refuses the move before anything moves.
    ///
    /// - Returns: the new paths, main file first.
    /// - Throws: `FileMoveError`.
    public func moveAside(into folder: String) throws -> [String] {
        let name = (storePath as NSString).lastPathComponent
        let sources = ([""] + Self.sidecarSuffixes).map { storePath + $0 }.filter(Self.exists)
        let targets = sources.map { folder + "/" + name + String($0.dropFirst(storePath.count)) }
        if let taken = targets.first(where: Self.exists) { throw FileMoveError.destinationExists(path: taken) }
        for (source, target) in zip(sources, targets) {
            try FileMover.move(source, to: target)
        }
        return targets
    }

    // MARK: - A store SQLite can settle

    private func replaceSettled(with newFile: String, identity: FileIdentity, whileLocked: ((LockedStore) throws -> Void)?,
                                faultInjection: ((Step) throws -> Void)?) throws -> Result {
        let present = presentSidecars()
        // Opened once the lock is held and closed only after the connection is: closing a
        // descriptor of the file would drop the connection's locks.
        var reader: LockedStore?
        defer { reader?.close() }
        let spent = try settleLockAndSwap(newFile, identity: identity, whileLocked: whileLocked, reader: &reader, faultInjection: faultInjection)
        return Result(settled: true, settledSidecars: present.filter { $0 != spent }, movedSidecars: [], replacedExisting: true,
                      removedSpentJournal: spent)
    }

    /// Steps 2–4; the connection is closed when this returns.
    /// Returns the spent `-journal` removed under the lock, if any.
    private func settleLockAndSwap(_ newFile: String, identity: FileIdentity, whileLocked: ((LockedStore) throws -> Void)?,
                                   reader: inout LockedStore?, faultInjection: ((Step) throws -> Void)?) throws -> String? {
        let connection = try settle()
        try faultInjection?(.settled)
        do {
            try connection.execute("BEGIN EXCLUSIVE")
        } catch let error as SQLiteError {
            throw error.isBusy ? inUse() : notSettled(error, reason: error.message)
        }
        defer { try? connection.execute("ROLLBACK") }
        // The new file checked and given the store's mode and owner before anything changes.
        let descriptor = try prepareNewFile(newFile, identity: identity)
        defer { close(descriptor) }
        let spent = try removeSpentJournal()
        let strays = presentSidecars()
        guard strays.isEmpty else { throw StoreReplacementError.sidecarsRemain(path: storePath, sidecars: strays) }
        try faultInjection?(.locked)
        if let whileLocked {
            let store = try LockedStore(path: storePath, writable: false)
            reader = store
            try whileLocked(store)
        }
        try putInPlace(newFile, descriptor: descriptor)
        try faultInjection?(.renamed)
        return spent
    }

    /// A `-journal` that TRUNCATE or PERSIST journal mode leaves after every transaction (empty,
    /// or its header zeroed) holds nothing: under the exclusive lock it cannot be another
    /// connection's, and SQLite rolled back any hot one when the store was read. It is removed,
    /// where it made every `restore --force` of such a store refuse, "still has -journal beside
    /// it" (review). A journal that still starts with SQLite's magic is left, and refused. One
    /// that cannot be opened for want of a file descriptor is no journal left behind: the limit's
    /// (`cannotRead`, exit 74), not "still has -journal beside it" (73).
    private func removeSpentJournal() throws -> String? {
        let journal = storePath + "-journal"
        var info = stat()
        guard lstat(journal, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        if info.st_size > 0 {
            // PERSIST mode with a journal_size_limit under 8 leaves fewer zero bytes (review).
            let length = Int(min(info.st_size, 8))
            let file: ReadableFile
            do {
                file = try ReadableFile(path: journal, followsSymlinks: false)
            } catch .tooManyOpenFiles {
                throw StoreReplacementError.cannotRead(path: journal, code: EMFILE)
            } catch {
                return nil
            }
            var header = [UInt8](repeating: 0xFF, count: length)
            let count = (try? header.withUnsafeMutableBytes { try file.read(into: $0) }) ?? 0
            guard count == length, header.allSatisfy({ $0 == 0 }) else { return nil }
        }
        return unlink(journal) == 0 ? journal : nil
    }

    /// Opens the store read-write and switches it to rollback-journal mode, which checkpoints and
    /// removes a WAL (or rolls back a hot journal); waits for other connections up to the timeout.
    ///
    /// - Throws: `DamageFound` when SQLite finds the store corrupt or not a
    ///   database (the connection never checkpoints on close, so its `-wal` is left as it was).
    private func settle() throws -> SQLiteConnection {
        let milliseconds = Int32(clamping: Int((lockTimeout * 1000).rounded()))
        // One deadline for every wait of the replacement (the first read, leaving WAL mode, the
        // exclusive lock): "still after N s" is what was waited in all.
        let deadline = Date().addingTimeInterval(lockTimeout)
        do {
            let connection = try SQLiteConnection(
                path: storePath, options: SQLiteOpenOptions(mode: .readWrite, busyTimeoutMilliseconds: milliseconds))
            try connection.disableCheckpointOnClose()
            connection.setBusyHandler(waitingUntil: deadline, cancellation: cancellation ?? CancellationFlag())
            _ = try connection.scalar("SELECT count(*) FROM sqlite_schema")
            // While another connection has a WAL store open, SQLite refuses to take it out of WAL
            // mode at once (SQLITE_BUSY, or the mode left as it was), without its busy handler:
            // asked again until the deadline. An app that closes the store meanwhile no longer
            // makes it "in use".
            while true {
                let mode: String?
                do {
                    mode = try connection.setJournalMode("DELETE")
                } catch let error as SQLiteError where error.isBusy {
                    mode = nil
                }
                if mode == "delete" { return connection }
                if cancellation?.isCancelled == true || Date() >= deadline { throw inUse() }
                usleep(UInt32(min(50_000, max(1_000, deadline.timeIntervalSinceNow * 1_000_000))))
            }
        } catch let error as SQLiteError {
            if error.isBusy { throw inUse() }
            if error.isCorruption { throw DamageFound(reason: "\(error.message) (SQLite code \(error.resultCode))") }
            // A full disk is not a damaged store: exit 74 and "free space" (a review's healthy
            // store got 65 and the advice to quarantine it). Only what a full disk or the
            // file-size limit gives: SQLITE_FULL, a failed write (EFBIG is SQLITE_IOERR_WRITE),
            // SQLITE_IOERR_SHMSIZE (ENOSPC making a WAL store's -shm). A failed read
            // (SQLITE_IOERR_CORRUPTFS for EIO, a short read) may be damage: cannotSettle.
            if error.primaryResultCode == SQLITE_FULL || error.resultCode == SQLITE_IOERR | (3 << 8) || error.resultCode == SQLITE_IOERR | (19 << 8) {
                throw StoreReplacementError.noRoomToSettle(path: storePath, reason: "\(error.message) (SQLite code \(error.resultCode))")
            }
            throw notSettled(error, reason: "\(error.message) (SQLite code \(error.resultCode))")
        }
    }

    /// A failure SQLite gave while settling that is neither the store in use nor a full disk:
    /// `cannotSettle` (exit 65, the store's), unless no file descriptor was left to open the store
    /// or its `-wal`/`-shm` (SQLite's `SQLITE_CANTOPEN` with `EMFILE`): the limit's, `cannotRead`
    /// (exit 74, "raise the limit on open files"), never "check the store … a damaged store is
    /// saved with --on-failure clean" (a review, `restore --force` under `ulimit -n`).
    func notSettled(_ error: SQLiteError, reason: String) -> StoreReplacementError {
        guard error.fileSystemFailure == .tooManyOpenFiles else { return .cannotSettle(path: storePath, reason: reason) }
        return .cannotRead(path: storePath, code: OpenFileLimit.isReached(error.systemErrno) ? error.systemErrno : EMFILE)
    }

    // MARK: - Shared steps

    /// A wait for other connections that ended: at the timeout (`inUse`), or stopped by the
    /// cancellation (`interrupted`).
    func inUse() -> StoreReplacementError {
        cancellation?.isCancelled == true ? .interrupted(path: storePath) : .inUse(path: storePath, seconds: lockTimeout)
    }

    /// The sidecars present beside the store.
    func presentSidecars() -> [String] {
        Self.sidecarSuffixes.map { storePath + $0 }.filter(Self.exists)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    private func checkNewFile(_ newFile: String) throws -> FileIdentity {
        var info = stat(), folderInfo = stat()
        guard lstat(newFile, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not a regular file")
        }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        if let expectedNewFile, expectedNewFile != identity {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not the file this process wrote: something replaced it meanwhile")
        }
        guard stat(SafeFileOutput.folder(of: storePath), &folderInfo) == 0, folderInfo.st_dev == info.st_dev else {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not on the store's file system (a rename would not be atomic)")
        }
        for suffix in Self.sidecarSuffixes where Self.exists(newFile + suffix) {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "has a \(suffix) of its own; it must be checkpointed and closed")
        }
        return identity
    }

    /// Opens the new file (never through a link) and checks it is `identity`'s, the file the
    /// caller wrote, then gives it the replaced store's permission bits (never set-id) and, run
    /// as root, its owner and group, on the descriptor: the app's user must still be able to
    /// open its store (a review's root restore left it root's). Never by name: the store's folder
    /// may be the app user's, who could put a link or another file at the name (a review's swap
    /// had a root file chowned to them). Called before anything at the store's path changes, so
    /// a file found swapped refuses the replacement with nothing moved.
    ///
    /// - Returns: the descriptor, for `putInPlace`; the caller closes it.
    func prepareNewFile(_ newFile: String, identity: FileIdentity) throws -> Int32 {
        let descriptor = open(newFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            // No descriptor left is the limit's, not a file swapped in (exit 70, "another process
            // writes in the store's folder").
            let code = errno
            if OpenFileLimit.isReached(code) { throw StoreReplacementError.cannotRead(path: newFile, code: code) }
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "cannot be opened as a file (\(String(cString: strerror(code)))): something replaced it meanwhile")
        }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG,
              FileIdentity(device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino)) == identity
        else {
            close(descriptor)
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not the file this process wrote: something replaced it meanwhile")
        }
        var replaced = stat()
        if lstat(storePath, &replaced) == 0, replaced.st_mode & S_IFMT == S_IFREG {
            fchmod(descriptor, replaced.st_mode & 0o1777)
            if geteuid() == 0 { fchown(descriptor, replaced.st_uid, replaced.st_gid) }
        }
        return descriptor
    }

    /// The folder of `path`, opened before a name there changes so that its `fsync` cannot be
    /// skipped for want of a descriptor afterwards (`FolderSync`): no descriptor left is
    /// `cannotRead` (exit 74) with nothing changed, never a replacement reported done whose new
    /// name a crash can lose.
    static func reserveFolder(of path: String) throws -> FolderSync {
        do {
            return try FolderSync(SafeFileOutput.folder(of: path))
        } catch {
            throw StoreReplacementError.cannotRead(path: SafeFileOutput.folder(of: path), code: error.code)
        }
    }

    /// Renames the new file open at `descriptor` over the store: its name checked to still lead
    /// to that file just before, the store's path just after.
    func putInPlace(_ newFile: String, descriptor: Int32) throws {
        guard let opened = FileIdentity(descriptor: descriptor), FileIdentity(path: newFile) == opened else {
            throw StoreReplacementError.newFileUnusable(path: newFile, reason: "is not the file this process wrote: something replaced it meanwhile")
        }
        let folder = try Self.reserveFolder(of: storePath)
        guard rename(newFile, storePath) == 0 else {
            throw StoreReplacementError.renameFailed(path: storePath, code: errno)
        }
        folder.sync()
        guard FileIdentity(path: storePath) == opened else {
            throw StoreReplacementError.newFileUnusable(path: storePath, reason: "is not the file this process put there: something replaced it in the same instant")
        }
    }
}
