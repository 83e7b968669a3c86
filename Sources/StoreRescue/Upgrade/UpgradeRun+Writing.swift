import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing the adopted or migrated store into the workspace, publishing it, and the fallback.
extension UpgradeRun {
    // MARK: - Writing

    struct WrittenStore {
        var path: String
        var version: String
        var rowsByEntity: [String: Int64]
        var checks: String
    }

    /// Writes the new store in the workspace; an error names the store, never a workspace file
    /// (removed when the run ends).
    func write(_ decision: Decision, _ reading: Reading) throws -> WrittenStore {
        guard let workspace else { throw InternalError(detail: "no workspace") }
        do {
            return try write(decision, reading, in: workspace)
        } catch let error as MigrationError {
            throw error.naming(storePath, insteadOfFilesIn: workspace.path)
        }
    }

    func write(_ decision: Decision, _ reading: Reading, in workspace: PrivateTemporaryDirectory) throws -> WrittenStore {
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
    func matchSaid(_ outcome: MatchResult.Outcome, _ version: String) -> String {
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
    func predictedMatch(_ version: String) -> String {
        let said = matchSaid(predictedOutcome(version), version)
        guard !MigrationVerifier.versions(sharingHashesOf: version, in: catalog).isEmpty else { return said }
        return said + ", or " + matchSaid(.ambiguous, version)
    }

    /// What match will say of a store written at `version`, as `StoreMatcher` decides it: `newer`
    /// for a version after the catalog's current one, else `exact`.
    func predictedOutcome(_ version: String) -> MatchResult.Outcome {
        guard let index = catalog.versions.firstIndex(where: { $0.name == version }),
              let current = catalog.latest.flatMap({ latest in catalog.versions.firstIndex { $0.name == latest.name } })
        else { return .exact }
        return index > current ? .newer : .exact
    }

    // MARK: - Publishing

    /// Replaces the store with `file` once the store, settled and locked, is still the snapshot:
    /// the run's final result (`result`), recorded once the replacement returns.
    func publish(_ file: String, identity: StoreReplacement.FileIdentity?, snapshot: RetainedSnapshot,
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

    func fallBack(backup: BackupResult?, reading: Result<Reading, any Error>, since start: Date) throws {
        guard let workspace else { throw InternalError(detail: "no workspace") }
        let fallback = CleanFallback(
            storePath: storePath, catalog: catalog, options: options, backupFolder: backupFolder, workspace: workspace,
            refusals: report.refusals, sourceVersion: try? reading.get().preparation.sourceVersion,
            targetVersion: (try? reading.get().preparation.plan?.targetVersion) ?? options.targetVersion ?? StagePlanner.cleanStoreTarget(catalog),
            storeUUID: (try? reading.get().readout.metadata?.uuid) ?? nil,
            progress: progress, cancellation: cancellation, faultInjection: faultInjection, workspaceIdentity: workspaceIdentity,
            undone: { [unowned self] line in self.report.notes.append("the fallback failed; what it had begun was dealt with at once: " + line) })
        let outcome: CleanFallback.Outcome
        do {
            outcome = try fallback.run(backup: backup)
        } catch {
            // Said as a failed phase, as a failed publish is (the store is the original).
            report.addPhase(.fallback, "failed", since: start, StoreMigrator.operatorFacing(error, store: storePath).description)
            throw error
        }
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
}
