import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One output file that appears at its final path complete and durable, or not at all.
///
/// The bytes go to a temporary file created beside the destination with
/// `O_CREAT | O_EXCL | O_NOFOLLOW` (so a planted file or symbolic link is never written through)
/// and the permissions asked for (default `0600`), named and locked as `TemporaryItems` says (so a
/// run killed with `kill -9` leaves a file the next run in that folder removes). `publish()` flushes it with `fsync`, moves it to
/// the final name atomically, then `fsync`s the folder so the new name survives a crash. Until
/// then nothing exists at the destination; `discard()` — also run when the value is released
/// unpublished — removes the temporary file, so no failure (disk full, file-size limit, an error
/// thrown by the producer, an interruption turned into an error) leaves a partial file behind.
///
/// ```swift
/// let output = try SafeFileOutput(destinationPath: "/backups/store.sqlite.gz")
/// try output.write(bytes)
/// try output.publish()               // refuses to replace an existing file
/// ```
///
/// - Warning: The first instance sets `SIGXFSZ` to ignored for the whole process, so that a
///   write past the file-size limit (`ulimit -f`) fails with `EFBIG` and is reported, instead of
///   killing the process and leaving its temporary files behind.
public final class SafeFileOutput {
    /// The path the file is published to.
    public private(set) var destinationPath: String
    /// The hidden temporary file written until `publish()`.
    public let temporaryPath: String
    /// Bytes written at the end of the file so far (positioned writes do not move it).
    public private(set) var size: Int64 = 0
    /// The temporary file's device and inode, taken from its descriptor when it was made: what
    /// `StoreReplacement.expectedNewFile` checks the name still leads to.
    public private(set) var identity: StoreReplacement.FileIdentity?

    private var descriptor: Int32
    private let ledger: InterruptionLedger
    private var registration = 0
    private var isPublished = false
    private var isDiscarded = false

    /// Creates the temporary file beside `destinationPath`.
    ///
    /// - Parameters:
    ///   - destinationPath: where `publish()` puts the file; its folder must exist.
    ///   - permissions: the new file's mode (before the umask). Default `0600`.
    /// - Throws: `SafeFileOutputError.cannotCreate` when the folder is missing, not writable or
    ///   not a folder; `tooManyOpenFiles` when no file descriptor is left.
    public convenience init(destinationPath: String, permissions: mode_t = 0o600) throws {
        try self.init(destinationPath: destinationPath, permissions: permissions, ledger: TemporaryItems.ledger)
    }

    /// `init`, registered in `ledger` (tests use one of their own).
    init(destinationPath: String, permissions: mode_t, ledger: InterruptionLedger) throws {
        Self.ignoreFileSizeLimitSignal()
        self.destinationPath = destinationPath
        self.ledger = ledger
        let folder = Self.folder(of: destinationPath)
        let name = (destinationPath as NSString).lastPathComponent
        TemporaryItems.sweepOnce(folder: folder)
        var attempt = 0
        while true {
            let candidate = folder + "/" + TemporaryItems.name(label: "." + TemporaryItems.label(name, maximumBytes: 180), random: Self.randomSuffix())
            let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
            if fd >= 0 {
                TemporaryItems.lock(fd)
                guard let token = ledger.register(candidate, isFolder: false) else {
                    // The process is ending on an interruption, which has removed its temporaries:
                    // one created now would be left behind.
                    unlink(candidate)
                    close(fd)
                    throw SafeFileOutputError.cannotCreate(path: destinationPath, reason: "the process is ending on an interruption")
                }
                descriptor = fd
                temporaryPath = candidate
                registration = token
                identity = StoreReplacement.FileIdentity(descriptor: fd)
                return
            }
            let code = errno
            attempt += 1
            if code == EEXIST, attempt < 16 { continue }
            if code == EMFILE || code == ENFILE { throw SafeFileOutputError.tooManyOpenFiles(path: destinationPath, reason: Self.describe(code)) }
            throw SafeFileOutputError.cannotCreate(path: destinationPath, reason: Self.describe(code))
        }
    }

    deinit {
        discard()
    }

    /// Sets the temporary file's permission bits through its descriptor, never through its
    /// name: the folder may be writable by others, who could put a link there.
    public func setPermissions(_ permissions: mode_t) {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput used after publish() or discard()")
        fchmod(descriptor, permissions & 0o1777)
    }

    /// Cuts the temporary file to `length` bytes, or extends it with zeros (`ftruncate`).
    public func truncate(to length: Int64) throws {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput used after publish() or discard()")
        guard ftruncate(descriptor, off_t(length)) == 0 else {
            throw SafeFileOutputError.writeFailed(path: destinationPath, reason: Self.describe(errno))
        }
    }

    /// Gives the temporary file an owner and group through its descriptor (root only: a copy
    /// that takes the place of an app user's store must stay theirs).
    public func setOwner(user: uid_t, group: gid_t) {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput used after publish() or discard()")
        fchown(descriptor, user, group)
    }

    /// Appends `buffer` to the file.
    ///
    /// - Throws: `SafeFileOutputError.writeFailed` (disk full, file-size limit, I/O error).
    public func write(_ buffer: UnsafeRawBufferPointer) throws {
        try write(buffer, at: size)
        size += Int64(buffer.count)
    }

    /// Appends `bytes` to the file.
    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Writes `buffer` at `offset` without moving the end of the file (for headers filled in last).
    public func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput used after publish() or discard()")
        let code = PositionedWrite.write(descriptor, buffer, at: offset)
        guard code == 0 else { throw SafeFileOutputError.writeFailed(path: destinationPath, reason: Self.describe(code)) }
    }

    /// Reads back `count` bytes at `offset` of what has been written (for checksums).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        let reader = open(temporaryPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard reader >= 0 else {
            let code = errno
            if code == EMFILE || code == ENFILE { throw SafeFileOutputError.tooManyOpenFiles(path: destinationPath, reason: Self.describe(code)) }
            throw SafeFileOutputError.writeFailed(path: destinationPath, reason: Self.describe(code))
        }
        defer { close(reader) }
        let count = pread(reader, buffer.baseAddress, buffer.count, off_t(offset))
        guard count >= 0 else {
            throw SafeFileOutputError.writeFailed(path: destinationPath, reason: Self.describe(errno))
        }
        return count
    }

    /// Makes the file durable and moves it to `destinationPath`.
    ///
    /// - Parameters:
    ///   - replacingExisting: when false (the default), an existing file or symbolic link at the
    ///     destination is left alone and `destinationExists` is thrown; when true it is replaced
    ///     atomically (a symbolic link is replaced, never followed).
    ///   - result: when the file is the command's final result (`catalog learn`'s catalog), what
    ///     it is: recorded once published (`PublishedResult`).
    /// - Throws: `SafeFileOutputError`; the temporary file is removed whatever fails.
    public func publish(replacingExisting: Bool = false, as result: PublishedResult? = nil) throws {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput published twice or after discard()")
        do {
            try flushAndClose()
            let folder = try reserveFolder()
            try ledger.uninterruptible(publishing: result) {
                if replacingExisting {
                    guard rename(temporaryPath, destinationPath) == 0 else {
                        throw SafeFileOutputError.cannotPublish(path: destinationPath, reason: Self.describe(errno))
                    }
                } else {
                    try linkWithoutReplacing()
                }
                isPublished = true
                ledger.unregister(registration)
            }
            folder.sync()
        } catch {
            discard()
            throw error
        }
    }

    /// Makes the file durable, then hands it to `replacement`, which moves it into place its own
    /// way (`StoreReplacement`: settle the store there, lock it, rename the file over it).
    ///
    /// The file is `fsync`ed and closed first. `replacement` runs as an
    /// `TemporaryItems.uninterruptible` section (an interruption waits for it). When it returns,
    /// the file is published: it is no longer this output's to discard.
    ///
    /// ```swift
    /// try output.publish { temporaryPath in
    ///     try StoreReplacement(storePath: output.destinationPath).replace(with: temporaryPath)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - result: when the file is the command's final result (`restore`'s store), what it is:
    ///     recorded once `replacement` returns (`PublishedResult`).
    ///   - replacement: moves the file at `temporaryPath` to its place; when it throws, the file
    ///     must still be at `temporaryPath` (or gone).
    /// - Throws: `SafeFileOutputError.writeFailed` when flushing fails, or what `replacement`
    ///   throws; the temporary file is removed whatever fails.
    public func publish(as result: PublishedResult? = nil, through replacement: (_ temporaryPath: String) throws -> Void) throws {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput published twice or after discard()")
        do {
            try flushAndClose()
            try ledger.uninterruptible(publishing: result) {
                try replacement(temporaryPath)
                isPublished = true
                ledger.unregister(registration)
            }
        } catch {
            discard()
            throw error
        }
    }

    /// Publishes at `path` (in the same folder) unless something is there: false then, and the
    /// file stays this output's (try another name). Never replaces anything. For names chosen
    /// free a moment before that another process may publish first (two backups of one store
    /// in the same second: the second takes `-1`).
    ///
    /// - Throws: `SafeFileOutputError` for anything else; the temporary file is removed then.
    public func publishIfFree(at path: String) throws -> Bool {
        precondition(!isPublished && !isDiscarded, "SafeFileOutput published twice or after discard()")
        precondition(Self.folder(of: path) == Self.folder(of: destinationPath), "publishIfFree(at:) stays in the same folder")
        destinationPath = path
        do {
            if descriptor >= 0 { try flushAndClose() }
            let folder = try reserveFolder()
            var isFree = true
            try ledger.uninterruptible(publishing: nil) {
                do {
                    try linkWithoutReplacing()
                    isPublished = true
                    ledger.unregister(registration)
                } catch SafeFileOutputError.destinationExists {
                    isFree = false
                }
            }
            if isPublished { folder.sync() }
            return isFree
        } catch {
            discard()
            throw error
        }
    }

    /// The destination's folder, opened for the `fsync` after the name is made (`FolderSync`):
    /// the `fsync` is part of the write, so no descriptor left to open it is `tooManyOpenFiles`
    /// before anything is published (the caller's `discard` removes the temporary), never a
    /// publish reported done without it.
    private func reserveFolder() throws -> FolderSync {
        do {
            return try FolderSync(Self.folder(of: destinationPath))
        } catch {
            throw SafeFileOutputError.tooManyOpenFiles(path: destinationPath, reason: Self.describe(error.code))
        }
    }

    private func flushAndClose() throws {
        guard fsync(descriptor) == 0 else {
            throw SafeFileOutputError.writeFailed(path: destinationPath, reason: Self.describe(errno))
        }
        guard close(descriptor) == 0 else {
            descriptor = -1
            throw SafeFileOutputError.writeFailed(path: destinationPath, reason: Self.describe(errno))
        }
        descriptor = -1
    }

    /// Removes the temporary file. Does nothing once published.
    public func discard() {
        guard !isPublished, !isDiscarded else { return }
        isDiscarded = true
        unlink(temporaryPath)
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        ledger.unregister(registration)
    }

    /// `link` + `unlink` gives an atomic "create, but never replace" (`FileMover`'s same-file-system
    /// step: on file systems without hard links, a check of the name then a rename).
    private func linkWithoutReplacing() throws {
        switch FileMover.linkOrRename(temporaryPath, destinationPath) {
        case 0:
            var left = stat(), published = stat()
            if lstat(temporaryPath, &left) == 0, lstat(destinationPath, &published) == 0,
               left.st_dev == published.st_dev, left.st_ino == published.st_ino {
                unlink(temporaryPath)  // linked: the temporary name goes, the bytes stay published
            }
        case EEXIST:
            throw existingDestinationError()
        case let code:
            throw SafeFileOutputError.cannotPublish(path: destinationPath, reason: Self.describe(code))
        }
    }

    private func existingDestinationError() -> SafeFileOutputError {
        var status = stat()
        if lstat(destinationPath, &status) == 0, (status.st_mode & S_IFMT) == S_IFLNK {
            return .destinationIsSymbolicLink(path: destinationPath)
        }
        return .destinationExists(path: destinationPath)
    }

    // MARK: - Helpers shared with other writers

    /// Ignores `SIGXFSZ` so that exceeding the file-size limit is an `EFBIG` error, not death.
    public static func ignoreFileSizeLimitSignal() {
        _ = ignoreSIGXFSZOnce
    }

    private static let ignoreSIGXFSZOnce: Void = {
        signal(SIGXFSZ, SIG_IGN)
    }()

    /// `fsync`s a folder so that names created or removed in it survive a crash. Best effort:
    /// for tidying (names removed, an error path, a fresh private folder) where a lost name
    /// costs nothing. A name the result lives under is synced through a `FolderSync` opened
    /// before it is made, which no missing file descriptor can skip.
    public static func syncFolder(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// The folder part of `path` ("." for a bare name).
    public static func folder(of path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        return folder.isEmpty ? "." : folder
    }

    /// `strerror` text for an `errno` value.
    public static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    private static func randomSuffix() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() & 0xFFFF_FFFF_FFFF, radix: 36)
    }
}

/// Why a `SafeFileOutput` could not be written or published.
public enum SafeFileOutputError: OperatorFacingError, Equatable {
    /// The temporary file could not be created in the destination's folder.
    case cannotCreate(path: String, reason: String)
    /// Writing or flushing failed part way (disk full, file-size limit, I/O error).
    case writeFailed(path: String, reason: String)
    /// Something already exists at the destination; nothing was replaced.
    case destinationExists(path: String)
    /// A symbolic link sits at the destination; it was neither followed nor replaced.
    case destinationIsSymbolicLink(path: String)
    /// The finished file could not be moved to its final name.
    case cannotPublish(path: String, reason: String)
    /// No file descriptor was left to create or read back the file (`EMFILE`: the process's
    /// limit, `ulimit -n`; `ENFILE`: the system's). Neither the folder's fault nor a full disk:
    /// it read as `cannotCreate`, exit 73 with "check that the folder exists".
    case tooManyOpenFiles(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotCreate(let path, let reason):
            return "cannot create \(path): \(reason)"
        case .writeFailed(let path, let reason):
            return "writing \(path) failed: \(reason); the partial file was removed"
        case .destinationExists(let path):
            return "\(path) already exists; it was left untouched"
        case .destinationIsSymbolicLink(let path):
            return "\(path) is a symbolic link; it was neither followed nor replaced"
        case .cannotPublish(let path, let reason):
            return "cannot move the finished file to \(path): \(reason); the partial file was removed"
        case .tooManyOpenFiles(let path, let reason):
            return "cannot create \(path): no file descriptor left: \(reason); nothing was left behind"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .cannotCreate:
            return "check that the folder exists and that you may write to it, or choose another folder"
        case .writeFailed(_, let reason):
            return "free disk space or raise the file-size limit (ulimit -f) (\(reason)), then run the command again"
        case .destinationExists:
            return "choose another name, or move the existing file away first"
        case .destinationIsSymbolicLink:
            return "remove the symbolic link (someone may have planted it) or choose another folder"
        case .cannotPublish:
            return "check the folder's permissions and free space, then run the command again"
        case .tooManyOpenFiles:
            return StoreCreationError.openFilesHint
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .writeFailed, .tooManyOpenFiles: return .ioError
        case .cannotCreate, .destinationExists, .destinationIsSymbolicLink, .cannotPublish: return .cannotCreateOutput
        }
    }
}
