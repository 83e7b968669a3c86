import Foundation

/// Migrates a store to a later version of its app's model, off-device, exactly as the app's own
/// Core Data / SwiftData migration would leave it, into a new file: the original is never
/// written (`Docs/MIGRATE.md`).
///
/// ```swift
/// let catalog = try Catalog.load(path: "Samples/Journal/catalog.json")
/// let report = StoreMigrator.migrate(store: "Journal.sqlite", catalog: catalog, to: "Journal-V4.sqlite")
/// print(report.status, report.result?.rowsByEntity ?? [:])
/// ```
///
/// The new store is built in a private folder beside the output and linked into place only when
/// complete and verified; whatever fails or is killed, nothing partial is left at the output.
public enum StoreMigrator {
    /// Plans, checks and (unless `options.isDryRun`) writes. Never throws: the report's `status`
    /// and `error` say what happened.
    ///
    /// - Parameters:
    ///   - output: the new store's path; it must not exist, nor its `-wal`, `-shm` or `-journal`.
    ///   - progress: called as phases advance (a progress bar).
    ///   - cancellation: polled between and inside statements; a cancelled run removes its files.
    public static func migrate(
        store path: String, catalog: Catalog, to output: String, options: MigrationOptions = MigrationOptions(),
        progress: ((MigrationProgress) -> Void)? = nil, cancellation: CancellationFlag? = nil
    ) -> MigrationReport {
        migrate(store: path, catalog: catalog, to: output, options: options, progress: progress, cancellation: cancellation, faultInjection: nil)
    }

    /// Loads the catalog at `catalogPath` (anything `Catalog.load` reads), then migrates as
    /// `migrate(store:catalog:to:…)` does. Never throws: a catalog that cannot be loaded ends the
    /// run as any failure before the plan does — `status` `failed`, nothing planned, the catalog's
    /// own error (66 missing, 65 invalid) — so a job reads one report shape whatever fails.
    ///
    /// ```swift
    /// let report = StoreMigrator.migrate(store: "Journal.sqlite", catalogAt: "catalog.json", to: "Journal-V4.sqlite")
    /// if report.status == .failed { print(report.error?.message ?? "") }
    /// ```
    public static func migrate(
        store path: String, catalogAt catalogPath: String, to output: String, options: MigrationOptions = MigrationOptions(),
        progress: ((MigrationProgress) -> Void)? = nil, cancellation: CancellationFlag? = nil
    ) -> MigrationReport {
        let catalog: Catalog
        do {
            catalog = try Catalog.load(path: catalogPath)
        } catch {
            return MigrationReport(
                store: path, output: options.isDryRun ? nil : output, catalog: catalogPath, dryRun: options.isDryRun,
                error: operatorFacing(error, store: path))
        }
        return migrate(store: path, catalog: catalog, to: output, options: options, progress: progress, cancellation: cancellation)
    }

    /// The points at which a test can make a migration fail, to see that nothing is left behind.
    enum Stage: CaseIterable {
        case prepared, written, beforePublishing, published
    }

    static func migrate(
        store path: String, catalog: Catalog, to output: String, options: MigrationOptions,
        progress: ((MigrationProgress) -> Void)?, cancellation: CancellationFlag?, faultInjection: ((Stage) throws -> Void)?
    ) -> MigrationReport {
        let started = Date()
        // Past the file-size limit a write must fail (EFBIG) and be reported, not kill the process
        // with its temporary files in place.
        SafeFileOutput.ignoreFileSizeLimitSignal()
        var openedStore: OpenedStore?
        // The plan, once made: a failure after it keeps it in the report (what was to be done).
        var planned: MigrationReport?
        do {
            let target = options.isDryRun ? nil : try CreationTarget(path: output)
            let workspace = try target.map { target in
                do {
                    return try PrivateTemporaryDirectory(parent: target.folder, prefix: ".migrate")
                } catch {
                    throw StoreCreationError.folderUnusable(path: output, folder: target.folder, reason: "is not writable (\(StoreCreator.reason(error)))")
                }
            }
            defer { workspace?.remove() }
            progress?(MigrationProgress(phase: .reading, completed: 0, total: 1))
            // An app that writes the store while it is read in place: read again, from a copy.
            let (store, readout, preparation) = try OpenedStore.readingConsistently(path: path, options: StoreOpenOptions(
                followsSymlinks: options.followsSymlinks, privateCopyParent: workspace?.path)
            ) { store in
                let readout = StoreInspector.read(store: store)
                progress?(MigrationProgress(phase: .analysing, completed: 0, total: 1))
                return (store, readout, try MigrationEngine.prepare(store: store, readout: readout, catalog: catalog, options: options))
            }
            openedStore = store
            var report = MigrationReport(store: path, output: options.isDryRun ? nil : output, catalog: catalog, options: options, preparation: preparation)
            guard report.status == .migrated, let target, let workspace else { return report }
            planned = report
            if cancellation?.isCancelled == true { throw MigrationError.interrupted(path: output) }
            try faultInjection?(.prepared)

            let file = workspace.path("migrated.sqlite")
            let written: MigrationEngine.Written
            do {
                written = try MigrationEngine.write(
                    preparation, store: store, readout: readout, catalog: catalog, to: file, workspace: workspace.path, options: options,
                    progress: progress, cancellation: cancellation)
            } catch let error as MigrationError {
                throw error.naming(output, insteadOfFilesIn: workspace.path)
            }
            if cancellation?.isCancelled == true { throw MigrationError.interrupted(path: output) }
            // Rows read in place while an app wrote to the original may mix two states; the write
            // attaches the original by its path again, which may name another file by now.
            if Self.sourceChanged(store) { throw MigrationError.storeChanged(path: path) }
            try faultInjection?(.written)
            do {
                // The file's fsync takes a while for a large store: a signal meanwhile still stops
                // the run before it publishes.
                try target.publishDurably(
                    file, as: PublishedResult(path: output, description: "the migrated store"),
                    beforeLinking: {
                        try faultInjection?(.beforePublishing)
                        if cancellation?.isCancelled == true { throw MigrationError.interrupted(path: output) }
                    },
                    afterLinking: { try faultInjection?(.published) })
            } catch let error as POSIXFailure {
                // The flush of the new file or its folder (`CreationTarget.synchronize`) read as
                // `WriteFailure` reads it for `create` and `salvage`: no file descriptor left to
                // open them is the limit's (exit 74, "raise the limit on open files"), not "free
                // disk space".
                if WriteFailure.kind(ofErrno: error.code) == .tooManyOpenFiles {
                    throw StoreCreationError.tooManyOpenFiles(path: output, reason: error.description)
                }
                throw MigrationError.writeFailed(path: output, reason: error.description)
            }
            report.result = MigrationReport.Result(path: output, written: written, seconds: Date().timeIntervalSince(started))
            report.notes += written.notes
            return report
        } catch {
            // A failure while an app wrote to the original read in place (its half-written
            // pages: "malformed") is the app's transaction, not damage.
            let changed = openedStore.map(Self.sourceChanged) == true && Self.mayComeFromWhatWasRead(error)
            let failure = changed ? MigrationError.storeChanged(path: path) : operatorFacing(error, store: path)
            guard var report = planned else {
                return MigrationReport(
                    store: path, output: options.isDryRun ? nil : output, catalog: catalog.sourcePath, dryRun: options.isDryRun, error: failure)
            }
            report.failed(failure)
            // A check the analysis left to the run, refused after the steps it waited for: a
            // refusal like the dry run's, listed as one (JSON `refusals[]`), as well as the error.
            if case MigrationError.refusedAfterSteps(_, let refusal)? = failure as? MigrationError { report.refusals.append(refusal) }
            return report
        }
    }

    /// The original read in place was written to, or replaced by a rename (the write phase
    /// attaches it by its path again), since it was opened.
    private static func sourceChanged(_ store: OpenedStore) -> Bool {
        store.writtenToSinceOpened || !store.pathStillNamesTheFileRead
    }

    /// False for the failures that are not about what was read from the store (the output's
    /// disk, a cancellation, an unknown version name).
    private static func mayComeFromWhatWasRead(_ error: any Error) -> Bool {
        switch error {
        case MigrationError.writeFailed, MigrationError.interrupted, MigrationError.unknownVersion: return false
        default: return true
        }
    }

    /// Any error as the operator should read it: SQLite failing on the store's pages is a
    /// damaged store (65), a lock another process holds is "try again" (75); anything else
    /// unforeseen is a bug (70), reported with its text.
    static func operatorFacing(_ error: any Error, store path: String) -> any OperatorFacingError {
        if let error = error as? any OperatorFacingError { return error }
        if let error = error as? SQLiteError {
            if error.isCorruption {
                return StoreAccessError.rejected(path: path, kind: .damaged, reason: "SQLite cannot read its pages: \(error.message) (code \(error.resultCode))")
            }
            if error.isBusy { return MigrationError.storeChanged(path: path) }
            if error.primaryResultCode == 9 { return MigrationError.interrupted(path: path) }
        }
        return InternalError(detail: "\(error)")
    }
}

/// Something no part of the tool foresaw: a bug, reported with what it said (exit 70).
public struct InternalError: OperatorFacingError, Equatable {
    public var detail: String

    public var description: String { "internal error: \(detail)" }
    public var recoverySuggestion: String? { "report a bug with the command line that failed" }
    public var exitStatus: ExitStatus { .internalError }
}

