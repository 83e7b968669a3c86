import Foundation

/// The path a new store goes to: its folder and name, and the checks that keep `create` from
/// replacing or shadowing anything.
struct CreationTarget {
    let path: String
    let folder: String

    /// Splits `path` and checks that nothing is in the way.
    ///
    /// - Throws: `StoreCreationError` when the path or a sidecar exists, the path is a symbolic
    ///   link, or the folder is not a folder.
    init(path: String) throws {
        guard !path.isEmpty else { throw StoreCreationError.emptyPath }
        guard !path.hasSuffix("/"), !["", ".", ".."].contains(Self.lastComponent(of: path)) else {
            throw StoreCreationError.folderUnusable(path: path, folder: path, reason: "is a folder; name the store file inside it")
        }
        self.path = path
        folder = Self.folder(of: path)
        var info = stat()
        // The folder may be reached through a symbolic link (/tmp on macOS); the store may not.
        guard stat(folder, &info) == 0 else {
            let reason = errno == ENOENT ? "does not exist" : errno == ENOTDIR ? "is not a folder" : String(cString: strerror(errno))
            throw StoreCreationError.folderUnusable(path: path, folder: folder, reason: reason)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw StoreCreationError.folderUnusable(path: path, folder: folder, reason: "is not a folder")
        }
        // The store needs room for its sidecars' names too.
        if let tooLong = Self.nameLeavingNoRoomForSidecars(path) {
            throw StoreCreationError.nameTooLong(path: path, bytes: tooLong.bytes, limit: tooLong.limit)
        }
        try checkNothingInTheWay()
    }

    /// The file name's length and its folder's limit (`NAME_MAX`), when the name leaves no room
    /// for SQLite's longest sidecar suffix (`-journal`): SQLite could not write a store there
    /// (it cannot create the `-journal`), though it reads one. nil when it fits, or when the
    /// folder's limit cannot be told (a missing folder: the caller's own checks say so).
    ///
    /// The one check of `create`, `migrate`, `salvage` (their new store), `restore` (its target)
    /// and `upgrade`/`adopt` (the store they replace in place).
    static func nameLeavingNoRoomForSidecars(_ path: String) -> (bytes: Int, limit: Int)? {
        let bytes = lastComponent(of: path).utf8.count
        let limit = pathconf(folder(of: path), Int32(_PC_NAME_MAX))
        guard limit > 0, bytes + StoreCreationError.longestSidecarSuffix > limit else { return nil }
        return (bytes, limit)
    }

    /// The folder `path` names its file in, as given: `.` for a bare name.
    static func folder(of path: String) -> String {
        guard let parent = path.splitAtLastSlash?.folder else { return "." }
        return parent.isEmpty ? "/" : parent
    }

    /// Throws unless the path and its sidecars are all absent. Run again just before the new
    /// store is put in place, as something may have appeared meanwhile.
    func checkNothingInTheWay() throws {
        var info = stat()
        if lstat(path, &info) == 0 {
            if info.st_mode & S_IFMT == S_IFLNK { throw StoreCreationError.targetIsSymlink(path: path) }
            throw StoreCreationError.targetExists(path: path)
        }
        for suffix in StoreReplacement.sidecarSuffixes where lstat(path + suffix, &info) == 0 {
            throw StoreCreationError.sidecarExists(path: path, sidecar: path + suffix)
        }
        if let store = Self.storeWhoseSidecar(path) { throw StoreCreationError.targetIsSidecar(path: path, store: store) }
    }

    /// The store whose `-wal`, `-shm` or `-journal` `path` would be: `X` for `X-wal` when `X`
    /// is a file (or a link, which an app opens through). The first open of X would delete a
    /// store written there (or, as `-shm`, overwrite it) after the command reported success. A
    /// folder named X is no store (a review found the first check refused one).
    static func storeWhoseSidecar(_ path: String) -> String? {
        // Bytes, not characters (`String+Bytes`): `s\u{600}-wal` ends in `-wal` to the file system.
        for suffix in StoreReplacement.sidecarSuffixes where path.hasByteSuffix(suffix) && path.utf8.count > suffix.utf8.count {
            let store = String(decoding: path.utf8.dropLast(suffix.utf8.count), as: UTF8.self)
            var info = stat()
            guard !store.hasByteSuffix("/"), lstat(store, &info) == 0 else { continue }
            let kind = info.st_mode & S_IFMT
            if kind == S_IFREG || kind == S_IFLNK { return store }
        }
        return nil
    }

    /// Puts the finished file at `path` without ever replacing anything: a hard link, which
    /// fails if the name exists; on a filesystem without hard links, a rename after a last check.
    func publish(_ file: String) throws {
        if link(file, path) == 0 { return }
        let code = errno
        switch code {
        case EEXIST:
            try checkNothingInTheWay()
            throw StoreCreationError.targetExists(path: path)
        case EPERM, ENOTSUP, EOPNOTSUPP, EMLINK, EXDEV, ENOSYS:
            try checkNothingInTheWay()
            guard rename(file, path) == 0 else {
                throw StoreCreationError.writeFailed(path: path, reason: "cannot move the new store into place: \(String(cString: strerror(errno)))")
            }
        default:
            throw StoreCreationError.writeFailed(path: path, reason: "cannot move the new store into place: \(String(cString: strerror(code)))")
        }
    }

    /// The private folder (mode 0700) a new store is built in: inside the destination folder, so
    /// publishing it is a link on the same file system.
    ///
    /// - Throws: `StoreCreationError.folderUnusable` when the folder cannot be created there.
    func makeWorkspace(prefix: String, longestFile: String) throws -> PrivateTemporaryDirectory {
        let workspace: PrivateTemporaryDirectory
        do {
            workspace = try PrivateTemporaryDirectory(parent: folder, prefix: prefix)
        } catch {
            throw StoreCreationError.folderUnusable(path: path, folder: folder, reason: "is not writable (\(StoreCreator.reason(error)))")
        }
        // SQLite opens `longestFile` there by its full path: past its limit, `create` and
        // `salvage` said "check free space" (74) for a folder of about 470 bytes (review rv10).
        do {
            try SQLitePathTooLongError.check(workspace.path(longestFile), folder: folder, chosenWith: .newStoreFolder)
        } catch {
            workspace.remove()
            throw error
        }
        return workspace
    }

    /// The whole publication of a finished file: flushed to disk, checked that nothing appeared
    /// at the path meanwhile, hard-linked into place (never replacing anything), and the folder
    /// flushed so the new name survives a crash. If anything fails once the link exists, the
    /// link is removed again, so the path holds the complete file or nothing. From the check to
    /// the folder's flush it is one `TemporaryItems.uninterruptible` section: an interruption
    /// waits for it.
    ///
    /// - Parameters:
    ///   - result: when the file is the command's final result (`create`'s store, `salvage`'s,
    ///     `migrate`'s), what it is: recorded once published (`PublishedResult`). Nil for a file
    ///     made on the way (a store `salvage` creates in its workspace).
    ///   - beforeLinking, afterLinking: called at those points (tests inject failures there).
    /// - Throws: `StoreCreationError` when something is in the way; `POSIXFailure` when flushing
    ///   fails; whatever the closures throw.
    func publishDurably(
        _ file: String, as result: PublishedResult?, beforeLinking: () throws -> Void = {}, afterLinking: () throws -> Void = {}
    ) throws {
        try Self.synchronize(file, isFolder: false)
        try beforeLinking()
        try TemporaryItems.uninterruptible(publishing: result) {
            try checkNothingInTheWay()
            try publish(file)
            do {
                try afterLinking()
                try Self.synchronize(folder, isFolder: true)
            } catch {
                unpublish(sameFileAs: file)
                throw error
            }
        }
    }

    /// Removes `path` if it is the file `published` (same device and inode): undoing `publish`.
    func unpublish(sameFileAs published: String) {
        var mine = stat(), there = stat()
        guard stat(published, &mine) == 0, lstat(path, &there) == 0, mine.st_dev == there.st_dev, mine.st_ino == there.st_ino else {
            return
        }
        unlink(path)
    }

    /// Flushes a file's data, or a folder's entries, to stable storage.
    static func synchronize(_ path: String, isFolder: Bool) throws {
        let fd = open(path, (isFolder ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NOFOLLOW) | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXFailure(operation: "open \(path)", code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw POSIXFailure(operation: "fsync \(path)", code: errno) }
    }

    private static func lastComponent(of path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
    }
}

/// A failed system call, with its errno.
struct POSIXFailure: Error, CustomStringConvertible {
    var operation: String
    var code: Int32
    var description: String { "\(operation): \(String(cString: strerror(code)))" }
}
