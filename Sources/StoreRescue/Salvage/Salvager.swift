import Foundation
import SRSQLite

/// Recovers every readable row of a damaged store — one SQLite itself refuses to read — page by
/// page, into a new store, and reports what it recovered and how.
///
/// The damaged store is read with plain `pread`s (never through SQLite, never written, nothing
/// created beside it); its `-wal` is laid over it where the frames' checksums hold. The new store
/// is built in a private folder beside `output` and linked into place only when finished and
/// checked — the same path `create` uses — so nothing partial ever appears at `output`, whatever
/// fails (disk full, file-size limit, an interruption). `output` must not exist, nor its `-wal`,
/// `-shm` or `-journal`; nothing is ever replaced.
///
/// ```swift
/// // A Core Data store of the version the damaged store was, ready for an upgrade:
/// let catalog = try Catalog.load(path: "Journal.xcdatamodeld")
/// let report = try Salvager.salvage(
///     store: "damaged/default.store", into: workspace + "/salvaged.store",
///     options: SalvageOptions(catalog: catalog))
/// for table in report.tables where table.rows.unreadable > 0 {
///     print(table.name, table.rows.recovered, "recovered,", table.rows.unreadable, "unreadable")
/// }
/// // Without a catalog: a plain SQLite database, as `sqlite3 .recover` writes.
/// try Salvager.salvage(store: "damaged.db", into: "recovered.db")
/// ```
///
/// - Parameters:
///   - store: the damaged store's main file.
///   - output: the new store's path (a path in the caller's private workspace, or the final one).
///   - options: `catalog` (+ `versionName`) for a Core Data store; none for a plain database.
///   - progress: called from the calling thread as pages are read.
///   - (the new store is the caller's final result: `PublishedResult`, "the salvaged store".)
///   - cancellation: polled between pages; a cancelled salvage throws `SalvageError.interrupted`
///     and leaves nothing behind.
/// - Throws: `StoreAccessError` when the store is missing, a directory, a symbolic link or
///   unreadable, or empty; `SalvageError` for an output in the way, a write failure, a version
///   that cannot be told, nothing to salvage or an interruption; `LayoutError` when the version's
///   model cannot be laid out.
public enum Salvager {
    @discardableResult
    public static func salvage(
        store: String, into output: String, options: SalvageOptions = SalvageOptions(),
        progress: ((SalvageProgress) -> Void)? = nil, cancellation: CancellationFlag? = nil
    ) throws -> SalvageReport {
        try salvage(
            store: store, into: output, options: options, progress: progress, cancellation: cancellation,
            result: PublishedResult(path: output, description: "the salvaged store"), faultInjection: nil)
    }

    /// Checks, without writing anything, that `output` is free for a salvage of `store`: not the
    /// store or one of its sidecars, nothing there (nor a `-wal`, `-shm`, `-journal` of it), not a
    /// symbolic link, its folder a folder. `salvage` checks again itself; callers use this to
    /// refuse before loading a catalog.
    ///
    /// - Throws: `SalvageError` naming what is in the way.
    public static func checkOutput(_ output: String, store: String) throws {
        _ = try outputTarget(output, store: store)
    }

    private static func outputTarget(_ output: String, store: String) throws -> CreationTarget {
        if isSameFile(output, asStoreOrSidecarOf: store) { throw SalvageError.outputIsInput(output: output, store: store) }
        do {
            return try CreationTarget(path: output)
        } catch let error as StoreCreationError {
            throw SalvageError(creation: error)
        }
    }

    /// The points at which a test can make a salvage fail, to see that nothing is left behind.
    /// `pagesWritten`: the last page salvage writes itself is in the new file, SQLite writes the
    /// rest (only when a table was copied page by page).
    enum Stage: CaseIterable {
        case workspaceCreated, pagesWritten, rowsWritten, beforePublishing, published
    }

    /// Why a salvage of `store` would find nothing at all (`SalvageError.nothingToSalvage`'s
    /// reason), or nil when it finds pages to read or cannot tell. Reads the store's header, its
    /// `-wal`'s and the first MiB of its pages (`PageSizeGuesser`); writes nothing.
    static func findsNothing(in store: String) -> String? {
        do {
            return try SalvageRun(store: store, output: store, options: SalvageOptions(), progress: nil, cancellation: nil).nothingToSalvage
        } catch let error as StoreAccessError where error.kind == .empty {
            // Nothing in the file and no `-wal` content: `PageSource` refuses it before any page.
            return "it is empty and has no -wal content"
        } catch {
            return nil
        }
    }

    /// `salvage`, with the test's `faultInjection` (and `flush`, the test's flusher of the new
    /// file); `result` is nil for a salvage made on the way (`upgrade --on-failure clean`'s), not
    /// the command's final result.
    static func salvage(
        store: String, into output: String, options: SalvageOptions, progress: ((SalvageProgress) -> Void)?,
        cancellation: CancellationFlag?, result: PublishedResult?,
        flush makeFlush: (String) -> BackgroundFlush = { BackgroundFlush(path: $0) }, faultInjection: ((Stage) throws -> Void)?
    ) throws -> SalvageReport {
        // Past the file-size limit a write must fail with EFBIG (and be cleaned up), not kill us.
        SafeFileOutput.ignoreFileSizeLimitSignal()
        let started = Date()
        let target = try outputTarget(output, store: store)
        let run = try SalvageRun(store: store, output: output, options: options, progress: progress, cancellation: cancellation)
        let workspace: PrivateTemporaryDirectory
        do {
            workspace = try target.makeWorkspace(prefix: ".salvage", longestFile: "salvaged.sqlite")
        } catch let error as StoreCreationError {
            throw SalvageError(creation: error)
        }
        defer { workspace.remove() }
        let file = workspace.path("salvaged.sqlite")
        // Declared after the folder's removal, so run before it: the flushing thread has ended
        // and its descriptor is closed before the folder goes.
        let flush = makeFlush(file)
        defer { flush.stop() }
        let summary: SalvageOutputSummary
        do {
            try faultInjection?(.workspaceCreated)
            run.pagesWritten = faultInjection.map { injection in { try injection(.pagesWritten) } }
            run.flush = flush
            summary = try run.run(into: file)
            try faultInjection?(.rowsWritten)
            try checkFinished(file: file, workspace: workspace.path, output: output, isCoreData: options.catalog != nil)
            // Every connection is closed: the flushes asked for end (their descriptor may close),
            // and one that failed fails the salvage, whatever the `fsync` below then says.
            do {
                try flush.finish()
            } catch let failure as BackgroundFlush.Failure {
                throw SalvageError.writing(file, code: failure.code)
            }
            try CreationTarget.synchronize(file, isFolder: false)
            try faultInjection?(.beforePublishing)
            // The fsync takes a while for a large store: a signal meanwhile still stops the run.
            if cancellation?.isCancelled == true { throw SalvageError.interrupted }
        } catch {
            throw failure(error, output: output, workspace: workspace.path)
        }
        do {
            try target.publishDurably(file, as: result, afterLinking: { try faultInjection?(.published) })
        } catch {
            throw failure(error, output: output, workspace: workspace.path)
        }
        return run.report(summary: summary, seconds: Date().timeIntervalSince(started))
    }

    /// The file left in the private folder is one finished store: no journal, WAL or shared
    /// memory file beside it; a Core Data store's header says WAL mode, 4096-byte pages and
    /// incremental auto-vacuum (as `create` checks).
    private static func checkFinished(file: String, workspace: String, output: String, isCoreData: Bool) throws {
        if isCoreData {
            try StoreSchemaWriter.checkFinished(file: file, workspace: workspace, reportedPath: output)
            return
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: workspace).filter { $0 != (file as NSString).lastPathComponent }
        guard leftovers.isEmpty else {
            throw SalvageError.verificationFailed(path: output, reason: "SQLite left \(leftovers.sorted().joined(separator: ", ")) behind")
        }
        let bytes = try InputProbe.readPrefix(path: file, followsSymlinks: false, count: SQLiteFileHeader.size)
        guard SQLiteFileHeader(bytes: bytes) != nil else {
            throw SalvageError.verificationFailed(path: output, reason: "the new file has no SQLite header")
        }
    }

    /// Any failure while writing, as an operator reads it: naming the output (and its folder,
    /// where the private folder is), not the private file.
    private static func failure(_ error: any Error, output: String, workspace: String) -> any Error {
        let folder = CreationTarget.folder(of: output)
        switch error {
        case let error as SalvageError:
            switch error {
            case .verificationFailed(_, let reason): return SalvageError.verificationFailed(path: output, reason: reason)
            case .writeFailed(_, let reason): return SalvageError.writeFailed(path: output, reason: reason)
            case .writeRefused(_, let reason): return SalvageError.writeRefused(path: output, reason: reason)
            case .writeDenied(_, _, let reason): return SalvageError.writeDenied(path: output, folder: folder, reason: reason)
            case .outOfMemory(_, let reason): return SalvageError.outOfMemory(path: output, reason: reason)
            case .tooManyOpenFiles(_, let reason): return SalvageError.tooManyOpenFiles(path: output, reason: reason)
            default: return error
            }
        case let error as StoreCreationError:
            switch error {
            case .verificationFailed(_, let reason): return SalvageError.verificationFailed(path: output, reason: reason)
            case .writeFailed(_, let reason): return SalvageError.writeFailed(path: output, reason: reason)
            case .writeDenied(_, _, let reason): return SalvageError.writeDenied(path: output, folder: folder, reason: reason)
            case .outOfMemory(_, let reason): return SalvageError.outOfMemory(path: output, reason: reason)
            case .tooManyOpenFiles(_, let reason): return SalvageError.tooManyOpenFiles(path: output, reason: reason)
            // The Core Data output's own private folder, inside the salvage's.
            case .folderUnusable(_, _, let reason): return SalvageError.writeDenied(path: output, folder: folder, reason: "a private folder there " + reason)
            default: return SalvageError(creation: error)
            }
        case is LayoutError, is StoreAccessError:
            return error
        case is SQLiteError:
            // Read as `WriteFailure` says (shared with `create`): only no room is "free disk
            // space"; a refused file is the folder's (73), SQLite refusing a statement a bug (70).
            let failure = WriteFailure(error, workspace: workspace)
            switch failure.kind {
            case .refused: return SalvageError.writeRefused(path: output, reason: failure.reason)
            case .noRoom: return SalvageError.writeFailed(path: output, reason: failure.reason)
            case .denied: return SalvageError.writeDenied(path: output, folder: folder, reason: failure.reason)
            case .outOfMemory: return SalvageError.outOfMemory(path: output, reason: failure.reason)
            case .tooManyOpenFiles: return SalvageError.tooManyOpenFiles(path: output, reason: failure.reason)
            }
        case let error as POSIXFailure:
            return failure(SalvageError.writing(output, code: error.code, reason: error.description), output: output, workspace: workspace)
        default:
            return SalvageError.writeFailed(path: output, reason: StoreCreator.reason(error))
        }
    }

    /// True when `output` names `store` or one of its sidecars (by the resolved folder and name).
    static func isSameFile(_ output: String, asStoreOrSidecarOf store: String) -> Bool {
        func canonical(_ path: String) -> String {
            let url = URL(fileURLWithPath: path)
            return url.deletingLastPathComponent().resolvingSymlinksInPath().path + "/" + url.lastPathComponent
        }
        let input = canonical(store)
        return ([""] + StoreFileSet.sidecarSuffixes).contains { canonical(output) == input + $0 }
    }
}
