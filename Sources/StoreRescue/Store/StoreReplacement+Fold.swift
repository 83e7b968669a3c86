import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension StoreReplacement {
    /// A damaged store's `-wal` folded into a copy of its main file, as SQLite's checkpoint would
    /// fold it (or its hot `-journal`, as SQLite's rollback would play it back), and that copy
    /// put at the store's path before any sidecar moves.
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
    /// A store in rollback mode left by a crash mid-transaction has a hot `-journal` instead: the
    /// main file holds part of a transaction, and the journal the pages it overwrote. Moved away
    /// first, it left the main file half-written; so, with no `-wal` to fold, the journal's
    /// original pages are laid over a copy cut to the original size (`RollbackJournal`, SQLite's
    /// playback rules). A journal SQLite would not play back (no magic, an empty main file, a
    /// super-journal named) is not folded.
    ///
    /// The copy is written to a temporary beside the store (`SafeFileOutput`: synced, removed on
    /// any failure), locked as SQLite would lock it before it is renamed over the main file —
    /// the original main file's lock does not follow the name, and an app must not open the
    /// copy before the new file replaces it — and kept locked until the replacement ends.
    struct Fold {
        /// The folded copy, at the store's path now, locked as SQLite would lock it.
        var store: LockedStore
        /// How many pages of the sidecar went into it.
        var pages: Int
        /// The sidecar folded: `NAME-wal`, `NAME-journal`, or both (`NAME-journal and NAME-wal`).
        var source: String
    }

    /// Where a fold's pages come from: the original content a hot `-journal` restores, or the
    /// `-wal`'s latest committed frames.
    struct Overlay {
        var source: String
        var descriptor: Int32
        var pageSize: Int
        /// The database's size in pages once folded: the last commit's, or the original size.
        var pageCount: UInt32
        /// Page number → offset of its content in the source, in page order.
        var pages: [(page: UInt32, offset: Int64)]
    }

    /// Folds the store's hot `-journal` and its `-wal` (either, or both in SQLite's order) into a
    /// copy of the main file read through `store` (the locked original) and renames the copy over
    /// the store; nil when nothing needs folding (see `Fold`).
    ///
    /// - Parameter beforeRename: given the copy's identity once it is written, synced and locked,
    ///   before it takes the store's name (the fallback records it in its journal, so a run
    ///   killed after the rename is told apart from one that never got there); when it throws,
    ///   the copy is removed and nothing has changed.
    /// - Throws: `StoreReplacementError.cannotRead` for a sidecar or the main file,
    ///   `SafeFileOutputError` when the copy cannot be written (a full disk: nothing changed),
    ///   `renameFailed`.
    func foldSidecar(of store: LockedStore, beforeRename: ((FileIdentity) throws -> Void)?) throws -> Fold? {
        var headerBytes = [UInt8](repeating: 0, count: SQLiteFileHeader.size)
        let headerCount = try headerBytes.withUnsafeMutableBytes { try store.read(into: $0, at: 0) }
        let header = SQLiteFileHeader(bytes: Array(headerBytes.prefix(headerCount)))
        let mainPageSize = header.flatMap { $0.hasValidPageSize ? $0.pageSize : nil }
        let mainSize = try store.size()
        // SQLite rolls a hot journal back before it opens the -wal (`sqlite3PagerSharedLock`):
        // both are folded, in that order (a review's store had both).
        var overlays: [Overlay] = []
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        for (suffix, reader) in [("-journal", Self.rollbackJournalOverlay), ("-wal", Self.writeAheadLogOverlay)] {
            let path = storePath + suffix
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { continue }
            let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { throw StoreReplacementError.cannotRead(path: path, code: errno) }
            descriptors.append(descriptor)
            if let overlay = reader(path, descriptor, Int64(info.st_size), mainPageSize, mainSize) { overlays.append(overlay) }
        }
        // Two page sizes in one fold: no fold can say what SQLite would read.
        guard let first = overlays.first, overlays.allSatisfy({ $0.pageSize == first.pageSize }) else { return nil }
        return try writeFold(of: store, overlays: overlays, beforeRename: beforeRename)
    }

    /// The `-wal`'s committed frames; nil when SQLite would apply none (an empty main file: SQLite
    /// deletes its `-wal` and reads an empty database — a review's was folded into 520 kB of
    /// pages SQLite called malformed), or when its page size differs from a valid main-file
    /// header's.
    static func writeAheadLogOverlay(path: String, descriptor: Int32, size: Int64, mainPageSize: Int?, mainSize: Int64) -> Overlay? {
        guard mainSize > 0, let log = WriteAheadLog.read(descriptor: descriptor, size: size), log.committedFrames > 0,
              let committedPages = log.committedPageCount, committedPages > 0,
              mainPageSize == nil || mainPageSize == log.pageSize
        else { return nil }
        let pages = log.frames.filter { $0.key <= committedPages }.sorted { $0.key < $1.key }.map { (page: $0.key, offset: $0.value) }
        return Overlay(source: path, descriptor: descriptor, pageSize: log.pageSize, pageCount: committedPages, pages: pages)
    }

    /// A hot `-journal`'s original pages (`RollbackJournal`); nil when SQLite would play nothing
    /// back: not hot, an empty main file (SQLite deletes the journal then), a super-journal
    /// named. Its page size is the journal's own, whatever the main file's header says: SQLite
    /// plays it back with that size (a review's 1024-byte journal under a 4096-byte header was
    /// rolled back byte for byte like the original).
    static func rollbackJournalOverlay(path: String, descriptor: Int32, size: Int64, mainPageSize: Int?, mainSize: Int64) -> Overlay? {
        guard mainSize > 0, let journal = RollbackJournal.read(descriptor: descriptor, size: size), !journal.namesSuperJournal
        else { return nil }
        let pages = journal.pages.sorted { $0.key < $1.key }.map { (page: $0.key, offset: $0.value) }
        return Overlay(source: path, descriptor: descriptor, pageSize: journal.pageSize, pageCount: journal.originalPageCount, pages: pages)
    }

    /// Writes the main file beside the store and, for each overlay in turn, cuts or extends it to
    /// the overlay's size and lays the overlay's pages over it; then locks it and renames it over
    /// the store.
    private func writeFold(of store: LockedStore, overlays: [Overlay], beforeRename: ((FileIdentity) throws -> Void)?) throws -> Fold {
        var mainInfo = stat()
        guard lstat(storePath, &mainInfo) == 0 else { throw StoreReplacementError.cannotRead(path: storePath, code: errno) }
        let output = try SafeFileOutput(destinationPath: storePath, permissions: mainInfo.st_mode & 0o777)
        defer { output.discard() }
        output.setPermissions(mainInfo.st_mode & 0o1777)
        if geteuid() == 0 { output.setOwner(user: mainInfo.st_uid, group: mainInfo.st_gid) }

        // The main file up to the first overlay's size, as it is under the lock.
        let pageSize = overlays[0].pageSize
        let end = min(try store.size(), Int64(overlays[0].pageCount) * Int64(pageSize))
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
        // Each overlay: the file cut or extended (zeros) to its size, as SQLite's rollback and
        // checkpoint leave it, then its pages, in page order.
        var page = [UInt8](repeating: 0, count: pageSize)
        for overlay in overlays {
            try output.truncate(to: Int64(overlay.pageCount) * Int64(pageSize))
            for (number, sourceOffset) in overlay.pages {
                guard FileReading.read(overlay.descriptor, into: &page, at: sourceOffset) == pageSize else {
                    throw StoreReplacementError.cannotRead(path: overlay.source, code: EIO)
                }
                try page.withUnsafeBytes { try output.write($0, at: Int64(number - 1) * Int64(pageSize)) }
            }
        }

        var locked: LockedStore?
        try output.publish { temporary in
            let copy = try LockedStore(path: temporary, writable: true)
            guard copy.lockAsSQLiteWould(waitingAtMost: 0), let identity = FileIdentity(path: temporary), identity == output.identity else {
                copy.close()
                throw StoreReplacementError.newFileUnusable(path: temporary, reason: "is not the folded copy this process wrote: something replaced it meanwhile")
            }
            let folder: FolderSync
            do {
                folder = try Self.reserveFolder(of: storePath)
                try beforeRename?(identity)
                guard rename(temporary, storePath) == 0 else { throw StoreReplacementError.renameFailed(path: storePath, code: errno) }
            } catch {
                copy.close()
                throw error
            }
            folder.sync()
            locked = copy
        }
        guard let locked else { throw InternalError(detail: "the folded copy was published without its lock") }
        return Fold(
            store: locked, pages: overlays.map(\.pages.count).reduce(0, +),
            source: overlays.map { ($0.source as NSString).lastPathComponent }.joined(separator: " and "))
    }
}
