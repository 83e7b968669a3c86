import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension StoreReplacement {
    /// A damaged store's `-wal` folded into a copy of its main file, as SQLite's checkpoint would
    /// fold it, and that copy put at the store's path before any sidecar moves.
    ///
    /// Why: a damaged store is never settled by SQLite (it would fold its `-wal` into a file it
    /// then calls corrupt), so `moveSidecarsAside` moves the `-wal` into the caller's folder and
    /// then renames the new file over the main file. A `kill -9` between the two left the main
    /// file without the transactions only its `-wal` held: an app opening the store then saw an
    /// older state (a review's finding, stop 24). With the fold first, every instant shows the
    /// store's content as SQLite read it — the original main file with its `-wal`, the folded
    /// copy with or without that `-wal` (its committed frames are already in the copy, so SQLite
    /// replaying them changes nothing), or the new file.
    ///
    /// The fold follows SQLite's rules (file format §4, `WriteAheadLog`): only the frames of
    /// committed transactions whose salts and cumulative checksums hold, each page's latest; the
    /// copy is cut to the last commit's database size when the main file is longer (as a
    /// checkpoint truncates it), and pages the `-wal` adds past the main file's end extend it.
    /// Nothing is folded when SQLite would apply nothing: no `-wal`, an empty one, one whose header
    /// is invalid, one with no committed frame. Nor when the `-wal`'s page size differs from the
    /// page size of a valid main-file header: SQLite reports such a store corrupt at its first
    /// checkpoint, and no fold could say what it holds; its sidecars move as before.
    ///
    /// The copy is written to a temporary beside the store (`SafeFileOutput`: synced, removed on
    /// any failure), locked as SQLite would lock it before it is renamed over the main file —
    /// the original main file's lock does not follow the name, and an app must not open the
    /// copy before the new file replaces it — and kept locked until the replacement ends.
    struct Fold {
        /// The folded copy, at the store's path now, locked as SQLite would lock it.
        var store: LockedStore
        /// How many of the `-wal`'s pages went into it.
        var pages: Int
    }

    /// Folds the store's `-wal` into a copy of the main file read through `store` (the locked
    /// original) and renames the copy over the store; nil when nothing needs folding (see `Fold`).
    ///
    /// - Parameter beforeRename: given the copy's identity once it is written, synced and locked,
    ///   before it takes the store's name (the fallback records it in its journal, so a run
    ///   killed after the rename is told apart from one that never got there); when it throws,
    ///   the copy is removed and nothing has changed.
    /// - Throws: `StoreReplacementError.cannotRead` for the `-wal` or the main file,
    ///   `SafeFileOutputError` when the copy cannot be written (a full disk: nothing changed),
    ///   `renameFailed`.
    func foldWriteAheadLog(of store: LockedStore, beforeRename: ((FileIdentity) throws -> Void)?) throws -> Fold? {
        let walPath = storePath + "-wal"
        var walInfo = stat()
        guard lstat(walPath, &walInfo) == 0, walInfo.st_mode & S_IFMT == S_IFREG,
              walInfo.st_size > Int64(WriteAheadLog.headerSize) else { return nil }
        let wal = open(walPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard wal >= 0 else { throw StoreReplacementError.cannotRead(path: walPath, code: errno) }
        defer { close(wal) }
        guard let log = WriteAheadLog.read(descriptor: wal, size: Int64(walInfo.st_size)), log.committedFrames > 0,
              let committedPages = log.committedPageCount, committedPages > 0 else { return nil }
        var headerBytes = [UInt8](repeating: 0, count: SQLiteFileHeader.size)
        let headerCount = try headerBytes.withUnsafeMutableBytes { try store.read(into: $0, at: 0) }
        if let header = SQLiteFileHeader(bytes: Array(headerBytes.prefix(headerCount))), header.hasValidPageSize,
           header.pageSize != log.pageSize {
            return nil
        }

        var mainInfo = stat()
        guard lstat(storePath, &mainInfo) == 0 else { throw StoreReplacementError.cannotRead(path: storePath, code: errno) }
        let output = try SafeFileOutput(destinationPath: storePath, permissions: mainInfo.st_mode & 0o777)
        defer { output.discard() }
        output.setPermissions(mainInfo.st_mode & 0o1777)
        if geteuid() == 0 { output.setOwner(user: mainInfo.st_uid, group: mainInfo.st_gid) }

        // The main file up to the committed size, as it is under the lock.
        let pageSize = log.pageSize
        let mainSize = try store.size()
        let end = min(mainSize, Int64(committedPages) * Int64(pageSize))
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { chunk.deallocate() }
        var offset: Int64 = 0
        while offset < end {
            let wanted = Int(min(Int64(chunk.count), end - offset))
            let count = try store.read(into: UnsafeMutableRawBufferPointer(rebasing: chunk[0..<wanted]), at: offset)
            guard count == wanted else { throw StoreReplacementError.cannotRead(path: storePath, code: EIO) }
            try output.write(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            offset += Int64(count)
        }
        // Each page's latest committed frame, in page order.
        var page = [UInt8](repeating: 0, count: pageSize)
        let folded = log.frames.filter { $0.key <= committedPages }.sorted { $0.key < $1.key }
        for (number, frameOffset) in folded {
            guard FileReading.read(wal, into: &page, at: frameOffset) == pageSize else {
                throw StoreReplacementError.cannotRead(path: walPath, code: EIO)
            }
            try page.withUnsafeBytes { try output.write($0, at: Int64(number - 1) * Int64(pageSize)) }
        }

        var locked: LockedStore?
        try output.publish { temporary in
            let copy = try LockedStore(path: temporary, writable: true)
            guard copy.lockAsSQLiteWould(waitingAtMost: 0), let identity = FileIdentity(path: temporary), identity == output.identity else {
                copy.close()
                throw StoreReplacementError.newFileUnusable(path: temporary, reason: "is not the folded copy this process wrote: something replaced it meanwhile")
            }
            do {
                try beforeRename?(identity)
                guard rename(temporary, storePath) == 0 else { throw StoreReplacementError.renameFailed(path: storePath, code: errno) }
            } catch {
                copy.close()
                throw error
            }
            SafeFileOutput.syncFolder(SafeFileOutput.folder(of: storePath))
            locked = copy
        }
        guard let locked else { throw InternalError(detail: "the folded copy was published without its lock") }
        return Fold(store: locked, pages: folded.count)
    }
}
