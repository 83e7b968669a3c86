import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Upgrades a store in place — the store an app will open, at its path, sidecars and all — with
/// the two-phase bootstrap of seed 004 done outside the app, exactly, and nothing ever deleted
/// (`Docs/UPGRADE.md`):
///
/// 1. **read**: probe, inspect, match, plan (the store read as `migrate` reads it, never written);
///    already exactly at the target → nothing written; newer, ambiguous or unknown → refused;
/// 2. **backup**: a compressed backup into the backup folder (`pre-upgrade`), whose snapshot is
///    kept; everything after is made from that snapshot, and it is verified (gzip stream, both
///    SHA-256 sums, `integrity_check`) while the new store is written — no verified backup, no
///    replacement;
/// 3. **adopt** (phase 1): a store whose metadata does not name its version exactly is stamped
///    as that version (`AdoptionStamp`) — alone (`adopt`, or when the version is the target), or
///    as part of the migrated store;
/// 4. **migrate** (phase 2): the catalog's plan to the target, by `MigrationEngine` (one rebuild);
/// 5. **verify**: the new store passes `integrity_check`, the link checks and the planned row
///    counts, and `match` says it is exactly the target;
/// 6. **publish**: `StoreReplacement` settles the store, takes its exclusive lock, checks it still
///    is page for page the backed-up snapshot, and renames the new store over it.
///
/// A store that cannot be saved (damaged, of no known version, refused by the plan) is left as it
/// is (`.keep`), or (`.clean`) quarantined — moved, never deleted — and replaced by a clean store
/// of the target version holding every row that could be salvaged, with an incident report
/// (`CleanFallback`).
///
/// ```swift
/// let catalog = try Catalog.load(path: "Samples/Seed004/catalog.json")
/// let report = StoreUpgrader.upgrade(store: "/data/default.store", catalog: catalog,
///                                    options: UpgradeOptions(backupDirectory: "/backups"))
/// print(report.status, report.backup?.path ?? "", report.exitStatus)
/// ```
///
/// `kill -9` at any instant leaves the original store (with its WAL content) or the finished
/// upgrade at the path, never a mix; what a killed run leaves (a private workspace beside the
/// store, a snapshot folder in the backup folder) is removed by the next run and reported.
public enum StoreUpgrader {
    /// Runs the upgrade (or, with `options.mode == .adopt`, phase 1 alone). Never throws: the
    /// report's `status`, `error` and `exitStatus` say what happened.
    public static func upgrade(
        store path: String, catalog: Catalog, options: UpgradeOptions = UpgradeOptions(),
        progress: ((UpgradeProgress) -> Void)? = nil, cancellation: CancellationFlag? = nil
    ) -> UpgradeReport {
        upgrade(store: path, catalog: catalog, options: options, progress: progress, cancellation: cancellation, faultInjection: nil)
    }

    /// The points at which a test makes a run fail (or stop, as a kill would).
    enum Stage: CaseIterable {
        /// The backup is published and its snapshot kept.
        case backedUp
        /// The new store is written and verified in the workspace.
        case written
        /// Under the store's exclusive lock, after the snapshot comparison, before the rename.
        case beforeSwap
        /// The new store is at the path.
        case published
        /// Fallback: the quarantine folder is made and its journal says `preparing`; nothing
        /// salvaged, nothing moved.
        case fallbackPreparing
        /// Fallback: the clean store is ready and the incident written, nothing moved yet.
        case quarantineReady
        /// Fallback, a damaged store with committed `-wal` frames: they are folded into a copy
        /// of the main file now at the store's path; no sidecar has moved.
        case walFolded
        /// Fallback, a damaged store: its sidecars are in the quarantine, the clean store not yet
        /// renamed into place.
        case sidecarsQuarantined
        /// Fallback: the clean store is in place and the journal says `done`; the incident is
        /// not yet rewritten `complete`.
        case fallbackSwapped
    }

    static func upgrade(
        store path: String, catalog: Catalog, options: UpgradeOptions, progress: ((UpgradeProgress) -> Void)?,
        cancellation: CancellationFlag?, faultInjection: ((Stage) throws -> Void)?
    ) -> UpgradeReport {
        SafeFileOutput.ignoreFileSizeLimitSignal()
        let run = UpgradeRun(
            storePath: BackupRunner.absolutePath(path), catalog: catalog, options: options, progress: progress,
            cancellation: cancellation, faultInjection: faultInjection)
        return run.execute()
    }
}

/// One run of `StoreUpgrader`: its state and its phases, in order.
final class UpgradeRun {
    let storePath: String
    let catalog: Catalog
    let options: UpgradeOptions
    let progress: ((UpgradeProgress) -> Void)?
    let cancellation: CancellationFlag?
    let faultInjection: ((StoreUpgrader.Stage) throws -> Void)?
    let started = Date()
    var report: UpgradeReport
    var workspace: PrivateTemporaryDirectory?
    /// The workspace folder as made (device and inode): the store's folder may be the app
    /// user's, who could rename this folder away and put their own in its place, with a file of
    /// theirs under the written store's name (a review). Checked when the written file's
    /// identity is taken.
    var workspaceIdentity: StoreReplacement.FileIdentity?
    var backupFolder = ""

    /// What the read (or the re-read of the snapshot) decided.
    enum Decision {
        case alreadyCurrent(AdoptionStamp)
        case adopt(AdoptionStamp)
        case migrate(AdoptionStamp?)
        case cannotSave([MigrationRefusal])
    }

    /// A store read and prepared (the original, or the backup's snapshot).
    struct Reading {
        var store: OpenedStore
        var readout: StoreReadout
        var preparation: MigrationPreparation
    }

    init(storePath: String, catalog: Catalog, options: UpgradeOptions, progress: ((UpgradeProgress) -> Void)?,
         cancellation: CancellationFlag?, faultInjection: ((StoreUpgrader.Stage) throws -> Void)?) {
        self.storePath = storePath
        self.catalog = catalog
        self.options = options
        self.progress = progress
        self.cancellation = cancellation
        self.faultInjection = faultInjection
        let command: String
        if case .adopt = options.mode { command = "adopt" } else { command = "upgrade" }
        report = UpgradeReport(command: command, store: storePath, catalog: catalog.sourcePath, dryRun: options.isDryRun)
    }

    var isAdoptOnly: Bool {
        if case .adopt = options.mode { return true }
        return false
    }

    func execute() -> UpgradeReport {
        do {
            try run()
        } catch {
            report.status = .failed
            report.error = ErrorSummary(StoreMigrator.operatorFacing(error, store: storePath))
            if let index = report.phases.indices.last, report.phases[index].status == "running" {
                report.phases[index].status = "failed"
            }
        }
        workspace?.remove()
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    private func checkCancellation() throws {
        if cancellation?.isCancelled == true { throw MigrationError.interrupted(path: storePath) }
    }

    // MARK: - The run

    private func run() throws {
        try checkPaths()
        if !options.isDryRun {
            report.recovered += try FallbackIntent.finishInterrupted(store: storePath, backupFolder: backupFolder)
        }

        // 1. Read.
        let readStarted = Date()
        progress?(UpgradeProgress(phase: .read, fraction: nil))
        // The content is judged in `read`: a store that is not SQLite any more is a store to save.
        let probe = try InputProbe(path: storePath, followsSymlinks: false, checksContent: false)
        try waitUntilFree(probe.files)
        if !options.isDryRun {
            let folder = SafeFileOutput.folder(of: storePath)
            do {
                workspace = try PrivateTemporaryDirectory(parent: folder, prefix: ".upgrade")
                workspaceIdentity = workspace.flatMap { StoreReplacement.FileIdentity(path: $0.path) }
            } catch {
                throw StoreCreationError.folderUnusable(path: storePath, folder: folder, reason: "is not writable (\(StoreCreator.reason(error)))")
            }
        }
        let first = read(probe: probe)
        if case .failure(let error) = first, !Self.isDataFailure(error) {
            // Not the store's fault (a private copy past the file-size limit or a full disk, a
            // store that changed while copied, an unknown --to, an --as it is not): the run ends
            // with that error's own status. Calling it a store that cannot be saved would advise
            // quarantining a healthy store.
            report.addPhase(.read, "failed", since: readStarted, "\(error)")
            throw Self.readFailure(error, store: storePath)
        }
        var decision = decide(first)
        report.addPhase(.read, "done", since: readStarted, readDetail(first, decision))
        describe(first, decision)
        try checkCancellation()

        if case .alreadyCurrent = decision {
            report.status = .alreadyCurrent
            return
        }
        if case .cannotSave(let refusals) = decision {
            report.refusals = refusals
            if options.onFailure == .keep || isAdoptOnly || refuseForTheCatalog(refusals) {
                report.status = .refused
                return
            }
        }
        if options.isDryRun {
            predict(decision, first)
            return
        }

        // 2. Back up (kept snapshot), verified in the background from here on.
        let backupStarted = Date()
        progress?(UpgradeProgress(phase: .backup, fraction: 0))
        let backup: BackupResult
        do {
            var backupOptions = BackupOptions(
                destinationDirectory: backupFolder, compressionLevel: options.compressionLevel, keep: options.keepBackups,
                reason: "pre-upgrade", lockTimeout: options.lockTimeout)
            backupOptions.retainsSnapshot = true
            backupOptions.isFinalResult = false
            backup = try BackupRunner.run(
                store: storePath,
                options: backupOptions,
                progress: { [progress] step in progress?(UpgradeProgress(phase: .backup, fraction: step.fraction)) },
                cancellation: cancellation)
        } catch let error where BackupRestorer.isUnreadableAsAStore(error) {
            // Only a store SQLite cannot read at all gets here; it cannot be upgraded.
            report.refusals = [damagedRefusal(error)]
            if options.onFailure == .keep || isAdoptOnly {
                report.addPhase(.backup, "skipped", since: backupStarted, "the store cannot be read by SQLite: \(error)")
                report.status = .refused
                return
            }
            try fallBack(backup: nil, reading: first, since: backupStarted)
            return
        } catch {
            // The phase that failed is said (a full backup folder read as a failed read).
            report.addPhase(.backup, "failed", since: backupStarted, "\(StoreMigrator.operatorFacing(error, store: storePath).description)")
            throw error
        }
        guard let snapshot = backup.snapshot else { throw InternalError(detail: "the backup kept no snapshot") }
        report.backup = UpgradeReport.Backup(
            kind: "snapshot", path: backup.backupPath, manifest: backup.manifestPath, sha256: backup.manifest.backupSHA256,
            snapshotSHA256: backup.manifest.snapshotSHA256, size: backup.manifest.backupSize, snapshotSize: backup.manifest.snapshotSize,
            verified: false, integrityCheck: nil, seconds: backup.seconds)
        report.addPhase(.backup, "done", since: backupStarted, "\(backup.backupPath) (\(backup.manifest.backupSize) bytes, snapshot \(backup.manifest.snapshotSize) bytes); verifying while the new store is written")
        let full = options.fullIntegrityCheck
        let cancel = cancellation
        let verification = BackgroundTask { try BackupVerifier.verify(backup: backup, snapshot: snapshot, fullIntegrityCheck: full, cancellation: cancel) }
        try faultInjection?(.backedUp)
        try checkCancellation()

        // Everything from here is made from the snapshot: the bytes that were backed up.
        let second: Reading
        do {
            second = try readSnapshot(snapshot)
        } catch let error where Self.isDataFailure(error) {
            // The bytes backed up cannot be read as a store: damaged.
            report.refusals = [Self.failureRefusal(error, store: storePath)]
            if options.onFailure == .keep || isAdoptOnly {
                _ = try? verification.wait()
                report.status = .refused
                return
            }
            try requireVerifiedBackup(verification, backup: backup)
            try fallBack(backup: backup, reading: .failure(error), since: Date())
            return
        } catch {
            _ = try? verification.wait()
            throw error
        }
        decision = decide(.success(second))
        if case .cannotSave(let refusals) = decision {
            report.refusals = refusals
            if options.onFailure == .keep || isAdoptOnly || refuseForTheCatalog(refusals) {
                _ = try? verification.wait()
                report.status = .refused
                return
            }
            try requireVerifiedBackup(verification, backup: backup)
            try fallBack(backup: backup, reading: .success(second), since: Date())
            return
        }
        if case .alreadyCurrent = decision {
            _ = try? verification.wait()
            report.status = .alreadyCurrent
            report.notes.append("the store changed between the read and the backup, and the backup is already at the target")
            return
        }

        // 3–5. Adopt and/or migrate into the workspace, verified.
        var writtenIdentity: StoreReplacement.FileIdentity?
        let written: WrittenStore
        do {
            written = try write(decision, second)
            // Which file was written, taken at once: the one the replacement must put in place.
            writtenIdentity = StoreReplacement.FileIdentity(path: written.path)
            guard let workspace, let workspaceIdentity else { throw InternalError(detail: "no workspace") }
            try workspaceIdentity.requireStill(at: workspace.path, holding: written.path)
        } catch let error where Self.isCatalogFailure(error) {
            // The catalog's own steps or expressions failed on this store's data (a step SQLite
            // stops, a map value that does not fit): the catalog must change, not the store, so
            // no fallback whatever --on-failure says (a review's healthy store was quarantined).
            // Ends as a failure of the run (exit 3), as custom steps that leave required values
            // missing do (UPGRADE.md). Unless the store is damaged: SQLite's "malformed" met
            // while writing reaches here as a failed step too, and the backup's integrity_check
            // says which (a review's damaged overflow page got exit 3 and "correct the catalog").
            let verifyStarted = Date()
            if let checked = try? verification.wait(), !checked.isGood,
               try settleDamagedSnapshot(checked, backup: backup, reading: second, since: verifyStarted) {
                return
            }
            if options.onFailure == .clean {
                report.notes.append("not falling back to a clean store: the catalog's custom stage failed on this store's data; the catalog must change, not the store")
            }
            throw error
        } catch let error where Self.isDataFailure(error) && options.onFailure == .clean && !isAdoptOnly {
            report.refusals = [Self.failureRefusal(error, store: storePath)]
            try requireVerifiedBackup(verification, backup: backup)
            try fallBack(backup: backup, reading: .success(second), since: Date())
            return
        } catch let error as StoreAccessError where Self.isDataFailure(error) {
            // Damage only writing finds (--on-failure keep, or adopt): cannot be saved as it is.
            _ = try? verification.wait()
            report.refusals = [Self.failureRefusal(error, store: storePath)]
            report.status = .refused
            return
        } catch {
            // A result that fails its checks because the store itself is damaged (a page the
            // read never touched, found by the backup's integrity_check) is a store that cannot
            // be saved, not a bug.
            let verifyStarted = Date()
            if let checked = try? verification.wait(), !checked.isGood,
               try settleDamagedSnapshot(checked, backup: backup, reading: second, since: verifyStarted) {
                return
            }
            throw error
        }
        try faultInjection?(.written)

        let verifyStarted = Date()
        progress?(UpgradeProgress(phase: .verify, fraction: nil))
        let checked = try verification.wait()
        guard checked.isGood else {
            if try settleDamagedSnapshot(checked, backup: backup, reading: second, since: verifyStarted) { return }
            throw UpgradeError.backupNotVerified(backup: backup.backupPath, problems: checked.problems)
        }
        report.backup?.verified = true
        report.backup?.integrityCheck = checked.integrityCheck
        report.addPhase(.verify, "done", since: verifyStarted, "backup verified (\(options.fullIntegrityCheck ? "integrity_check" : "quick_check") ok, both SHA-256 match); new store: \(written.checks)")
        try checkCancellation()

        // 6. Publish.
        let publishStarted = Date()
        progress?(UpgradeProgress(phase: .publish, fraction: nil))
        let result: PublishedResult
        if case .adopt = decision {
            result = PublishedResult(path: storePath, description: "the adopted store (stamped as \(written.version))", exitStatus: .adoptedOnly)
        } else {
            result = PublishedResult(path: storePath, description: "the upgraded store (\(written.version))")
        }
        let replaced = try publish(written.path, identity: writtenIdentity, snapshot: snapshot, as: result)
        try faultInjection?(.published)
        let after = StoreMatcher.match(storePath: storePath, catalog: catalog)
        report.published = UpgradeReport.Published(
            path: storePath, version: written.version, matchOutcome: after.outcome.rawValue, rowsByEntity: written.rowsByEntity,
            settledSidecars: replaced.settledSidecars, removedSpentJournal: replaced.removedSpentJournal)
        guard MigrationVerifier.isAtTarget(after, target: written.version) else {
            throw UpgradeError.resultNotAtTarget(path: storePath, detail: "published, but match now says \(after.outcome.rawValue) \(after.version ?? "")")
        }
        report.addPhase(.publish, "done", since: publishStarted, "\(storePath) replaced atomically; match: \(matchSaid(after.outcome, written.version))")
        switch decision {
        case .adopt: report.status = .adoptedOnly
        default: report.status = .upgraded
        }
    }

    /// No verified backup, no write: before the clean fallback moves anything, the backup's
    /// gzip stream and both SHA-256 sums must hold (its snapshot's `integrity_check` may fail:
    /// the store is damaged), and the report says what the verification found. A review's
    /// fallback reported the backup "verified: no" and swapped the store without waiting.
    private func requireVerifiedBackup(_ verification: BackgroundTask<BackupVerification>, backup: BackupResult) throws {
        let started = Date()
        let checked = try verification.wait()
        report.backup?.verified = checked.isGood
        report.backup?.integrityCheck = checked.integrityCheck
        let problems = checked.problemsWithTheBytes
        guard problems.isEmpty else {
            report.addPhase(.verify, "failed", since: started, "the backup does not verify: " + problems.joined(separator: "; "))
            throw UpgradeError.backupNotVerified(backup: backup.backupPath, problems: problems)
        }
        report.addPhase(.verify, "done", since: started, "backup verified (gzip stream, both SHA-256 match); its snapshot: "
            + (checked.isGood ? "\(options.fullIntegrityCheck ? "integrity_check" : "quick_check") ok" : "fails its check (the store is damaged)"))
    }

    /// The backup's sums are right but its snapshot fails `integrity_check`: the store itself is
    /// damaged. Refused (`--on-failure keep`, `adopt`) or fallen back to a clean store; false
    /// when the backup itself is bad (its sums), which the caller reports as such.
    private func settleDamagedSnapshot(
        _ checked: BackupVerification, backup: BackupResult, reading: Reading, since start: Date
    ) throws -> Bool {
        report.backup?.verified = false
        report.backup?.integrityCheck = checked.integrityCheck
        guard checked.problemsWithTheBytes.isEmpty else { return false }
        let isFallingBack = options.onFailure == .clean && !isAdoptOnly
        report.refusals = [MigrationRefusal(
            code: .storeDamaged, hop: "", entity: nil, property: nil, rowCount: nil,
            message: "the store is damaged: \(checked.integrityCheck ?? "")",
            remedy: isFallingBack ? "the rows that can be read are salvaged into a clean store" : damagedStoreRemedy)]
        if isFallingBack {
            try fallBack(backup: backup, reading: .success(reading), since: Date())
        } else {
            report.addPhase(.verify, "failed", since: start, "the backed-up snapshot fails integrity_check: the store is damaged; nothing was replaced")
            report.status = .refused
        }
        return true
    }

    // MARK: - Checks before anything

    private func checkPaths() throws {
        var info = stat()
        if lstat(storePath, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
            throw UpgradeError.storeIsSymbolicLink(path: storePath)
        }
        backupFolder = BackupRunner.absolutePath(options.backupDirectory)
        let storeFolder = URL(fileURLWithPath: SafeFileOutput.folder(of: storePath)).resolvingSymlinksInPath().path
        let backups = URL(fileURLWithPath: backupFolder).resolvingSymlinksInPath().path
        if storeFolder == backups { throw UpgradeError.backupFolderIsStoreFolder(path: backupFolder) }
    }

    /// Waits (up to the timeout) until no other process has the store open.
    private func waitUntilFree(_ files: StoreFileSet) throws {
        let deadline = Date().addingTimeInterval(options.lockTimeout)
        var waited = false
        while StoreLocks.isInUse(files) {
            guard Date() < deadline else { throw UpgradeError.storeInUse(path: storePath, seconds: options.lockTimeout) }
            try checkCancellation()
            waited = true
            Thread.sleep(forTimeInterval: 0.1)
        }
        if waited { report.notes.append("waited for another process to close the store") }
    }

    // MARK: - Reading and deciding

    private func read(probe: InputProbe) -> Result<Reading, any Error> {
        Result {
            try probe.checkContent()
            // An app that writes the store while it is read in place: read again, from a copy.
            return try OpenedStore.readingConsistently(probe: probe, options: StoreOpenOptions(privateCopyParent: workspace?.path)) { store in
                let readout = StoreInspector.read(store: store)
                let preparation = try prepare(store: store, readout: readout)
                return Reading(store: store, readout: readout, preparation: preparation)
            }
        }
    }

    /// The engine's preparation. `adopt` without `--as` passes the version `match` found as the
    /// source: said as matched (or adopted), not "requested" (a review).
    private func prepare(store: OpenedStore, readout: StoreReadout) throws -> MigrationPreparation {
        // `adopt`'s options match the store, and so does the engine: one memo, so both
        // diagnoses assess once (`AssessmentMemo`). Adopt plans from the store's version to
        // itself, which asks the data nothing: the diagnoses need only what decides refusals.
        // Other modes match in the engine alone, which makes its own memo.
        let memo = AssessmentMemo(depth: .refusalsOnly)
        let migration = try migrationOptions(store: store, readout: readout, memo: memo)
        var preparation = try MigrationEngine.prepare(
            store: store, readout: readout, catalog: catalog, options: migration, memo: isAdoptOnly ? memo : nil)
        if case .adopt(nil) = options.mode, preparation.sourceChoice == .requested {
            preparation.sourceChoice = preparation.match.outcome == .exact ? .matched : .adopted
            preparation.notes.removeAll { $0.hasPrefix(MigrationEngine.sourceTakenFromPrefix) }
        }
        return preparation
    }

    private func readSnapshot(_ snapshot: RetainedSnapshot) throws -> Reading {
        let store = try OpenedStore(path: snapshot.path)
        let readout = StoreInspector.read(store: store)
        let preparation = try prepare(store: store, readout: readout)
        return Reading(store: store, readout: readout, preparation: preparation)
    }

    /// The migration engine's options: `adopt` plans from the store's version to itself.
    private func migrationOptions(store: OpenedStore, readout: StoreReadout, memo: AssessmentMemo) throws -> MigrationOptions {
        var migration = MigrationOptions(
            targetVersion: options.targetVersion, sourceVersion: options.sourceVersion, isDryRun: options.isDryRun,
            followsSymlinks: false, fullIntegrityCheck: options.fullIntegrityCheck)
        migration.handlers = options.handlers
        if case .adopt(let requested) = options.mode {
            migration.sourceVersionOption = "--as"
            let version: String?
            if let requested {
                let match = StoreMatcher.match(store: store, readout: readout, catalog: catalog, memo: memo)
                let fitting = match.versionsWithItsHashes
                // A name the catalog lacks is a usage error (exit 64, the engine's), not a contradiction.
                let isKnown = catalog.versions.contains { $0.name == requested }
                if isKnown, match.outcome == .exact, let found = match.version, found != requested {
                    throw UpgradeError.notThatVersion(path: storePath, requested: requested, detail: "its hashes are exactly \(found)'s")
                }
                // Not only `exact`: a store exactly at a version after the catalog's current one
                // (`newer`), or one whose hashes fit several versions (`ambiguous`), is stamped
                // only as a version its hashes fit. A store newer than every version (no hashes
                // fit) is refused by the engine (`storeNewer`), never restamped.
                if isKnown, match.outcome != .exact, !fitting.isEmpty, !fitting.contains(requested) {
                    throw UpgradeError.notThatVersion(
                        path: storePath, requested: requested,
                        detail: "its hashes are exactly \(fitting.joined(separator: " and "))'s\(match.outcome == .newer ? " (match says newer: a version after the catalog's current one)" : "")")
                }
                version = requested
            } else {
                let match = StoreMatcher.match(store: store, readout: readout, catalog: catalog, memo: memo)
                version = match.outcome == .exact ? match.version : match.diagnosis.adoptAs
            }
            migration.sourceVersion = version ?? options.sourceVersion
            migration.targetVersion = version ?? options.sourceVersion
        }
        return migration
    }

    private func decide(_ reading: Result<Reading, any Error>) -> Decision {
        switch reading {
        case .failure(let error):
            // `run` has ended the run on any other failure.
            return .cannotSave([Self.isDataFailure(error) ? Self.failureRefusal(error, store: storePath) : damagedRefusal(error)])
        case .success(let reading):
            let preparation = reading.preparation
            guard preparation.refusals.isEmpty, let source = preparation.sourceVersion, let plan = preparation.plan else {
                return .cannotSave(catalogsGaps(in: preparation.refusals, of: reading))
            }
            guard let version = catalog.versions.first(where: { $0.name == source }) else { return .cannotSave(preparation.refusals) }
            let stamp = AdoptionStamp(metadata: reading.readout.metadata, version: version)
            // A store newer than the target only by what hashes leave out, taken as the target
            // (MigrationEngine.prepare): Core Data opens it as it is; stamping it with the
            // target's identifiers would write an older version over a newer app's (and its
            // index still matches the later version: a review's run ended in exit 70). A store
            // exactly at the target, a version after the catalog's current one (`--to`), is
            // "newer" to match too, but it is that version: stamped if it needs to be.
            // One rule, the verifier's: unless match recognises the store as the source (exact,
            // or newer with its hashes exactly), a newer store is never stamped. 158c866 compared
            // the names only, and restamped a store newer than every version when its nearest
            // version was named (`--from`, `--as`); the engine now refuses that store first.
            let newerButCompatible = preparation.match.outcome == .newer && !MigrationVerifier.isAtTarget(preparation.match, target: source)
            if plan.isAtTarget, !stamp.isNeeded || newerButCompatible || tiedVersionStamped(reading, target: version) != nil {
                // Nothing would be written, so nothing else would read every page: a store at the
                // target with a damaged page is not "already current" (exit 2, fine) but a store
                // to save.
                if let damage = damage(of: reading.store) {
                    return .cannotSave([damagedRefusal(message: "the store is at \(version.name) but damaged: \(damage)")])
                }
                return .alreadyCurrent(stamp)
            }
            if plan.isAtTarget { return .adopt(stamp) }
            return .migrate(stamp)
        }
    }

    /// The other version of the same hashes whose metadata the store has exactly, when `upgrade`
    /// took an ambiguous store as `target`: Core Data opens it as the target as it is (the
    /// identifiers are the only difference, and it reads none of them), so it is not restamped.
    /// Restamping it made `--to V2b`, then `--to V2`, rewrite its identifiers from one version to
    /// the other and back (review rv6 L1). Not for `adopt`, which stamps the version asked for.
    private func tiedVersionStamped(_ reading: Reading, target: CatalogVersion) -> String? {
        let match = reading.preparation.match
        guard !isAdoptOnly, reading.preparation.sourceChoice == .matched, match.outcome == .ambiguous else { return nil }
        return match.versionsWithItsHashes.first { name in
            guard name != target.name, let tied = catalog.version(named: name) else { return false }
            return !AdoptionStamp(metadata: reading.readout.metadata, version: tied).isNeeded
        }
    }

    /// `refusals` with "not identified" told apart when it is the catalog's gap: the store is
    /// undamaged and names its version by its stored hashes, which no version of the catalog
    /// has (a review's healthy V2 store, against a catalog without V2, was quarantined for an
    /// empty store by `--on-failure clean`), or which several versions have and the plan could
    /// not choose between (`versionsShareHashes`: review rv6 R3's healthy store, V2 and V2b
    /// tied, was replaced by a clean V3 store). A store whose hashes were lost, or a damaged
    /// one, stays unidentified: a store to save.
    private func catalogsGaps(in refusals: [MigrationRefusal], of reading: Reading) -> [MigrationRefusal] {
        let match = reading.preparation.match
        guard refusals.contains(where: { $0.code == .storeNotIdentified }),
            reading.readout.metadata?.versionHashes?.isEmpty == false, damage(of: reading.store) == nil
        else { return refusals }
        return refusals.map { refusal in
            guard refusal.code == .storeNotIdentified else { return refusal }
            var gap = refusal
            if match.outcome == .ambiguous {
                // Taken as one of them, but its tables lack what that version lays out: not the tie.
                guard reading.preparation.sourceVersion == nil else { return refusal }
                let tied = match.versionsWithItsHashes
                let option = isAdoptOnly ? "--as" : "--from"
                gap.code = .versionsShareHashes
                gap.message += "; the store is undamaged, and the catalog's versions \(tied.joined(separator: ", ")) have the same hashes"
                gap.remedy = "give \(tied.joined(separator: " and ")) different models (a versionHashModifier on what differs) so that Core Data can tell them apart, "
                    + "or name the version the store is with \(option) VERSION (\(tied.map { "\(option) \($0)" }.joined(separator: " or ")))"
            } else {
                gap.code = .versionNotInCatalog
                gap.message += "; the store is undamaged and its metadata names its version by hashes the catalog has for no version"
                gap.remedy = "add the version that wrote it to the catalog (its model, or `storerescue catalog learn` from a copy of this store), then upgrade again"
            }
            return gap
        }
    }

    /// What `quick_check` says is wrong with the store, at most ten messages; nil when it says
    /// "ok". `quick_check`, not the `integrity_check` results get (`fullIntegrityCheck`): it
    /// reads every page, which is what finds a damaged one, and a store already current is the
    /// run a daily job makes most — on the 75 MB salvage bench store `integrity_check` took the
    /// run from 38 ms to 876 ms, `quick_check` to 124 ms.
    private func damage(of store: OpenedStore) -> String? {
        do {
            let messages = try store.connection.rows("PRAGMA quick_check(10)").compactMap { $0.first?.string }
            return messages == ["ok"] ? nil : "quick_check: " + messages.joined(separator: "; ")
        } catch {
            return "quick_check failed: \(error)"
        }
    }

    /// Whether `refusals` name a fault of the catalog (a custom stage naming what the models
    /// lack or an expression SQLite rejects, a model's default that is not of its attribute's
    /// type, a stage plan that does not hold): then the catalog must change, not the store, and
    /// the clean fallback would set a store that can be saved aside for an almost empty one (a
    /// review's healthy store was, for a Float default). Noted when it overrides
    /// `--on-failure clean`.
    private func refuseForTheCatalog(_ refusals: [MigrationRefusal]) -> Bool {
        // A newer store is not damaged: the catalog lacks its version (or is behind it), and the
        // fallback could carry none of its rows backwards (a review's store was replaced by an
        // empty one).
        guard refusals.contains(where: \.isCatalogsFault) else { return false }
        if options.onFailure == .clean {
            report.notes.append("not falling back to a clean store: the catalog must change, not the store (\(refusals.count == 1 ? "the refusal" : "a refusal") above names the catalog's fault)")
        }
        return true
    }

    private func readDetail(_ reading: Result<Reading, any Error>, _ decision: Decision) -> String {
        switch reading {
        case .failure(let error): return "the store cannot be read as a store: \(error)"
        case .success(let reading):
            let match = reading.preparation.match
            let source = reading.preparation.sourceVersion.map { "\($0) (\(reading.preparation.sourceChoice?.rawValue ?? ""))" } ?? "unknown"
            return "match: \(match.outcome.rawValue)\(match.version.map { " \($0)" } ?? ""); store version \(source)"
        }
    }

    /// Fills the report's source, target, adoption and migration from a reading.
    private func describe(_ reading: Result<Reading, any Error>, _ decision: Decision) {
        guard case .success(let reading) = reading else { return }
        let migration = MigrationReport(
            store: storePath, output: nil, catalog: catalog,
            options: MigrationOptions(targetVersion: options.targetVersion, sourceVersion: options.sourceVersion, isDryRun: true),
            preparation: reading.preparation)
        report.source = migration.source
        report.target = migration.target
        report.migration = isAdoptOnly ? nil : migration
        report.notes = reading.preparation.notes + reading.preparation.requiredValuesAlreadyMissing.map { $0.summary + "; carried as they are" }
        if case .alreadyCurrent(let stamp) = decision, stamp.isNeeded, let catalogVersion = catalog.version(named: stamp.version),
           let stamped = tiedVersionStamped(reading, target: catalogVersion) {
            report.notes.append("the store's metadata names \(stamped) exactly, which has the same hashes as \(stamp.version): Core Data opens it as \(stamp.version) as it is, so it is not restamped")
        }
        switch decision {
        // Nothing is stamped when the store is already current, even where its identifying
        // keys differ from the target's (a tied version's, or a newer app's store the target
        // opens as it is; the notes say why): `needed` false, no changes (a review: JSON said
        // `needed: true` beside `alreadyCurrent`).
        case .alreadyCurrent(let stamp): report.adoption = stamp.leftAsItIs
        case .adopt(let stamp): report.adoption = stamp
        case .migrate(let stamp): report.adoption = stamp
        case .cannotSave: break
        }
    }

    /// A dry run's phases: what would happen, nothing done.
    private func predict(_ decision: Decision, _ reading: Result<Reading, any Error>) {
        let now = Date()
        let size = (try? FileManager.default.attributesOfItem(atPath: storePath)[.size] as? Int64) ?? 0
        report.addPhase(.backup, "predicted", since: now, "a pre-upgrade backup of about \(size) bytes uncompressed into \(backupFolder)")
        switch decision {
        case .adopt(let stamp):
            report.addPhase(.adopt, "predicted", since: now, "stamp as \(stamp.version): " + stamp.changes.map(\.key).joined(separator: ", "))
            report.addPhase(.verify, "predicted", since: now, "integrity_check; match \(predictedMatch(stamp.version))")
            report.addPhase(.publish, "predicted", since: now, "replace \(storePath) atomically")
            report.status = .adoptedOnly
        case .migrate(let stamp):
            if let stamp, stamp.isNeeded {
                report.addPhase(.adopt, "predicted", since: now, "stamp as \(stamp.version) (in the migrated store): " + stamp.changes.map(\.key).joined(separator: ", "))
            } else {
                report.addPhase(.adopt, "skipped", since: now, "the metadata already names the version exactly")
            }
            let hops = report.migration?.hops.map { "\($0.from) → \($0.to) (\($0.kind))" }.joined(separator: ", ") ?? ""
            report.addPhase(.migrate, "predicted", since: now, hops)
            let target = report.target?.version ?? ""
            report.addPhase(.verify, "predicted", since: now, "integrity_check, links, row counts; match \(predictedMatch(target))")
            report.addPhase(.publish, "predicted", since: now, "replace \(storePath) atomically")
            report.status = .upgraded
        case .cannotSave:
            // No incident (`fallback` stays null): its counts come from a salvage, which writes.
            // The phase names the read-only way to see them (a review took the null for a bug).
            report.addPhase(.fallback, "predicted", since: now, "quarantine the store into \(backupFolder)/quarantine/, create a clean store at the target with every row that can be salvaged, and write an incident report; "
                + "to see which rows it would carry, run `storerescue salvage \(ShellQuote.quote(storePath)) --out NEW --catalog CATALOG` (it reads the store only)")
            report.status = .fellBackToClean
        case .alreadyCurrent:
            report.status = .alreadyCurrent
        }
    }

    // MARK: - Writing

    struct WrittenStore {
        var path: String
        var version: String
        var rowsByEntity: [String: Int64]
        var checks: String
    }

    /// Writes the new store in the workspace; an error names the store, never a workspace file
    /// (removed when the run ends).
    private func write(_ decision: Decision, _ reading: Reading) throws -> WrittenStore {
        guard let workspace else { throw InternalError(detail: "no workspace") }
        do {
            return try write(decision, reading, in: workspace)
        } catch let error as MigrationError {
            throw error.naming(storePath, insteadOfFilesIn: workspace.path)
        }
    }

    private func write(_ decision: Decision, _ reading: Reading, in workspace: PrivateTemporaryDirectory) throws -> WrittenStore {
        switch decision {
        case .adopt(let stamp):
            let adoptStarted = Date()
            progress?(UpgradeProgress(phase: .adopt, fraction: nil))
            let file = workspace.path("adopted.sqlite")
            do {
                try FileManager.default.copyItem(atPath: reading.store.probe.path, toPath: file)
            } catch {
                throw MigrationError.writeFailed(path: file, reason: StoreCreator.reason(error))
            }
            // SQLite opens a file whose header names a write version it does not know read
            // only ("attempt to write a readonly database"): such a store cannot be stamped.
            if let version = Self.headerWriteVersion(file), !(1...2).contains(version) {
                throw StoreAccessError.rejected(
                    path: storePath, kind: .damaged,
                    reason: "its header's write version (byte 18) is \(version), which SQLite does not write (1 rollback journal, 2 WAL), so it cannot be stamped in place")
            }
            try stamp.apply(to: file, reportedAs: storePath)
            try Self.finishFile(file, walMode: Self.isWALHeader(storePath))
            guard let version = catalog.versions.first(where: { $0.name == stamp.version }) else {
                throw InternalError(detail: "no version \(stamp.version)")
            }
            let includesHistory = reading.readout.schema?.table(named: "ACHANGE") != nil
            let layout = try StoreLayoutBuilder.layout(for: version.model, options: StoreLayoutOptions(includesPersistentHistory: includesHistory))
            let verification = try MigrationVerifier.verify(
                path: file, target: version, layout: layout, catalog: catalog, predictedRows: nil, fullCheck: options.fullIntegrityCheck,
                cancellation: cancellation)
            guard verification.integrityOK, verification.matchIsAtTarget else {
                throw UpgradeError.resultNotAtTarget(
                    path: file, detail: "\(verification.integrityCheck): \(verification.integrityOK ? "ok" : "failed"); match says \(verification.matchOutcome) \(verification.matchVersion ?? "")")
            }
            // The store's own data, as it was: Core Data opens it with these (adopt changes no row).
            for problem in verification.problems where !problem.hasPrefix(verification.integrityCheck) {
                report.notes.append("already in the store before adoption (unchanged): \(problem)")
            }
            report.addPhase(.adopt, "done", since: adoptStarted, "stamped as \(stamp.version): " + stamp.changes.map(\.key).joined(separator: ", "))
            try CreationTarget.synchronize(file, isFolder: false)
            return WrittenStore(
                path: file, version: stamp.version, rowsByEntity: verification.rowsByEntity,
                checks: "\(verification.integrityCheck) ok, match \(matchSaid(MatchResult.Outcome(rawValue: verification.matchOutcome) ?? .exact, stamp.version))")
        case .migrate(let stamp):
            if let stamp, stamp.isNeeded {
                report.addPhase(.adopt, "done", since: Date(), "stamped as \(stamp.version) within the migrated store (the store the app's first container would leave): " + stamp.changes.map(\.key).joined(separator: ", "))
            } else {
                report.addPhase(.adopt, "skipped", since: Date(), "the metadata already names \(reading.preparation.sourceVersion ?? "") exactly")
            }
            let migrateStarted = Date()
            progress?(UpgradeProgress(phase: .migrate, fraction: 0))
            let file = workspace.path("upgraded.sqlite")
            // `migrate` mode: the options ask `match` nothing (only `adopt`'s do).
            let migrationOptions = try self.migrationOptions(store: reading.store, readout: reading.readout, memo: AssessmentMemo(depth: .refusalsOnly))
            var migration = MigrationReport(store: storePath, output: file, catalog: catalog, options: migrationOptions, preparation: reading.preparation)
            migration.dryRun = false
            migration.output = storePath
            // Until it is written: a failure keeps the plan in the report, marked failed (the
            // upgrade's own `error` says why).
            migration.status = .failed
            report.migration = migration
            let written = try MigrationEngine.write(
                reading.preparation, store: reading.store, readout: reading.readout, catalog: catalog, to: file, workspace: workspace.path,
                options: migrationOptions,
                progress: { [progress] step in progress?(UpgradeProgress(phase: .migrate, fraction: step.fraction)) },
                cancellation: cancellation)
            migration.status = .migrated
            migration.result = MigrationReport.Result(path: storePath, written: written, seconds: Date().timeIntervalSince(migrateStarted))
            report.migration = migration
            for gap in written.verification.preexistingMissingValues { report.notes.append(gap.summary) }
            report.source = migration.source
            report.target = migration.target
            let target = reading.preparation.plan?.targetVersion ?? ""
            let hops = migration.hops.map { "\($0.from) → \($0.to)" }.joined(separator: ", ")
            report.addPhase(.migrate, "done", since: migrateStarted, "\(hops); \(written.verification.rowsByEntity.values.reduce(0, +)) rows")
            let match = StoreMatcher.match(storePath: file, catalog: catalog)
            guard MigrationVerifier.isAtTarget(match, target: target) else {
                throw UpgradeError.resultNotAtTarget(path: storePath, detail: "match says \(match.outcome.rawValue) \(match.version ?? "")")
            }
            try CreationTarget.synchronize(file, isFolder: false)
            return WrittenStore(
                path: file, version: target, rowsByEntity: written.verification.rowsByEntity,
                checks: "\(options.fullIntegrityCheck ? "integrity_check" : "quick_check") ok, links ok, rows as planned, match \(matchSaid(match.outcome, target))")
        case .alreadyCurrent, .cannotSave:
            throw InternalError(detail: "nothing to write")
        }
    }

    // MARK: - What match says of the result

    /// `exact V2`, or for a version after the catalog's current one (`--to`), which match calls
    /// newer: `newer V2 (its hashes exactly; the catalog's current version is V1)`.
    /// A store whose hashes other versions share too (match: `ambiguous`): `ambiguous V2 (its
    /// hashes exactly, which V2b has too: Core Data treats them as one model)`.
    private func matchSaid(_ outcome: MatchResult.Outcome, _ version: String) -> String {
        switch outcome {
        case .newer:
            return "newer \(version) (its hashes exactly; the catalog's current version is \(catalog.latest?.name ?? "another"))"
        case .ambiguous:
            let sharing = MigrationVerifier.versions(sharingHashesOf: version, in: catalog)
            return "ambiguous \(version) (its hashes exactly, which \(sharing.isEmpty ? "another version" : sharing.joined(separator: ", ")) \(sharing.count > 1 ? "have" : "has") too: "
                + "Core Data treats them as one model)"
        default:
            return "exact \(version)"
        }
    }

    /// What a dry run says match will say of a store written at `version`: with versions that
    /// share its hashes, match may call it ambiguous (unless the tables tell them apart).
    private func predictedMatch(_ version: String) -> String {
        let said = matchSaid(predictedOutcome(version), version)
        guard !MigrationVerifier.versions(sharingHashesOf: version, in: catalog).isEmpty else { return said }
        return said + ", or " + matchSaid(.ambiguous, version)
    }

    /// What match will say of a store written at `version`, as `StoreMatcher` decides it: `newer`
    /// for a version after the catalog's current one, else `exact`.
    private func predictedOutcome(_ version: String) -> MatchResult.Outcome {
        guard let index = catalog.versions.firstIndex(where: { $0.name == version }),
              let current = catalog.latest.flatMap({ latest in catalog.versions.firstIndex { $0.name == latest.name } })
        else { return .exact }
        return index > current ? .newer : .exact
    }

    // MARK: - Publishing

    /// Replaces the store with `file` once the store, settled and locked, is still the snapshot:
    /// the run's final result (`result`), recorded once the replacement returns.
    private func publish(_ file: String, identity: StoreReplacement.FileIdentity?, snapshot: RetainedSnapshot,
                         as result: PublishedResult) throws -> StoreReplacement.Result {
        var replacement = StoreReplacement(storePath: storePath, lockTimeout: options.lockTimeout, cancellation: cancellation)
        replacement.expectedNewFile = identity
        var trailing: Int64 = 0
        defer {
            if trailing > 0 {
                report.notes.append("the store file had \(trailing) bytes after its database's last page (no part of the database: SQLite ignores them); they were not carried over, and the backup holds the database itself")
            }
        }
        return try TemporaryItems.uninterruptible(publishing: result) {
            try replacement.replace(with: file, whileLocked: { [storePath, faultInjection] store in
                let size = try store.size()
                let difference = try SnapshotComparison.compare(
                    storeSize: size, readStore: { buffer, offset in try store.read(into: buffer, at: offset) },
                    snapshot: snapshot.path)
                if let difference {
                    throw UpgradeError.storeChangedSinceBackup(path: storePath, detail: difference.description)
                }
                let databaseSize = Int64(snapshot.pageSize) * Int64(snapshot.pageCount)
                if size > databaseSize { trailing = size - databaseSize }
                try faultInjection?(.beforeSwap)
            })
        }
    }

    // MARK: - Fallback

    private func fallBack(backup: BackupResult?, reading: Result<Reading, any Error>, since start: Date) throws {
        guard let workspace else { throw InternalError(detail: "no workspace") }
        let fallback = CleanFallback(
            storePath: storePath, catalog: catalog, options: options, backupFolder: backupFolder, workspace: workspace,
            refusals: report.refusals, sourceVersion: try? reading.get().preparation.sourceVersion,
            targetVersion: (try? reading.get().preparation.plan?.targetVersion) ?? options.targetVersion ?? StagePlanner.cleanStoreTarget(catalog),
            storeUUID: (try? reading.get().readout.metadata?.uuid) ?? nil,
            progress: progress, cancellation: cancellation, faultInjection: faultInjection, workspaceIdentity: workspaceIdentity,
            undone: { [unowned self] line in self.report.notes.append("the fallback failed; what it had begun was dealt with at once: " + line) })
        let outcome = try fallback.run(backup: backup)
        if report.backup == nil { report.backup = outcome.backup }
        report.fallback = outcome.incident
        report.status = .fellBackToClean
        if let failure = outcome.recordsFailure {
            // The store is the clean store: the run ends as a fallback (exit 5), the error saying
            // so and what failed — never `failed`, which says the store is the original.
            report.addPhase(.fallback, "done", since: start, outcome.summary + "; then its records could not be finished: " + failure.reason)
            report.error = ErrorSummary(failure)
        } else {
            report.addPhase(.fallback, "done", since: start, outcome.summary)
        }
    }

    // MARK: - Helpers

    /// Errors that mean the store's data cannot be carried as planned (the fallback's business),
    /// as opposed to the environment failing (disk full, interrupted, a lock).
    static func isDataFailure(_ error: any Error) -> Bool {
        if let error = error as? MigrationError {
            switch error {
            // Not `notACoreDataStore`: a healthy SQLite database with no Core Data tables is the
            // wrong file, not a store to save (a review's browser history was quarantined and
            // replaced by an empty store).
            case .valueDoesNotConvert, .constraintViolated, .refusedAfterSteps, .customStepFailed: return true
            default: return false
            }
        }
        if let error = error as? StoreAccessError { return [.empty, .notSQLite, .truncated, .damaged].contains(error.kind) }
        if let error = error as? SQLiteError { return error.isCorruption }
        if error is StoreModelError || error is ModelDecodingError { return true }
        return false
    }

    /// Failures of the catalog's custom code met while writing: a step SQLite stops, a value a
    /// custom expression computes that does not fit its attribute (the analysis checks every
    /// inferred conversion before anything is written, so one met while writing is a custom
    /// stage's).
    static func isCatalogFailure(_ error: any Error) -> Bool {
        switch error as? MigrationError {
        case .customStepFailed?, .valueDoesNotConvert?: return true
        default: return false
        }
    }

    static func failureRefusal(_ error: any Error, store: String) -> MigrationRefusal {
        let facing = StoreMigrator.operatorFacing(error, store: store)
        let code: MigrationRefusal.Code
        switch error as? MigrationError {
        case .constraintViolated?: code = .uniquenessViolated
        // The analysis's own refusal, made by the run after the custom steps it waited for.
        case .refusedAfterSteps(_, let refusal)?: code = refusal.code
        case .valueDoesNotConvert?: code = .invalidCustomStage
        // Not the catalog's fault (`refuseForTheCatalog`): the store's.
        case .notACoreDataStore?, nil: code = .storeDamaged
        case _?: code = .invalidCustomStage
        }
        return MigrationRefusal(
            code: code, hop: "", entity: nil, property: nil, rowCount: nil, message: facing.description,
            remedy: facing.recoverySuggestion ?? "")
    }

    func damagedRefusal(_ error: any Error) -> MigrationRefusal {
        damagedRefusal(message: StoreMigrator.operatorFacing(error, store: storePath).description)
    }

    /// A store that cannot be read whole, with what saves what can be read.
    func damagedRefusal(message: String) -> MigrationRefusal {
        MigrationRefusal(
            code: .storeDamaged, hop: "", entity: nil, property: nil, rowCount: nil, message: message, remedy: damagedStoreRemedy)
    }

    /// What saves a damaged store's readable rows, in options the command run has: `adopt` has
    /// no `--on-failure`, so it names `upgrade`'s.
    var damagedStoreRemedy: String {
        isAdoptOnly
            ? "run storerescue upgrade STORE --catalog CATALOG --on-failure clean to quarantine it and salvage what can be read into a clean store, or storerescue salvage STORE --out NEW"
            : "run with --on-failure clean to quarantine it and salvage what can be read into a clean store, or storerescue salvage STORE --out NEW"
    }

    /// A read that failed for a reason outside the store, as the run ends with it: the file
    /// system failing under SQLite (`isFileSystemFailure`: a full disk, the file-size limit) is
    /// an I/O error (74), not a bug; anything else keeps its own status.
    static func readFailure(_ error: any Error, store path: String) -> any Error {
        if let error = error as? SQLiteError, error.isFileSystemFailure {
            return MigrationError.readFailed(path: path, reason: "\(error.message) (code \(error.resultCode))")
        }
        return error
    }

    /// The header's file format write version (byte 18), nil when it cannot be read.
    static func headerWriteVersion(_ path: String) -> UInt8? {
        guard let bytes = try? BoundedFile.prefix(of: path, count: 20, followsSymlinks: false), bytes.count == 20 else { return nil }
        return bytes[18]
    }

    /// True when the file's header says WAL (bytes 18 and 19 are 2).
    static func isWALHeader(_ path: String) -> Bool {
        guard let bytes = try? BoundedFile.prefix(of: path, count: 20, followsSymlinks: false), bytes.count == 20 else { return true }
        return bytes[18] == 2 && bytes[19] == 2
    }

    /// Leaves `file` in the journal mode the store had (Core Data: WAL), checkpointed, closed,
    /// with no sidecar.
    static func finishFile(_ file: String, walMode: Bool) throws {
        do {
            let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .readWrite))
            let mode = try connection.setJournalMode(walMode ? "WAL" : "DELETE")
            guard mode == (walMode ? "wal" : "delete") else {
                throw MigrationError.writeFailed(path: file, reason: "SQLite would not set the journal mode")
            }
            if walMode { _ = try connection.rows("PRAGMA main.wal_checkpoint(TRUNCATE)") }
        } catch let error as SQLiteError {
            throw MigrationError.writeFailed(path: file, reason: error.message)
        }
        for suffix in StoreReplacement.sidecarSuffixes {
            var info = stat()
            if lstat(file + suffix, &info) == 0 { unlink(file + suffix) }  // our own workspace file's
        }
    }
}
