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

    /// Loads the catalog at `catalogPath` (anything `Catalog.load` reads), then runs as
    /// `upgrade(store:catalog:…)` does. Never throws: a catalog that cannot be loaded ends the run
    /// before its first phase — `status` `failed`, no phase, the catalog's own error (66 missing,
    /// 65 invalid) — the same report shape as every other failure; the store is not touched.
    public static func upgrade(
        store path: String, catalogAt catalogPath: String, options: UpgradeOptions = UpgradeOptions(),
        progress: ((UpgradeProgress) -> Void)? = nil, cancellation: CancellationFlag? = nil
    ) -> UpgradeReport {
        let started = Date()
        let catalog: Catalog
        do {
            catalog = try Catalog.load(path: catalogPath)
        } catch {
            var report = UpgradeReport(
                command: options.isAdoptOnly ? "adopt" : "upgrade", store: BackupRunner.absolutePath(path), catalog: catalogPath,
                dryRun: options.isDryRun)
            report.error = ErrorSummary(StoreMigrator.operatorFacing(error, store: path))
            report.seconds = Date().timeIntervalSince(started)
            return report
        }
        return upgrade(store: path, catalog: catalog, options: options, progress: progress, cancellation: cancellation)
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
        report = UpgradeReport(
            command: options.isAdoptOnly ? "adopt" : "upgrade", store: storePath, catalog: catalog.sourcePath, dryRun: options.isDryRun)
    }

    var isAdoptOnly: Bool { options.isAdoptOnly }

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
            if let reason = notAStore(first) {
                report.notes.append("not replaced by a clean store: \(reason), so nothing in it is a store's; --on-failure clean replaces only a store (check the path; if it is the store and nothing of it is left, move it away yourself and the app makes a new one)")
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
            backupOptions.destinationOption = .upgradeBackupDirectory
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
        // `keepBackups`: what the pruning removed, and what it could not weigh (`backup --keep`
        // reports both; an upgrade dropped them, a review).
        for removed in backup.prunedBackups { report.notes.append("removed an older backup of the store (keep \(options.keepBackups ?? 0)): \(removed)") }
        report.notes += backup.retentionNotes
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
        let replaced: StoreReplacement.Result
        do {
            replaced = try publish(written.path, identity: writtenIdentity, snapshot: snapshot, as: result)
        } catch {
            // The phase that failed is said, as every other phase's failure is (review rv8 #6:
            // the phases stopped at `verify: done`, the replacement's failure only in `error`).
            report.addPhase(.publish, "failed", since: publishStarted, StoreMigrator.operatorFacing(error, store: storePath).description)
            throw error
        }
        // From here the store is the new one: the status says so whatever follows (`failed`
        // says the store is the original; a review's run said it of a store it had replaced).
        switch decision {
        case .adopt: report.status = .adoptedOnly
        default: report.status = .upgraded
        }
        report.published = UpgradeReport.Published(
            path: storePath, version: written.version, matchOutcome: "", rowsByEntity: written.rowsByEntity,
            settledSidecars: replaced.settledSidecars, removedSpentJournal: replaced.removedSpentJournal)
        let after: MatchResult
        do {
            try faultInjection?(.published)
            after = StoreMatcher.match(storePath: storePath, catalog: catalog)
        } catch {
            checkAfterPublishFailed(StoreMigrator.operatorFacing(error, store: storePath).description, version: written.version, since: publishStarted)
            return
        }
        report.published?.matchOutcome = after.outcome.rawValue
        guard MigrationVerifier.isAtTarget(after, target: written.version) else {
            checkAfterPublishFailed("match now says \(after.outcome.rawValue) \(after.version ?? "")".trimmingCharacters(in: .whitespaces)
                + ", not \(written.version)", version: written.version, since: publishStarted)
            return
        }
        report.addPhase(.publish, "done", since: publishStarted, "\(storePath) replaced atomically; match: \(matchSaid(after.outcome, written.version))")
    }

    /// The store was replaced, then the check of what is at its path failed: the status stays
    /// the one of what was published (the store is the new one), the publish phase is done, and
    /// the error (exit 70) says what is in place, where the original is, and what to do.
    private func checkAfterPublishFailed(_ detail: String, version: String, since start: Date) {
        let error = UpgradeError.publishedNotAtTarget(path: storePath, version: version, backup: report.backup?.path ?? backupFolder, detail: detail)
        report.addPhase(.publish, "done", since: start, "\(storePath) replaced atomically; then the check of the result failed: \(detail)")
        report.error = ErrorSummary(error)
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
        // Read, SQLite takes such a name; written in place, it needs a -journal beside it,
        // which does not fit: said so before anything, rather than "damaged" at the swap.
        if lstat(storePath, &info) == 0, let tooLong = CreationTarget.nameLeavingNoRoomForSidecars(storePath) {
            throw UpgradeError.storeNameTooLong(path: storePath, bytes: tooLong.bytes, limit: tooLong.limit)
        }
        backupFolder = BackupRunner.absolutePath(options.backupDirectory)
        if BackupRunner.isStoreFolder(backupFolder, of: storePath) { throw UpgradeError.backupFolderIsStoreFolder(path: backupFolder) }
        // A store this user may not write (a 0444 file, another user's, a read-only folder) is
        // refused before anything is written, the backup included: it is not damaged, and the
        // clean fallback is no answer to it. A review's run backed it up, migrated it, then
        // failed to settle it: -wal and -shm left beside it, exit 65, "try --on-failure clean".
        // A dry run writes nothing: it says what the run would meet.
        if let problem = StoreReplacement.permissionProblem(storePath: storePath) {
            let error = StoreReplacementError.notWritable(path: storePath, reason: problem)
            guard options.isDryRun else { throw error }
            report.notes.append("the run itself would be refused (exit 73): \(error.description)")
        }
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
}
