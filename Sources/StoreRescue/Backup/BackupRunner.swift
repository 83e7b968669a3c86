import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Takes compressed, verified-by-construction backups of a store.
///
/// A backup is a consistent snapshot of the store — main file plus committed WAL content — taken
/// with SQLite's online backup API while other processes keep reading and writing, compressed as
/// it is taken into one standard gzip file on every core, with a JSON manifest beside it. Both
/// files appear complete or not at all. See `Docs/BACKUP.md`.
///
/// ```swift
/// let result = try BackupRunner.run(store: "/data/default.store",
///                                   options: BackupOptions(destinationDirectory: "/backups", reason: "pre-upgrade"))
/// print(result.backupPath, result.manifest.snapshotSHA256)
/// ```
public enum BackupRunner {
    /// Backs up the store at `store`.
    ///
    /// - Parameters:
    ///   - store: the store's main file. Its `-wal` is read through SQLite, never copied raw.
    ///   - storeDescription: reads the store UUID and framework version from the snapshot.
    ///   - progress: called on the calling thread as the snapshot and compression advance.
    ///   - cancellation: polled often; once cancelled the backup stops and removes its files.
    /// - Returns: the paths and the manifest written.
    /// - Throws: `BackupError`, `SafeFileOutputError` or `GzipError`; nothing is left behind.
    public static func run(store: String, options: BackupOptions = BackupOptions(),
                           storeDescription: StoreDescriptionReader = readStoreDescription,
                           progress: ((BackupProgress) -> Void)? = nil,
                           cancellation: CancellationFlag? = nil) throws -> BackupResult {
        try run(store: store, options: options, storeDescription: storeDescription, progress: progress,
                cancellation: cancellation, afterFindingAtRest: nil)
    }

    /// `run`, with test hooks: `afterFindingAtRest` runs once the store is found at rest, before
    /// it is read (an app that opens it and begins writing at the worst moment); `startThread`
    /// starts every thread of the backup (one that refuses, as the system may: the snapshot is
    /// then compressed and hashed on the caller's thread, into the same files).
    static func run(store: String, options: BackupOptions, storeDescription: StoreDescriptionReader,
                    progress: ((BackupProgress) -> Void)?, cancellation: CancellationFlag?,
                    afterFindingAtRest: (() throws -> Void)?,
                    startThread: @escaping JoinableThread.Start = { JoinableThread($0) }) throws -> BackupResult {
        precondition((1...9).contains(options.compressionLevel), "compression level must be 1...9")
        precondition(options.keep.map { $0 >= 1 } ?? true, "keep must be at least 1")
        SafeFileOutput.ignoreFileSizeLimitSignal()
        try checkPathShape(store)
        // Never beside the store (README, BACKUP.md): `upgrade`'s check, made first as it is there.
        if isStoreFolder(options.destinationDirectory, of: absolutePath(store)) {
            let named = URL(fileURLWithPath: absolutePath(options.destinationDirectory)).standardized.path  // `--to .`: no "/."
            throw BackupError.destinationIsStoreFolder(path: named, folder: options.destinationOption)
        }
        var source = try SourceFile(path: store)
        var isLive = try source.checkAtRest()
        if !isLive { try afterFindingAtRest?() }
        for attempt in 1...3 {
            do {
                return try runOnce(source: source, isLive: isLive, options: options, storeDescription: storeDescription,
                                   progress: progress, cancellation: cancellation, startThread: startThread)
            } catch let error where !isLive
                        && (error is BackupAttemptError || (isAboutTheSource(error) && source.writtenToSinceFoundAtRest)) {
                // An app opened the store and wrote to it while it was read as one at rest: what
                // was read, or the failure to read it (a page half written: "malformed"), is the
                // app's work in progress, not the store. Take it again as a live store, through
                // its locks.
                guard attempt < 3 else { break }
                isLive = true
            } catch BackupAttemptError.hotJournal where isLive {
                // Taken as a live store, the app died part way through a transaction: its hot
                // -journal is rolled back on a private copy of the store at rest.
                guard attempt < 3 else { break }
                source = try SourceFile(path: store)
                isLive = try source.checkAtRest()
            } catch is BackupAttemptError {
                break  // never thrown otherwise; not one to reach a caller
            }
        }
        throw BackupError.storeKeptChanging(path: source.path)
    }

    /// True for a failure to read the store (not the backup folder's, not a cancellation).
    private static func isAboutTheSource(_ error: any Error) -> Bool {
        switch error {
        case is StoreAccessError: return true
        case BackupError.sourceNotAStore, BackupError.snapshotFailed, BackupError.snapshotInconsistent: return true
        default: return false
        }
    }

    /// One attempt: a store at rest is read without touching any of its files; a live one through
    /// SQLite's online backup, sharing its locks.
    private struct NameTakenMeanwhile: Error {}

    private static func runOnce(source: SourceFile, isLive: Bool, options: BackupOptions,
                                storeDescription: StoreDescriptionReader,
                                progress: ((BackupProgress) -> Void)?,
                                cancellation: CancellationFlag?,
                                startThread: @escaping JoinableThread.Start) throws -> BackupResult {
        let started = Date()
        let createdAt = options.clock()
        let folder = try prepareDestination(options.destinationDirectory, chosenWith: options.destinationOption)
        var names = try BackupNaming.freeName(storeFileName: source.fileName, date: createdAt, in: folder)

        let staging: PrivateTemporaryDirectory
        do {
            staging = try PrivateTemporaryDirectory(parent: options.temporaryDirectory ?? folder, prefix: ".snapshot")
        } catch {
            // PrivateTemporaryDirectory's message ends with the system's reason.
            let message = (error as? CocoaError)?.userInfo[NSLocalizedDescriptionKey] as? String ?? "\(error)"
            let reason = message.components(separatedBy: ": ").last ?? message
            throw BackupError.destinationUnusable(path: options.temporaryDirectory ?? folder,
                                                  reason: "cannot create files there: \(reason)", folder: options.destinationOption)
        }
        var retainsStaging = false
        defer { if !retainsStaging { staging.remove() } }
        // The paths SQLite opens in the staging folder: refused before anything is read or
        // written, naming the folder's option. Past SQLite's limit the snapshot's open failed as "unable to open
        // database file": a WAL store read as unreadable (66), any other as "check free space"
        // (74) (review rv10 #2).
        // The longest is a private copy's, in a folder of its own (a store at rest whose -wal holds
        // frames); checked for every store, so a folder that takes one backup takes the next.
        let snapshotPath = staging.path("snapshot.sqlite")
        let longestPath = Self.privateCopyPath(inStaging: staging.path)
        try SQLitePathTooLongError.check(longestPath, folder: options.temporaryDirectory ?? folder, chosenWith: options.destinationOption)
        let access: StoreSnapshotter.Access
        if isLive {
            access = .live
        } else {
            do {
                let store = try OpenedStore(
                    probe: source.probe, options: StoreOpenOptions(privateCopyParent: staging.path, copiesThroughLocksWhenBusy: false))
                // The store replaced by a rename since it was found at rest: not the file watched.
                if store.accessMethod == .immutableOriginal { source.checkOpenedByName() }
                access = .atRest(store)
            } catch StoreAccessError.changedWhileCopying {
                // A writer came back while the store at rest was copied (its -journal went away
                // mid-copy): take it as a live store, through SQLite's locks.
                throw BackupAttemptError.storeChangedWhileReadInPlace
            } catch let error as SQLitePathTooLongError {
                throw error.chosen(in: options.temporaryDirectory ?? folder, by: options.destinationOption)
            } catch StoreAccessError.privateCopyFailed(_, let reason, _) {
                // The copy is made in the backup folder: its failure (the folder full, the
                // file-size limit) is the backup's, named so — not "a private copy to read",
                // with a hint naming the staging folder that is removed (a review).
                throw BackupError.copyFailed(source: source.path, folder: options.temporaryDirectory ?? folder, reason: reason)
            }
        }
        let snapshotter = try StoreSnapshotter(sourcePath: source.path, access: access, lockTimeout: options.lockTimeout, cancellation: cancellation)
        let pageSize = snapshotter.pageSize
        let output = try SafeFileOutput(destinationPath: folder + "/" + names.backup)
        let writer = try ParallelGzipWriter(output: output, options: .init(
            level: Int32(options.compressionLevel), blockSize: options.blockSize,
            threads: max(1, options.threads), leadingBytesSuppliedLater: pageSize), startThread: startThread)
        let streamer = SnapshotStreamer(path: snapshotPath, startOffset: Int64(pageSize), writer: writer, startThread: startThread)
        streamer.start()
        var totalBytes: Int64 = 0
        func stopEverything(_ error: any Error) {
            streamer.abort(error)
            writer.abort(error)
            output.discard()
        }

        // 1. Snapshot, handing each finished range of pages to the compressor.
        let pageCount: Int
        do {
            pageCount = try snapshotter.copy(into: snapshotPath, pagesPerStep: Int32(clamping: options.pagesPerStep)) { step in
                if cancellation?.isCancelled == true { throw BackupError.interrupted }
                if let error = streamer.error { throw error }
                totalBytes = Int64(step.totalPages) * Int64(pageSize)
                streamer.publish(finalEnd: Int64(step.copiedPages) * Int64(pageSize), isComplete: step.copiedPages == step.totalPages)
                progress?(BackupProgress(phase: .snapshot, completedBytes: Int64(step.copiedPages) * Int64(pageSize), totalBytes: totalBytes))
            }
            snapshotter.endReadTransaction()
            // The original read in place must still be as it was found: unchanged, and no writer
            // part way through a transaction. (A private copy was checked as it was made.)
            if case .atRest(let store) = access, store.accessMethod == .immutableOriginal, source.writtenToSinceFoundAtRest {
                throw BackupAttemptError.storeChangedWhileReadInPlace
            }
        } catch {
            stopEverything(error)
            throw error
        }

        // 2. Page 1 is final now; hash the whole snapshot while compression finishes.
        let digestTask: BackgroundTask<FileDigest>
        let description: (uuid: String?, frameworkVersion: Int?)
        let summary: GzipSummary
        do {
            writer.supplyLeadingBytes(try readPrefix(of: snapshotPath, count: pageSize))
            digestTask = BackgroundTask(startThread: startThread) { try FileDigest.of(path: snapshotPath) }
            // The digest's thread opens the snapshot at the same moment: with one descriptor
            // left, either open may be the one that finds none, and this one is the limit's too
            // (it reached the top as "internal error: SQLite error 14", now and then, under
            // `ulimit -n`).
            let snapshot: SQLiteConnection
            do {
                snapshot = try SQLiteConnection(path: snapshotPath, options: SQLiteOpenOptions(mode: .immutable))
            } catch let error as SQLiteError where error.fileSystemFailure == .tooManyOpenFiles {
                throw BackupError.tooManyOpenFiles(path: snapshotPath, reason: error.systemReason ?? error.message)
            }
            description = storeDescription(snapshot)
            while try !streamer.wait(timeout: 0.2) {
                if cancellation?.isCancelled == true { throw BackupError.interrupted }
                progress?(BackupProgress(phase: .compress, completedBytes: streamer.bytesConsumed + Int64(pageSize), totalBytes: totalBytes))
            }
            summary = try writer.finish()
        } catch {
            stopEverything(error)
            throw error
        }
        let digest: FileDigest
        do { digest = try digestTask.wait() } catch { output.discard(); throw error }
        // The bytes compressed must be the bytes of the final snapshot, or nothing is published.
        guard digest.crc32 == summary.crc32, digest.size == summary.uncompressedSize,
              digest.size == Int64(pageCount) * Int64(pageSize) else {
            output.discard()
            throw BackupError.snapshotInconsistent(source: source.path)
        }
        progress?(BackupProgress(phase: .compress, completedBytes: totalBytes, totalBytes: totalBytes))

        // 3. Manifest, then publish both (the .gz first: a manifest never names a missing file).
        // A name another backup of the same store published meanwhile (the same second) moves
        // on to the next `-n`: a review's concurrent backups failed with 73 instead.
        var manifest: BackupManifest
        var manifestPath: String
        var attempt = 0
        while true {
            manifest = BackupManifest(
                formatVersion: BackupManifest.currentFormatVersion, toolName: ToolVersion.name, toolVersion: ToolVersion.current,
                sqliteVersion: SQLiteConnection.libraryVersion, zlibVersion: zlibLibraryVersion,
                createdAt: BackupManifest.timestampFormatter().string(from: createdAt), reason: options.reason,
                sourcePath: source.path, sourceSize: source.size, sourceWALSize: source.walSize,
                pageSize: pageSize, pageCount: pageCount, snapshotSize: digest.size, snapshotSHA256: digest.sha256,
                backupFileName: names.backup, backupSize: summary.compressedSize, backupSHA256: summary.sha256,
                compressionLevel: options.compressionLevel, storeUUID: description.uuid, frameworkVersion: description.frameworkVersion)
            manifestPath = folder + "/" + names.manifest
            let manifestOutput = try SafeFileOutput(destinationPath: manifestPath)
            try manifestOutput.write(Array(try manifest.encoded()))
            if cancellation?.isCancelled == true {
                output.discard()
                throw BackupError.interrupted
            }
            // An interruption waits for both: never a .gz without its manifest.
            let backupPath = folder + "/" + names.backup
            let result = options.isFinalResult
                ? PublishedResult(path: backupPath, description: "the backup (with its manifest \(manifestPath))") : nil
            do {
                try TemporaryItems.uninterruptible(publishing: result) {
                    // Thrown, not returned: an interruption meanwhile must not count it published.
                    guard try output.publishIfFree(at: backupPath) else { throw NameTakenMeanwhile() }
                    do {
                        try manifestOutput.publish()
                    } catch {
                        unlink(output.destinationPath)
                        SafeFileOutput.syncFolder(folder)
                        throw error
                    }
                }
                break
            } catch is NameTakenMeanwhile {
                manifestOutput.discard()
            }
            attempt += 1
            guard attempt < 100 else {
                output.discard()
                throw SafeFileOutputError.destinationExists(path: backupPath)
            }
            names = try BackupNaming.freeName(storeFileName: source.fileName, date: createdAt, in: folder)
        }

        var pruned = BackupRetention.Pruning()
        if let keep = options.keep {
            do {
                pruned = try BackupRetention.prune(folder: folder, sourcePath: source.path, keep: keep, justWritten: output.destinationPath)
            } catch BackupError.destinationUnusable(let path, let reason, _) {
                throw BackupError.destinationUnusable(
                    path: path, reason: "the backup \(output.destinationPath) was written, but \(reason)", folder: options.destinationOption)
            }
        }
        var snapshot: RetainedSnapshot?
        if options.retainsSnapshot {
            retainsStaging = true
            snapshot = RetainedSnapshot(folder: staging, path: snapshotPath, sha256: digest.sha256, pageSize: pageSize, pageCount: pageCount)
        }
        return BackupResult(backupPath: output.destinationPath, manifestPath: manifestPath, manifest: manifest,
                            prunedBackups: pruned.removed, retentionNotes: pruned.notes, seconds: Date().timeIntervalSince(started), snapshot: snapshot)
    }

    /// The default store description: `Z_METADATA.Z_UUID` and `NSPersistenceFrameworkVersion`
    /// from the metadata plist (read with the same bounds as `inspect`), when the store has them.
    public static func readStoreDescription(_ connection: SQLiteConnection) -> (uuid: String?, frameworkVersion: Int?) {
        let hasMetadata = (try? connection.scalar(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'Z_METADATA'")) != nil
        guard hasMetadata, let result = try? StoreMetadata.read(from: connection) else { return (nil, nil) }
        switch result {
        case .read(let metadata, _):
            let uuid = metadata.uuid.flatMap { $0.count <= 255 ? $0 : nil }
            return (uuid, metadata.frameworkVersion.flatMap { Int(exactly: $0) })
        case .unreadable(let uuid, _):
            return (uuid.flatMap { $0.count <= 255 ? $0 : nil }, nil)
        case .absent:
            return (nil, nil)
        }
    }

    /// Creates the backup folder when missing; returns its absolute path.
    ///
    /// - Parameter option: the option that chose the folder, named by the error when it cannot be used.
    static func prepareDestination(_ path: String, chosenWith option: FolderOption) throws -> String {
        let absolute = absolutePath(path)
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: absolute, isDirectory: &isFolder) {
            guard isFolder.boolValue else {
                throw BackupError.destinationUnusable(path: absolute, reason: "it is not a folder", folder: option)
            }
            return absolute
        }
        do {
            try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw BackupError.destinationUnusable(path: absolute, reason: "it does not exist and cannot be created", folder: option)
        }
        return absolute
    }


    /// The longest path SQLite opens while a backup is taken with `stagingPath` as its staging
    /// folder: a private copy's, in a folder of its own (a store at rest whose `-wal` holds frames).
    static func privateCopyPath(inStaging stagingPath: String) -> String {
        stagingPath + "/" + TemporaryItems.name(label: ".read", random: "XXXXXX") + "/" + PrivateCopier.storeName
    }

    /// The same for a backup into `folder`, before its staging folder exists: `restore --force`
    /// checks it before it decompresses anything (review rv11: it wrote a full-size temporary
    /// beside the store first, then refused).
    static func longestSQLitePath(backingUpInto folder: String) -> String {
        privateCopyPath(inStaging: folder + "/" + TemporaryItems.name(label: ".snapshot", random: "XXXXXX"))
    }
    /// True when `folder` is the folder `store` is in, once both have their symbolic links
    /// resolved (`backup --to`, `upgrade --backup-dir`: never the store's own folder).
    static func isStoreFolder(_ folder: String, of store: String) -> Bool {
        let storeFolder = SafeFileOutput.folder(of: absolutePath(store))
        // When both exist, the file system says whether they are one folder (device and inode):
        // a bind mount or another link to it is the store's folder too, and two folders whose
        // names are canonically equivalent but spelled with other bytes are two (review rv9).
        var ofStore = stat(), ofFolder = stat()
        if stat(storeFolder, &ofStore) == 0, stat(absolutePath(folder), &ofFolder) == 0 {
            return ofStore.st_dev == ofFolder.st_dev && ofStore.st_ino == ofFolder.st_ino
        }
        let resolvedStoreFolder = URL(fileURLWithPath: storeFolder).resolvingSymlinksInPath().path
        return resolvedStoreFolder.hasSameBytes(as: URL(fileURLWithPath: absolutePath(folder)).resolvingSymlinksInPath().path)
    }

    /// Refuses a store path that cannot name a store file whatever is there: an empty one (it
    /// read as the current folder: "the store /cwd is a folder"), and one ending in `/` when what
    /// it names is no folder (`backup j.sqlite/` backed up the file `j.sqlite`, review rv10; a
    /// folder is refused as one, as before).
    static func checkPathShape(_ given: String) throws {
        if given.isEmpty { throw BackupError.sourcePathEmpty }
        if endsInSlashNamingNoFolder(given) { throw BackupError.sourcePathEndsInSlash(path: absolutePath(given) + "/") }
    }

    /// True when `given` ends with `/` and what it names without it is not a folder (nor a link
    /// to one): a file written as a folder.
    static func endsInSlashNamingNoFolder(_ given: String) -> Bool {
        guard given.hasByteSuffix("/") else { return false }
        var info = stat()
        return !(stat(absolutePath(given), &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
    }

    /// `path` made absolute against the current directory. Symbolic links are not resolved: the
    /// callers look at what is at the path itself.
    static func absolutePath(_ path: String) -> String {
        var absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while absolute.count > 1 && absolute.hasSuffix("/") { absolute.removeLast() }
        return absolute
    }

    static func readPrefix(of path: String, count: Int) throws -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.prefix(of: path, count: count, followsSymlinks: false)
        } catch {
            throw BackupError.snapshotFailed(source: path, detail: error.description)
        }
        guard bytes.count == count else { throw BackupError.snapshotFailed(source: path, detail: "the snapshot's first page is short") }
        return bytes
    }
}

/// Why an attempt is taken again (never reaches a caller).
enum BackupAttemptError: Error {
    /// The store, read in place as one at rest, was written to meanwhile.
    case storeChangedWhileReadInPlace
    /// The store, read as a live one, has a hot `-journal` its read-only connection cannot roll
    /// back (`SQLITE_READONLY_ROLLBACK`: an app died part way through a transaction).
    case hotJournal
}

/// The store's main file as found before the backup: its resolved path, sizes and probe.
struct SourceFile {
    var path: String
    var fileName: String
    var size: Int64
    var walSize: Int64
    /// What `inspect` sees: the file's kind, header and sidecars (an odd sidecar is refused).
    var probe: InputProbe
    /// The main file as `checkAtRest` found it at rest; nil until then, for a live store, and
    /// when it could not be opened.
    private var foundAtRest: MainFileWatch?
    /// `checkAtRest` found the store at rest.
    private var isWatchedAtRest = false

    /// - Throws: `BackupError` for a missing store or one that is a folder, link or special
    ///   file; otherwise the probe's `StoreAccessError` (empty, not SQLite, truncated, damaged,
    ///   a sidecar that is not a regular file), worded as `inspect` words it.
    init(path given: String) throws {
        let absolute = BackupRunner.absolutePath(given)
        do {
            probe = try InputProbe(path: absolute, followsSymlinks: false, checksContent: false)
        } catch let error as StoreAccessError {
            switch error {
            case .rejected(_, .missing, _): throw BackupError.sourceMissing(path: absolute)
            case .rejected(_, .symlink, _): throw BackupError.sourceNotARegularFile(path: absolute, kind: "a symbolic link")
            case .rejected(_, .directory, _): throw BackupError.sourceNotARegularFile(path: absolute, kind: "a folder")
            case .rejected(_, .notRegularFile, _): throw BackupError.sourceNotARegularFile(path: absolute, kind: "a special file")
            default: throw error
            }
        }
        let folder = SafeFileOutput.folder(of: absolute)
        let resolvedFolder = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path
        fileName = (absolute as NSString).lastPathComponent
        path = resolvedFolder + "/" + fileName
        size = probe.fileSize
        walSize = probe.files.sidecar("-wal")?.size ?? 0
    }

    /// True when another connection has the store open (it is then read through SQLite, under
    /// its locks, which judge its content). A store at rest is first checked as `inspect` checks
    /// it (empty, not SQLite, truncated, damaged header); since a rollback-journal app holds no
    /// lock between transactions, a header that disagrees with the file's size is looked at again
    /// before it is believed: a writer part way through a transaction holds locks by then, or has
    /// finished and the file is whole.
    mutating func checkAtRest() throws -> Bool {
        // Looked at before the locks: a writer that begins after this is seen by the state.
        let watch = MainFileWatch(path: path)
        if StoreLocks.isInUse(probe.files) {
            foundAtRest = nil
            return true
        }
        // Probed again after the watch began: a transaction an app began, committed or died in
        // since the first probe is either in this probe (a hot -journal: read from a private
        // copy) or seen by the watch.
        try reprobe()
        watch?.journalHadData = probe.files.sidecar("-journal")?.holdsData == true
        foundAtRest = watch
        isWatchedAtRest = true
        do {
            try probe.checkContent()
        } catch let error as StoreAccessError where error.kind == .truncated || error.kind == .damaged {
            usleep(50_000)
            let watch = MainFileWatch(path: path)
            if StoreLocks.isInUse(probe.files) {
                foundAtRest = nil
                isWatchedAtRest = false
                return true
            }
            try reprobe()
            try probe.checkContent()  // throws again if it still is
            watch?.journalHadData = probe.files.sidecar("-journal")?.holdsData == true
            foundAtRest = watch
        }
        return false
    }

    private mutating func reprobe() throws {
        probe = try InputProbe(path: probe.path, followsSymlinks: false, checksContent: false)
        size = probe.fileSize
        walSize = probe.files.sidecar("-wal")?.size ?? 0
    }

    /// True when the store found at rest was written to since (`MainFileWatch`), or another
    /// connection holds a lock on it now. A rollback-journal app holds no lock between
    /// transactions, so "at rest" can end at any moment. Renaming or deleting the main file does
    /// not count: its content is unchanged.
    /// `MainFileWatch.checkOpenedByName`, for the watch begun when the store was found at rest.
    func checkOpenedByName() {
        foundAtRest?.checkOpenedByName()
    }

    var writtenToSinceFoundAtRest: Bool {
        guard isWatchedAtRest else { return false }
        // No watch: the main file could not be opened then; nothing says it was not written.
        return foundAtRest?.writtenToSince ?? true || StoreLocks.isInUse(probe.files)
    }
}
