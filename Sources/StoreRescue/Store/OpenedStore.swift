import Foundation

/// How a store was opened for reading.
public enum StoreAccessMethod: String, Sendable, Codable {
    /// The original main file, opened with `immutable=1`: no lock, no sidecar created or read.
    /// Used when no sidecar holds data, so a large store is never copied.
    case immutableOriginal
    /// A private copy of the main file with its `-wal`/`-journal`, in a private temporary
    /// directory removed afterwards, so SQLite can apply the WAL or roll back a hot journal
    /// without touching the original.
    case privateCopy
}

/// Options for opening a store. The zero value is the safe choice.
public struct StoreOpenOptions: Sendable, Equatable {
    /// Follow a symbolic link at the input path instead of refusing it.
    public var followsSymlinks = false
    /// Always read through a private copy, even when no sidecar holds data.
    public var alwaysCopies = false
    /// Where the private copy's folder is made; nil: `$TMPDIR`. Writers put it beside their
    /// output (`backup` inside the backup folder, `migrate` beside the new store), which must have
    /// room for the store anyway, so a large store is not copied to a small `/tmp`.
    public var privateCopyParent: String?
    /// A store that keeps changing while it is copied (an app committing many times a second) is
    /// copied once more through SQLite's locks, as any reader of it would (`PrivateCopier`),
    /// instead of being refused as "kept changing" (exit 75). Off for `backup`, which takes such
    /// a store through its locks itself.
    public var copiesThroughLocksWhenBusy: Bool

    public init(followsSymlinks: Bool = false, alwaysCopies: Bool = false, privateCopyParent: String? = nil, copiesThroughLocksWhenBusy: Bool = true) {
        self.followsSymlinks = followsSymlinks
        self.alwaysCopies = alwaysCopies
        self.privateCopyParent = privateCopyParent
        self.copiesThroughLocksWhenBusy = copiesThroughLocksWhenBusy
    }
}

/// A store opened for reading, never altering the original: a defensive connection plus
/// whatever private copy it reads from (removed when this value goes away).
public final class OpenedStore {
    public let probe: InputProbe
    public let connection: SQLiteConnection
    public let accessMethod: StoreAccessMethod
    private let privateDirectory: PrivateTemporaryDirectory?
    /// The original as it was before it was read in place (nil for a private copy).
    private let watch: MainFileWatch?

    /// Opens the store at `path`.
    ///
    /// - Throws: `StoreAccessError` when the input cannot be a readable database (with its kind),
    ///   or the private copy cannot be made.
    public convenience init(path: String, options: StoreOpenOptions = StoreOpenOptions()) throws {
        try self.init(probe: try InputProbe(path: path, followsSymlinks: options.followsSymlinks), options: options)
    }

    /// Opens the store `probe` looked at (the caller has already refused what it rejects).
    ///
    /// A symbolic link the probe followed is read as its target (`InputProbe.resolvedPath`), with
    /// the target's sidecars: `options.followsSymlinks` matters only to the probe.
    ///
    /// An original read in place that SQLite cannot read while an app writes to it (its pages
    /// part way through a transaction: "malformed") is read through a private copy instead, as
    /// a store with a hot journal is. A write that comes after the open is the caller's to see
    /// (`writtenToSinceOpened`, or `readingConsistently`).
    public init(probe: InputProbe, options: StoreOpenOptions = StoreOpenOptions()) throws {
        let path = probe.path
        self.probe = probe
        if !(probe.files.sidecarsHoldData || options.alwaysCopies || probe.fileSize == 0) {
            let watch = MainFileWatch(path: probe.resolvedPath)
            do {
                connection = try Self.connect(path: probe.resolvedPath, mode: .immutable, reportedPath: path)
                watch?.checkOpenedByName()
                privateDirectory = nil
                accessMethod = .immutableOriginal
                self.watch = watch
                return
            } catch is StoreAccessError where watch?.writtenToSince == true {
                // The app's transaction, not damage: read a private copy below.
            }
        }
        let directory = try PrivateCopier.copy(probe: probe, parent: options.privateCopyParent, throughLocksWhenBusy: options.copiesThroughLocksWhenBusy)
        privateDirectory = directory
        accessMethod = .privateCopy
        watch = nil
        connection = try Self.connect(
            path: directory.path(PrivateCopier.storeName), mode: .readWrite, reportedPath: path)
    }

    /// True when the original, read in place, was written to since it was opened, or a
    /// transaction is part way through now (`MainFileWatch`): what was read may be a mix of two
    /// states, or an app's half-written pages. Always false for a private copy (it was checked
    /// as it was made, and nothing else writes it).
    public var writtenToSinceOpened: Bool { watch?.writtenToSince ?? false }

    /// False when the original read in place is no longer at its path (replaced by a rename, or
    /// gone): a reader that opens it by name again reads another file. Always true for a private
    /// copy.
    public var pathStillNamesTheFileRead: Bool { watch?.pathNamesWatchedFile ?? true }

    /// Opens the store `probe` looked at and reads it with `body`. When an app wrote to the
    /// original while it was read in place, what `body` made of it is thrown away and the store
    /// is read again through a private copy (which is compared with the original as it is made:
    /// `StoreAccessError.changedWhileCopying`, exit 75, when it keeps changing).
    public static func readingConsistently<Result>(
        probe: InputProbe, options: StoreOpenOptions = StoreOpenOptions(), _ body: (OpenedStore) throws -> Result
    ) throws -> Result {
        let store = try OpenedStore(probe: probe, options: options)
        let result = Swift.Result { try body(store) }
        guard store.writtenToSinceOpened else { return try result.get() }
        var copying = options
        copying.alwaysCopies = true
        return try body(try OpenedStore(probe: probe, options: copying))
    }

    /// `readingConsistently(probe:options:_:)` for the store at `path`.
    public static func readingConsistently<Result>(
        path: String, options: StoreOpenOptions = StoreOpenOptions(), _ body: (OpenedStore) throws -> Result
    ) throws -> Result {
        try readingConsistently(probe: try InputProbe(path: path, followsSymlinks: options.followsSymlinks), options: options, body)
    }

    /// Runs `body` on the connection; an SQLite failure is the store's fault, reported as
    /// `StoreAccessError` naming the file: `damaged` (65) when SQLite finds the pages or the file
    /// malformed, `unreadable` otherwise. A store can open fine and still have a damaged page in
    /// the one table a reader needs (`Z_MODELCACHE`), so readers go through here, not around it.
    public func read<Result>(_ body: (SQLiteConnection) throws -> Result) throws -> Result {
        do {
            return try body(connection)
        } catch let error as SQLiteError {
            throw StoreAccessError.rejected(
                path: probe.path, kind: error.isCorruption ? .damaged : .unreadable,
                reason: "SQLite cannot read it: \(error.message) (code \(error.resultCode))")
        }
    }

    /// Opens and touches the schema, so a file SQLite cannot read fails here with a kind.
    private static func connect(path: String, mode: SQLiteOpenOptions.Mode, reportedPath: String) throws -> SQLiteConnection {
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: mode))
            _ = try connection.scalar("SELECT count(*) FROM sqlite_schema")
            return connection
        } catch let error as SQLiteError {
            throw StoreAccessError.sqliteCannotOpen(
                path: reportedPath, error: error, reason: "SQLite cannot read it: \(error.message) (code \(error.resultCode))")
        } catch let error as SQLitePathTooLongError where mode == .immutable {
            // The operator's own store (a private copy is checked before it is made, and its
            // folder is the one to name): unreadable, 66, as SQLite's refusal was reported.
            throw StoreAccessError.rejected(
                path: reportedPath, kind: .unreadable,
                reason: "SQLite cannot open it: its full path is \(error.path.utf8.count) bytes")
        }
    }
}

/// Copies a store's main file and its data-bearing sidecars into a private directory: the
/// probe's `resolvedPath` and the sidecars beside it (a symbolic link followed: the target's).
enum PrivateCopier {
    static let storeName = "store.sqlite"

    /// - Parameters:
    ///   - throughLocksWhenBusy: when three copies in a row see the store change, a fourth is
    ///     made through SQLite's locks (`copyThroughLocks`) instead of giving up.
    ///   - afterCopying: tests only: runs after each attempt's files are copied, before they are
    ///     compared with the originals (a writer committing at the worst moment).
    static func copy(
        probe: InputProbe, parent: String? = nil, throughLocksWhenBusy: Bool = false,
        afterCopying: ((_ attempt: Int) throws -> Void)? = nil
    ) throws -> PrivateTemporaryDirectory {
        let directory: PrivateTemporaryDirectory
        let folder = hintFolder(parent)
        do {
            // Hidden beside someone's files; plainly named in $TMPDIR.
            directory = try PrivateTemporaryDirectory(parent: parent, prefix: parent == nil ? "read" : ".read")
        } catch {
            throw StoreAccessError.privateCopyFailed(path: probe.path, reason: "\(error.localizedDescription)", folder: folder)
        }
        // A copy SQLite could not open is not made (the folder is removed with `directory`):
        // in $TMPDIR, named so; in a caller's folder, the caller names its option.
        try SQLitePathTooLongError.check(
            directory.path(storeName), folder: parent == nil ? SafeFileOutput.folder(of: directory.path) : nil,
            chosenWith: parent == nil ? .temporaryDirectoryVariable : nil)
        // The -shm is a cache SQLite rebuilds from the WAL; an untrusted one is not copied. Every
        // other sidecar SQLite may make is looked for, not only those the probe saw: a -journal
        // that appears mid-copy means a transaction began writing the main file.
        let main = probe.resolvedPath
        let sidecars = StoreFileSet.sidecarSuffixes.filter { $0 != "-shm" }.map { ($0, main + $0) }
        for attempt in 1...3 {
            // A writer may remove a sidecar at any moment (a -journal when it commits): each try
            // copies the sidecars there now, and one that vanishes mid-copy is a change.
            let sources = [("", main)] + sidecars.filter { fingerprint($0.1) != [-1] }
            let before = sources.map { fingerprint($0.1) }
            let counterBefore = changeCounter(main)
            var vanished = false
            for (suffix, _) in sidecars where !sources.contains(where: { $0.0 == suffix }) {
                unlink(directory.path(storeName + suffix))
            }
            for (suffix, source) in sources {
                do {
                    try copyFile(
                        from: source, to: directory.path(storeName + suffix), isSidecar: !suffix.isEmpty, reportedPath: probe.path, folder: folder)
                } catch where !suffix.isEmpty && (error is SidecarVanished || fingerprint(source) == [-1]) {
                    // Gone when it was opened (a writer's -journal at its commit), or while it
                    // was read; looked at again afterwards, a new transaction's may be there.
                    vanished = true
                    break
                }
            }
            try afterCopying?(attempt)
            // A change the size and time miss (the file system's clock ticks every few ms, and a
            // transaction rewrites pages in place): the header's change counter, which every
            // commit to the main file increments, and a sidecar that appeared (a -journal: a
            // transaction began writing).
            let appeared = sidecars.contains { sidecar in !sources.contains { $0.0 == sidecar.0 } && fingerprint(sidecar.1) != [-1] }
            if !vanished, !appeared, sources.map({ fingerprint($0.1) }) == before,
                changeCounter(main) == counterBefore,
                changeCounter(directory.path(storeName)) == counterBefore
            {
                return directory
            }
        }
        if throughLocksWhenBusy, copyThroughLocks(main, into: directory) { return directory }
        throw StoreAccessError.changedWhileCopying(path: probe.path)
    }

    /// How long the copy through the store's locks waits for a writer's transaction to end.
    static let lockTimeout: TimeInterval = 5

    /// Copies the store at `main` into `directory` as one committed state, as any SQLite reader
    /// would read it while an app writes: opened read-only with its locks honoured, a read
    /// transaction held from the first page to the last (SQLite's online backup,
    /// `StoreSnapshotter`). In rollback mode the app's next commit waits for the copy (tens of
    /// milliseconds for a store of a few MB, what its busy timeout is for); in WAL mode it goes on.
    /// Nothing is created beside the store that is not removed again (a WAL store's `-wal` and
    /// `-shm`, when an app that had them open has since closed it). False when the copy could
    /// not be made (a lock held past `lockTimeout`, a hot journal, an unreadable store): the
    /// caller reports the store as changing.
    static func copyThroughLocks(_ main: String, into directory: PrivateTemporaryDirectory) -> Bool {
        // What the failed attempts copied must not meet the new copy: a stale -journal would be
        // rolled back into it, a stale -wal applied to it.
        for suffix in [""] + StoreFileSet.sidecarSuffixes { unlink(directory.path(storeName + suffix)) }
        do {
            let snapshotter = try StoreSnapshotter(sourcePath: main, access: .live, lockTimeout: lockTimeout)
            _ = try snapshotter.copy(into: directory.path(storeName), pagesPerStep: 1024) { _ in }
            return true
        } catch {
            for suffix in [""] + StoreFileSet.sidecarSuffixes { unlink(directory.path(storeName + suffix)) }
            return false
        }
    }

    /// A sidecar that was there when it was listed was gone when it was opened.
    private struct SidecarVanished: Error {}

    /// The database header's file change counter (bytes 24–27), or nil when the header cannot be
    /// read (an empty or short file: the copy is then checked by size and time alone).
    private static func changeCounter(_ path: String) -> UInt32? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4)
        guard pread(descriptor, &bytes, 4, 24) == 4 else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Size and modification time: enough to see that a writer touched a file during the copy.
    private static func fingerprint(_ path: String) -> [Int64] {
        var info = stat()
        guard lstat(path, &info) == 0 else { return [-1] }
        return [Int64(info.st_size), Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec), Int64(info.st_ino)]
    }

    /// The folder an operator frees space in: `parent`'s own folder when `parent` is a writer's
    /// private temporary (removed when the run ends), nil for `$TMPDIR`.
    private static func hintFolder(_ parent: String?) -> String? {
        guard let parent else { return nil }
        let url = URL(fileURLWithPath: parent)
        return url.lastPathComponent.contains(TemporaryItems.marker) ? url.deletingLastPathComponent().path : url.path
    }

    /// How much of the `-wal` at `path` SQLite would use: its header and the frames up to its
    /// last valid commit (`WriteAheadLog`: a frame whose salts or checksum fail ends the log for
    /// SQLite too). 0 when the header is not a valid WAL header (SQLite ignores such a file);
    /// nil when the file cannot be read (the copy then reports it). A review's sparse 1 GB
    /// `-wal` behind a 53 KB store was copied whole into `$TMPDIR`.
    static func usedLength(ofWAL path: String) -> Int64? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        guard let log = WriteAheadLog.read(descriptor: descriptor, size: Int64(info.st_size)) else { return 0 }
        return Int64(WriteAheadLog.headerSize) + Int64(log.committedFrames) * Int64(WriteAheadLog.frameHeaderSize + log.pageSize)
    }

    /// Whether the `-wal` at `path` holds a committed transaction SQLite cannot apply: a header
    /// whose checksum fails (not all zeros), or, after the last frame that checks out, a frame
    /// of this log (its salts the header's) that fails, with a commit frame of this log beyond
    /// it. Those transactions are lost to SQLite, so the file must be kept (a review's bad byte
    /// had `inspect` call it harmless). A torn last frame of an unfinished transaction (no
    /// commit beyond) is normal after a crash, and not counted (a review).
    static func walHasUnreadableFrames(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size >= Int64(WriteAheadLog.headerSize) else { return false }
        var header = [UInt8](repeating: 0, count: WriteAheadLog.headerSize)
        guard FileReading.read(descriptor, into: &header, at: 0) == header.count, !header.allSatisfy({ $0 == 0 }) else { return false }
        guard let log = WriteAheadLog.read(descriptor: descriptor, size: Int64(info.st_size)) else { return true }
        let frameSize = Int64(WriteAheadLog.frameHeaderSize + log.pageSize)
        var frame = [UInt8](repeating: 0, count: WriteAheadLog.frameHeaderSize)
        // Frames of this log past the last one that checks out: a commit among them was lost.
        // Bounded: at most a million frame headers are read.
        var index = Int64(log.validFrames)
        while index < Int64(log.framesInFile), index < Int64(log.validFrames) + 1_000_000 {
            let offset = Int64(WriteAheadLog.headerSize) + index * frameSize
            guard FileReading.read(descriptor, into: &frame, at: offset) == frame.count, frame[8..<16] == header[16..<24] else { return false }
            if frame[4..<8].contains(where: { $0 != 0 }) { return true }
            index += 1
        }
        return false
    }

    private static func copyFile(from source: String, to target: String, isSidecar: Bool, reportedPath: String, folder: String?) throws {
        // Only what SQLite would read of a -wal: the rest (frames of an unfinished or older
        // transaction, or nothing at all in a sparse file) changes nothing for a reader.
        let limit = isSidecar && source.hasByteSuffix("-wal") ? usedLength(ofWAL: source) : nil
        let input: ReadableFile
        do { input = try ReadableFile(path: source, followsSymlinks: false) } catch {
            if case .missing = error, isSidecar { throw SidecarVanished() }
            // The store's own file (its -wal, say) unreadable is the input's fault, not the
            // copy's: exit 66 and "run as a user that can read it", not 74 and "free space".
            if case .tooManyOpenFiles = error { throw StoreAccessError.tooManyOpenFiles(path: reportedPath, reason: "\(source) \(error.description)") }
            if case .unreadable = error {
                throw StoreAccessError.rejected(path: reportedPath, kind: .unreadable, reason: "\(source) \(error.description)")
            }
            throw StoreAccessError.privateCopyFailed(path: reportedPath, reason: "cannot open \(source): \(error.description)", folder: folder)
        }
        let output = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else {
            throw StoreAccessError.privateCopyFailed(
                path: reportedPath, reason: "cannot create \(target): \(String(cString: strerror(errno)))", folder: folder)
        }
        defer { close(output) }
        let bufferSize = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while true {
            let n: Int
            let room = limit.map { Int(min(Int64(bufferSize), max(0, $0 - copied))) } ?? bufferSize
            if room == 0 { return }
            do { n = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<room])) } catch {
                throw StoreAccessError.privateCopyFailed(path: reportedPath, reason: "cannot read \(source): \(error.description)", folder: folder)
            }
            if n == 0 { return }
            copied += Int64(n)
            var written = 0
            while written < n {
                let w = write(output, buffer.baseAddress! + written, n - written)
                if w < 0 {
                    if errno == EINTR { continue }
                    throw StoreAccessError.privateCopyFailed(
                        path: reportedPath, reason: "cannot write the copy: \(String(cString: strerror(errno)))", folder: folder)
                }
                written += w
            }
        }
    }
}
