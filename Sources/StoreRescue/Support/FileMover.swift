import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way StoreRescue moves a file it must keep (a store aside into a quarantine, a damaged
/// store's sidecars into a raw-copy folder): a new name, never an overwritten one, on the same
/// file system or another, and the source gone only once its bytes are safe at the destination.
///
/// - On one file system: `link` then `unlink` (atomic "create, never replace"; a kill between
///   leaves two names for the same bytes). Where hard links are not supported (`EPERM`,
///   `ENOTSUP`, `EMLINK`: FAT, some network mounts) the name is checked, then `rename`d.
/// - Across file systems (`EXDEV`): the bytes are copied into a temporary beside the destination
///   (`SafeFileOutput`: exclusive, `fsync`ed), the copy's size and SHA-256 are compared with the
///   source read again afterwards (a source that changed while it was copied is caught), then the
///   copy is published under its name without replacing anything, the source is unlinked and both
///   folders are `fsync`ed. A kill at any instant leaves the source, or the source and a complete
///   copy (or a temporary the next run in that folder sweeps away).
///
/// A name already taken at the destination is never overwritten: the move is refused with
/// `FileMoveError.destinationExists` and nothing changes (callers choose free names first).
///
/// ```swift
/// let move = try FileMover.move("/data/default.store-wal", to: "/backups/default.store.raw/default.store-wal")
/// print(move.wasCopied)  // true when /backups is another file system
/// ```
public enum FileMover {
    /// What a move did.
    public struct Move: Sendable, Equatable {
        public var source: String
        public var destination: String
        /// The destination is on another file system: the bytes were copied and checked, then the
        /// source unlinked.
        public var wasCopied: Bool
    }

    /// Moves `source` to `destination` (a full path, not a folder), never replacing a file there.
    ///
    /// - Throws: `FileMoveError` (errno values kept as numbers); `SafeFileOutputError` when the
    ///   copy across file systems cannot be written (disk full, file-size limit). When it throws,
    ///   the source is still at its path (`sourceNotRemoved`: and a complete copy at the destination).
    @discardableResult
    public static func move(_ source: String, to destination: String) throws -> Move {
        try move(source, to: destination, sameFileSystemMove: linkOrRename)
    }

    /// `move`, with the same-file-system step replaceable (tests make it fail with `EXDEV`):
    /// `sameFileSystemMove` gives the source's bytes the destination's name without replacing
    /// anything (the source's name may remain: it is unlinked here), and returns 0 or errno.
    static func move(_ source: String, to destination: String,
                     sameFileSystemMove: (_ source: String, _ destination: String) -> Int32) throws -> Move {
        var info = stat()
        guard lstat(source, &info) == 0 else { throw FileMoveError.moveFailed(source: source, destination: destination, code: errno) }
        let folders = try reserveFolders(of: source, destination)
        let code = sameFileSystemMove(source, destination)
        switch code {
        case 0:
            var left = stat(), moved = stat()
            if lstat(source, &left) == 0, lstat(destination, &moved) == 0, left.st_dev == moved.st_dev, left.st_ino == moved.st_ino {
                // Two names for the same bytes until this unlink; neither is ever lost.
                guard unlink(source) == 0 else { throw FileMoveError.sourceNotRemoved(source: source, copy: destination, code: errno) }
            }
            folders.forEach { $0.sync() }
            return Move(source: source, destination: destination, wasCopied: false)
        case EEXIST:
            throw FileMoveError.destinationExists(path: destination)
        case EXDEV:
            try copyAcrossFileSystems(source, to: destination, info: info)
            folders.forEach { $0.sync() }
            return Move(source: source, destination: destination, wasCopied: true)
        default:
            throw FileMoveError.moveFailed(source: source, destination: destination, code: code)
        }
    }

    /// `link` (atomic: never replaces), or where hard links are not supported a checked `rename`.
    static func linkOrRename(_ source: String, _ destination: String) -> Int32 {
        if link(source, destination) == 0 { return 0 }
        let code = errno
        guard code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == EMLINK else { return code }
        var existing = stat()
        if lstat(destination, &existing) == 0 { return EEXIST }
        return rename(source, destination) == 0 ? 0 : errno
    }

    // MARK: - Across file systems

    private static func copyAcrossFileSystems(_ source: String, to destination: String, info: stat) throws {
        guard info.st_mode & S_IFMT == S_IFREG else { throw FileMoveError.notARegularFile(path: source) }
        var existing = stat()
        if lstat(destination, &existing) == 0 { throw FileMoveError.destinationExists(path: destination) }
        let output = try SafeFileOutput(destinationPath: destination, permissions: info.st_mode & 0o777)
        defer { output.discard() }
        try readAll(source) { try output.write($0) }
        // The copy read back, and the source read again: a source that changed while it was
        // copied (or a short read) is caught before anything is published or unlinked.
        let copied = try digest(output.temporaryPath, reportedAs: destination)
        let original = try digest(source, reportedAs: source)
        guard copied == original else { throw FileMoveError.copyMismatch(source: source, destination: destination) }
        do {
            try output.publish()
        } catch SafeFileOutputError.destinationExists, SafeFileOutputError.destinationIsSymbolicLink {
            throw FileMoveError.destinationExists(path: destination)
        }
        guard unlink(source) == 0 else {
            throw FileMoveError.sourceNotRemoved(source: source, copy: destination, code: errno)
        }
    }

    /// Size and SHA-256 of a file's bytes.
    struct Digest: Equatable {
        var size: Int64
        var sha256: SHA256.Digest
    }

    static func digest(_ path: String, reportedAs name: String) throws -> Digest {
        var hasher = SHA256()
        var size: Int64 = 0
        try readAll(path, reportedAs: name) { bytes in
            hasher.update(bufferPointer: bytes)
            size += Int64(bytes.count)
        }
        return Digest(size: size, sha256: hasher.finalize())
    }

    /// Hands every byte of the file at `path` to `body`, 1 MiB at a time.
    private static func readAll(_ path: String, reportedAs name: String? = nil,
                                _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileMoveError.unreadable(path: name ?? path, code: errno) }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw FileMoveError.unreadable(path: name ?? path, code: errno)
            }
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
        }
    }

    /// The destination's and the source's folders, opened before either name changes
    /// (`FolderSync`): a move is durable only once both are synced, so no descriptor left to
    /// open them refuses the move with nothing moved (`unreadable`, exit 74, "no file
    /// descriptor left"), never a move whose new name a crash can lose.
    private static func reserveFolders(of source: String, _ destination: String) throws -> [FolderSync] {
        var folders: [FolderSync] = []
        for folder in [SafeFileOutput.folder(of: destination), SafeFileOutput.folder(of: source)] {
            do {
                folders.append(try FolderSync(folder))
            } catch {
                throw FileMoveError.unreadable(path: folder, code: error.code)
            }
        }
        return folders
    }
}
