import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `upgrade --on-failure clean`: the store cannot be saved, so it is quarantined — moved, never
/// deleted — and a clean store of the target version takes its place, holding every row that
/// could still be read and carried through the plan (`Docs/UPGRADE.md#the-clean-fallback`).
///
/// In order:
/// 1. a backup: the run's verified snapshot backup, or — for a store SQLite cannot read — a raw
///    copy of its files (`RawStoreCopy`), each copy's SHA-256 compared with its original's;
/// 2. a quarantine folder `BACKUPS/quarantine/<store name>.<UTC>[-n]/`;
/// 3. the **salvage database** there: every readable row of every table, as found (`Salvager`,
///    plain mode), whatever else happens;
/// 4. the clean store, in the run's private workspace: the store salvaged as the version it was
///    (`Salvager` with the catalog), then migrated through the plan to the target. An entity the
///    plan refuses (a 134110 on its rows, say) is left out — its rows stay in the salvage
///    database — and the plan is tried again without it (a few rounds at most). When nothing can
///    be carried (the version cannot be told, salvage finds nothing), the clean store is empty,
///    made by `StoreCreator` with the old store's UUID when it could be read;
/// 5. the incident report (`incident.json`, `incident.txt`, state `pending`) and the swap's
///    journal (`FallbackIntent`) are written into the quarantine;
/// 6. the swap, by `StoreReplacement`: under the store's lock its main file is linked (or, on
///    another file system, copied and checked: `LockedStore.preserve`) into the quarantine, its
///    sidecars are moved there when it is damaged (a store SQLite can read is settled first: its
///    WAL folded into the main file), and the clean store is renamed over it; the incident
///    becomes `complete`.
///
/// A run killed during the swap is finished or undone by the next run (`FallbackIntent`).
struct CleanFallback {
    let storePath: String
    let catalog: Catalog
    let options: UpgradeOptions
    let backupFolder: String
    let workspace: PrivateTemporaryDirectory
    let refusals: [MigrationRefusal]
    let sourceVersion: String?
    let targetVersion: String?
    let storeUUID: String?
    let progress: ((UpgradeProgress) -> Void)?
    let cancellation: CancellationFlag?
    let faultInjection: ((StoreUpgrader.Stage) throws -> Void)?
    /// The workspace folder as the run made it (`UpgradeRun.workspaceIdentity`): checked before
    /// the clean store's identity is taken, the file the replacement must put in place.
    var workspaceIdentity: StoreReplacement.FileIdentity? = nil
    /// Told what was dealt with when the fallback failed (the run's report notes it).
    var undone: ((String) -> Void)? = nil

    struct Outcome {
        var backup: UpgradeReport.Backup?
        var incident: IncidentReport
        var summary: String
        /// What failed after the swap, the clean store in place (`fallbackRecordsUnfinished`).
        var recordsFailure: UpgradeError? = nil
    }

    /// The most rounds of leaving a refused entity out before the clean store is made empty.
    static let maximumExclusionRounds = 8

    func run(backup: BackupResult?) throws -> Outcome {
        progress?(UpgradeProgress(phase: .fallback, fraction: nil))
        guard let target = targetVersion.flatMap({ name in catalog.versions.first { $0.name == name } }) ?? catalog.latest else {
            throw UpgradeError.resultNotAtTarget(path: storePath, detail: "the catalog has no version to create a clean store of")
        }
        let now = Date()
        var notes: [String] = []

        // 1. The backup.
        let backupEntry: UpgradeReport.Backup
        let backupPath: String
        if let backup {
            backupPath = backup.backupPath
            backupEntry = UpgradeReport.Backup(
                kind: "snapshot", path: backup.backupPath, manifest: backup.manifestPath, sha256: backup.manifest.backupSHA256,
                snapshotSHA256: backup.manifest.snapshotSHA256, size: backup.manifest.backupSize,
                snapshotSize: backup.manifest.snapshotSize, verified: true, integrityCheck: nil, seconds: backup.seconds)
        } else {
            let started = Date()
            let folder = try RawStoreCopy.makeFolder(for: storePath, in: backupFolder, chosenWith: .upgradeBackupDirectory, date: now)
            let size = try Self.copyRaw(store: storePath, into: folder)
            backupPath = folder
            backupEntry = UpgradeReport.Backup(
                kind: "raw", path: folder, manifest: nil, sha256: nil, snapshotSHA256: nil, size: size, snapshotSize: size,
                verified: true, integrityCheck: nil, seconds: Date().timeIntervalSince(started))
        }
        try checkCancellation()

        // 2. The quarantine folder, held by this run until it ends (`QuarantineLock`), and its
        // journal saying it is being prepared: a run killed from here leaves a folder the next
        // run recognises (until stop 25 a kill before the incident left a folder with nothing
        // to say what it was).
        let quarantine = try Self.makeQuarantine(in: backupFolder, store: storePath, date: now)
        let name = (storePath as NSString).lastPathComponent
        let held = QuarantineLock(folder: quarantine)
        defer { held?.release() }
        try FallbackIntent(
            store: storePath, quarantine: quarantine, cleanDevice: 0, cleanInode: 0, sidecarMoves: [],
            mainMove: FallbackIntent.Move(from: storePath, to: quarantine + "/" + name), state: "preparing",
            createdAt: BackupManifest.timestampFormatter().string(from: now)
        ).write(into: quarantine)
        do {
            try faultInjection?(.fallbackPreparing)

            // 3. The salvage database: every readable row, as found.
            // A store name too long to take the suffix is cut as backup names are (`BackupNaming`).
            var salvageDatabase: String? = quarantine + "/" + BackupNaming.nameStem(name) + ".salvaged.sqlite"
            var rowsUnreadable: Int64 = 0
            do {
                let plain = try Salvager.salvage(
                    store: storePath, into: salvageDatabase!, options: SalvageOptions(), progress: nil, cancellation: cancellation,
                    result: nil, faultInjection: nil)
                rowsUnreadable = Int64(plain.totals.unreadable + plain.lostAndFound.rowsUnreadable)
            } catch SalvageError.interrupted {
                throw MigrationError.interrupted(path: storePath)
            } catch {
                salvageDatabase = nil
                notes.append("no salvage database: \(StoreMigrator.operatorFacing(error, store: storePath).description)")
            }
            try checkCancellation()

            // 4. The clean store, in the workspace.
            let clean = try makeCleanStore(target: target, notes: &notes)
            try checkCancellation()

            // 5. The incident (pending) and the swap's journal.
            let uuid = Self.storeUUID(of: clean.path) ?? ""
            // The original's UUID as read, or (a store SQLite could not read) as the salvage read it.
            let originalUUID = storeUUID ?? clean.recoveredUUID
            var incident = IncidentReport(
                state: "pending", store: storePath, createdAt: BackupManifest.timestampFormatter().string(from: now), reasons: refusals,
                quarantine: quarantine, quarantinedFiles: [], backup: backupPath, backupKind: backupEntry.kind,
                cleanStore: IncidentReport.CleanStore(
                    path: storePath, version: target.name, uuid: uuid, uuidKept: originalUUID != nil && originalUUID?.uppercased() == uuid.uppercased(),
                    content: clean.carried ? "salvaged" : "empty"),
                salvageDatabase: salvageDatabase, rowsUnreadable: rowsUnreadable, entities: clean.entities,
                restoreCommand: Self.restoreCommand(backup: backupPath, kind: backupEntry.kind, store: storePath, quarantine: quarantine),
                restoreByHand: Self.restoreByHand(quarantine: quarantine, store: storePath),
                notes: notes)
            let sidecarsNow = StoreReplacement.sidecarSuffixes.map { storePath + $0 }.filter(StoreReplacement.exists)
            incident.quarantinedFiles = ([storePath] + sidecarsNow).map {
                IncidentReport.QuarantinedFile(originalPath: $0, path: quarantine + "/" + ($0 as NSString).lastPathComponent, size: Self.size($0))
            }
            try IncidentFiles.write(incident, into: quarantine)
            // The workspace is the one the run made (the store's folder may be the app user's, who
            // could rename it away and put their own): then the clean store in it is this run's.
            try workspaceIdentity?.requireStill(at: workspace.path, holding: clean.path)
            var cleanInfo = stat()
            guard lstat(clean.path, &cleanInfo) == 0 else { throw InternalError(detail: "the clean store vanished") }
            var intent = FallbackIntent(
                store: storePath, quarantine: quarantine, cleanDevice: UInt64(cleanInfo.st_dev), cleanInode: UInt64(cleanInfo.st_ino),
                sidecarMoves: sidecarsNow.map { FallbackIntent.Move(from: $0, to: quarantine + "/" + ($0 as NSString).lastPathComponent) },
                mainMove: FallbackIntent.Move(from: storePath, to: quarantine + "/" + name), state: "replacing",
                createdAt: BackupManifest.timestampFormatter().string(from: now))
            try intent.write(into: quarantine)
            try faultInjection?(.quarantineReady)
            try checkCancellation()

            // 6. The swap.
            var replacement = StoreReplacement(storePath: storePath, lockTimeout: options.lockTimeout, cancellation: cancellation)
            replacement.expectedNewFile = StoreReplacement.FileIdentity(device: UInt64(cleanInfo.st_dev), inode: UInt64(cleanInfo.st_ino))
            let mainKept = quarantine + "/" + name
            // A damaged store is never settled: SQLite would fold its -wal into the damaged file.
            let damage = refusals.first { $0.code == .storeDamaged }.map(\.message)
            let published = PublishedResult(
                path: storePath, description: "a clean \(target.name) store (the original is quarantined in \(quarantine))", exitStatus: .fellBackToClean,
                nextStep: "run the same command again: it finishes the fallback's records in \(quarantine) (intent.json, incident.json) without redoing it")
            let replacementFaults: (StoreReplacement.Step) throws -> Void = { [faultInjection] step in
                switch step {
                case .folded: try faultInjection?(.walFolded)
                case .sidecarsMoved: try faultInjection?(.sidecarsQuarantined)
                case .settled, .locked, .renamed: break
                }
            }
            let result = try TemporaryItems.uninterruptible(publishing: published) {
                try replacement.replace(
                    with: clean.path, knownDamage: damage, ifDamaged: .moveSidecarsAside(into: quarantine),
                    whileLocked: { [intent] locked in
                        try locked.preserve(at: mainKept)
                        // The main file as it is now, under the lock, before any sidecar moves: an
                        // undo puts sidecars back only beside it unchanged (`FallbackIntent`).
                        var recorded = intent
                        if let now = FallbackIntent.state(of: storePath) {
                            recorded.mainSize = now.size
                            recorded.mainModified = now.modified
                            try recorded.write(into: quarantine)
                        }
                    },
                    beforeFolding: { [intent] folded in
                        // The copy the -wal is folded into, recorded before it takes the store's name:
                        // a run killed after that finds it there and leaves it (`FallbackIntent`).
                        var recorded = intent
                        if let now = FallbackIntent.state(of: storePath) {
                            recorded.mainSize = now.size
                            recorded.mainModified = now.modified
                        }
                        recorded.foldedDevice = folded.device
                        recorded.foldedInode = folded.inode
                        try recorded.write(into: quarantine)
                    }, faultInjection: replacementFaults)
            }
            // From here the clean store is in place: a failure is the records', not the swap's,
            // and is never reported as if the store were the original (`fallbackRecordsUnfinished`).
            let carried = clean.entities.filter { $0.keptIn == "clean store" }.map(\.rowsInCleanStore).reduce(0, +)
            var outcome = Outcome(
                backup: backup == nil ? backupEntry : nil, incident: incident,
                summary: "quarantined into \(quarantine); clean \(target.name) store in place with \(carried) rows carried\(salvageDatabase.map { "; every readable row in \($0)" } ?? "")")
            do {
                intent.state = "done"
                try? intent.write(into: quarantine)
                try faultInjection?(.fallbackSwapped)
                incident.state = "complete"
                incident.quarantinedFiles = ([mainKept] + result.movedSidecars).map {
                    IncidentReport.QuarantinedFile(
                        originalPath: storePath + String(($0 as NSString).lastPathComponent.dropFirst(name.count)), path: $0, size: Self.size($0))
                }
                if let journal = result.removedSpentJournal {
                    incident.notes.append("the store's \((journal as NSString).lastPathComponent) was spent (empty or zeroed: TRUNCATE or PERSIST journal mode) and held nothing; it was removed, not quarantined")
                }
                if let folded = result.foldedSidecar {
                    incident.notes.append(folded.name.hasSuffix("-journal")
                        ? "the store held an unfinished transaction: the \(folded.pages) pages its -journal had kept were rolled back into a copy of the main file, put in the store's place before the sidecars moved, so that the store never stood half-written (the quarantine holds the main file and its sidecars as they were)"
                        : "the store's -wal held committed transactions: its \(folded.pages) pages were folded into a copy of the main file, put in the store's place before the sidecars moved, so that the store never stood without them (the quarantine holds the main file and its sidecars as they were)")
                }
                if result.settled && !result.settledSidecars.isEmpty {
                    incident.notes.append("SQLite folded the store's \(result.settledSidecars.map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")) into its main file before it was moved (the backup holds the files as they were)")
                }
                try IncidentFiles.write(incident, into: quarantine)
                outcome.incident = incident
            } catch let error where !(error is any StandsForAKill) {
                // The store is the clean store now, whatever failed: the run ends as a fallback
                // (exit 5), its error saying what failed. The incident is marked complete if it
                // can be (as the next run would); otherwise it stays pending for the next run.
                _ = try? FallbackIntent.finish(folder: quarantine, store: storePath)
                outcome.incident.state = IncidentFiles.state(in: quarantine) ?? outcome.incident.state
                outcome.recordsFailure = UpgradeError.fallbackRecordsUnfinished(
                    path: storePath, version: target.name, quarantine: quarantine,
                    reason: Self.whatFailed(error, store: storePath),
                    incidentState: outcome.incident.state)
            }
            return outcome
        } catch let error where !(error is any StandsForAKill) {
            // The fallback failed (a full disk while it salvaged or folded, a sidecar that would
            // not move, the store in use): what it began is dealt with now, as the next run deals
            // with a killed one's — a preparing folder marked abandoned, a half-made swap undone
            // — rather than left `preparing`, `replacing` or `pending` with the quarantine
            // holding a second name of the live main file until then (a review's EFBIG while
            // folding). This run holds the folder.
            if let line = try? FallbackIntent.finish(folder: quarantine, store: storePath) { undone?(line) }
            throw error
        }
    }

    private func checkCancellation() throws {
        if cancellation?.isCancelled == true { throw MigrationError.interrupted(path: storePath) }
    }

    /// A failure after the swap, in words that do not claim the store was not replaced (as
    /// `quarantineFailed`'s own description does).
    private static func whatFailed(_ error: any Error, store: String) -> String {
        if case .quarantineFailed(let path, let reason)? = error as? UpgradeError { return "cannot write \(path): \(reason)" }
        return StoreMigrator.operatorFacing(error, store: store).description
    }

    // MARK: - The clean store

    struct CleanStore {
        var path: String
        var carried: Bool
        var entities: [IncidentReport.EntityOutcome]
        /// The damaged store's UUID when only the salvage could read it (its `Z_METADATA` row).
        var recoveredUUID: String? = nil
    }

    /// The store salvaged as its version and migrated to the target (entities the plan refuses
    /// left out), or an empty store of the target.
    private func makeCleanStore(target: CatalogVersion, notes: inout [String]) throws -> CleanStore {
        let salvaged = workspace.path("salvaged.sqlite")
        var salvageReport: SalvageReport?
        do {
            salvageReport = try Salvager.salvage(
                store: storePath, into: salvaged, options: SalvageOptions(catalog: catalog, versionName: sourceVersion),
                progress: nil, cancellation: cancellation, result: nil, faultInjection: nil)
        } catch SalvageError.interrupted {
            throw MigrationError.interrupted(path: storePath)
        } catch {
            notes.append("the rows could not be salvaged as a Core Data store: \(StoreMigrator.operatorFacing(error, store: storePath).description)")
        }
        let rowsInStore = countRowsInStore()
        // What the entity counts do not show: links (join tables) on pages that could not be
        // read, and links dropped because an end was lost (a review's truncated store lost 52,000
        // of 60,000 links with every entity row "carried", and no word of it).
        for table in salvageReport?.tables ?? [] where table.disposition == "recovered" {
            let unreadable = table.pages.damaged + table.pages.missing
            let dropped = table.rows.danglingRowsDropped + table.rows.danglingCleared
            guard unreadable > 0 || dropped > 0 else { continue }
            var parts: [String] = []
            if unreadable > 0 { parts.append("\(unreadable) of its pages damaged or missing: the rows on them are lost") }
            if table.rows.danglingRowsDropped > 0 { parts.append("\(table.rows.danglingRowsDropped) links dropped (an end was lost)") }
            if table.rows.danglingCleared > 0 { parts.append("\(table.rows.danglingCleared) relationship values cleared (their object was lost)") }
            notes.append("\(table.name): \(table.rows.recovered) rows salvaged; " + parts.joined(separator: "; "))
        }
        if let salvageReport, let sourceName = salvageReport.version,
           let source = catalog.versions.first(where: { $0.name == sourceName }) {
            let salvagedRows = Self.rowsByEntity(salvageReport)
            if var carried = try carry(
                salvaged: salvaged, source: source, target: target, salvagedRows: salvagedRows, rowsInStore: rowsInStore, notes: &notes
            ) {
                if salvageReport.metadata?.source == "recovered" { carried.recoveredUUID = salvageReport.metadata?.uuid }
                return carried
            }
            notes.append("the salvaged rows could not be carried to \(target.name); the clean store is empty and every row is in the salvage database")
            return try emptyStore(target: target, entities: Self.outcomes(
                source: source, salvagedRows: salvagedRows, rowsInStore: rowsInStore, inClean: [:], excluded: [:], forward: { _ in nil },
                fallbackReason: "not carried: the plan could not run on the salvaged rows"))
        }
        return try emptyStore(target: target, entities: [])
    }

    /// Migrates the salvaged store to the target, leaving out the entities the plan refuses;
    /// nil when it cannot be done at all (why: in `notes`).
    private func carry(
        salvaged: String, source: CatalogVersion, target: CatalogVersion, salvagedRows: [String: Int64], rowsInStore: [String: Int64]?,
        notes: inout [String]
    ) throws -> CleanStore? {
        var excluded: [String: String] = [:]  // entity (source version's name) → why
        for round in 0...Self.maximumExclusionRounds {
            try checkCancellation()
            let store: OpenedStore
            let readout: StoreReadout
            let preparation: MigrationPreparation
            do {
                store = try OpenedStore(path: salvaged)
                readout = StoreInspector.read(store: store)
                preparation = try MigrationEngine.prepare(
                    store: store, readout: readout, catalog: catalog,
                    options: MigrationOptions(targetVersion: target.name, sourceVersion: source.name, followsSymlinks: false,
                                              fullIntegrityCheck: options.fullIntegrityCheck))
            } catch {
                notes.append("the salvaged store could not be planned: \(StoreMigrator.operatorFacing(error, store: salvaged).description)")
                return nil
            }
            let forward = { (name: String) in Self.forwardName(name, through: preparation.mappings) }
            if preparation.refusals.isEmpty, let plan = preparation.plan {
                let file = workspace.path("clean.sqlite")
                if plan.isAtTarget {
                    do {
                        try FileManager.default.moveItem(atPath: salvaged, toPath: file)
                    } catch {
                        throw MigrationError.writeFailed(path: file, reason: StoreCreator.reason(error))
                    }
                } else {
                    do {
                        var migration = MigrationOptions(targetVersion: target.name, sourceVersion: source.name, followsSymlinks: false,
                                                         fullIntegrityCheck: options.fullIntegrityCheck)
                        migration.handlers = options.handlers
                        // A folder of its own: the failed migration's versions on the way
                        // (version-0-V1.sqlite, …) are still in the workspace, and writing over
                        // them failed, so a review's clean store carried 0 of 4 rows.
                        let carrying = workspace.path("carrying-\(UUID().uuidString.prefix(8))")
                        do {
                            try FileManager.default.createDirectory(atPath: carrying, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                        } catch {
                            throw MigrationError.writeFailed(path: carrying, reason: StoreCreator.reason(error))
                        }
                        _ = try MigrationEngine.write(
                            preparation, store: store, readout: readout, catalog: catalog, to: file, workspace: carrying,
                            options: migration,
                            progress: { [progress] step in progress?(UpgradeProgress(phase: .fallback, fraction: step.fraction)) },
                            cancellation: cancellation,
                            // A required link the salvage lost must not pass as the store's own:
                            // its entity is left out below.
                            carriesPreexistingGaps: false)
                    } catch let error where UpgradeRun.isDataFailure(error) {
                        // The engine names the object, not an entity to leave out: nothing is carried.
                        notes.append("carrying the salvaged rows to \(target.name) stopped: \(StoreMigrator.operatorFacing(error, store: storePath).description)")
                        return nil
                    } catch MigrationError.verificationFailed(_, let problems) {
                        // Salvage clears the links whose destination was lost; an object whose
                        // required link is gone fails the final check. Leave its entity out (its
                        // rows stay in the salvage database) and carry the rest.
                        let named = Self.entitiesMissingRequiredValues(problems).filter { name in
                            excluded[name] == nil && source.model.entities.contains { $0.name == name }
                        }
                        guard !named.isEmpty, round < Self.maximumExclusionRounds else { return nil }
                        Self.removeStore(file)  // the engine leaves the file that failed its checks
                        var progressed = false
                        for entity in named where try leaveOut(entity, of: source, in: salvaged) {
                            excluded[entity] = "not carried: " + problems.filter { $0.contains(" \(entity) objects ") }.joined(separator: "; ")
                            progressed = true
                        }
                        if !progressed { return nil }
                        continue
                    }
                }
                try UpgradeRun.finishFile(file, walMode: true)
                let inClean = try verifiedCounts(file, target: target)
                try CreationTarget.synchronize(file, isFolder: false)
                let entities = Self.outcomes(
                    source: source, salvagedRows: salvagedRows, rowsInStore: rowsInStore, inClean: inClean, excluded: excluded,
                    forward: forward, fallbackReason: nil)
                return CleanStore(path: file, carried: true, entities: entities)
            }
            // Leave out one refused entity (named in its hop's destination: walked back to the
            // source version) and plan again.
            var progressed = false
            for refusal in preparation.refusals {
                guard let entity = refusal.entity,
                      let original = Self.backwardName(entity, hop: refusal.hop, through: preparation.mappings),
                      excluded[original] == nil
                else { continue }
                guard try leaveOut(original, of: source, in: salvaged) else { continue }
                excluded[original] = refusal.message
                progressed = true
            }
            if !progressed || round == Self.maximumExclusionRounds { return nil }
        }
        return nil
    }

    /// Deletes the rows of `entity` and its subentities from the salvaged store (they stay in the
    /// salvage database); false when the entity has no table there.
    private func leaveOut(_ entity: String, of version: CatalogVersion, in file: String) throws -> Bool {
        let layout = try StoreLayoutBuilder.layout(for: version.model, options: StoreLayoutOptions())
        guard let table = layout.table(ofEntity: entity, in: version.model) else { return false }
        var subtree = Set([entity])
        var grew = true
        while grew {
            grew = false
            for candidate in version.model.entities where !subtree.contains(candidate.name) {
                if let parent = candidate.superentityName, subtree.contains(parent) {
                    subtree.insert(candidate.name)
                    grew = true
                }
            }
        }
        let numbers = subtree.compactMap { layout.entityNumber(of: $0) }
        guard !numbers.isEmpty else { return false }
        do {
            let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("DELETE FROM \(table.name.quotedSQLIdentifier) WHERE Z_ENT IN (\(numbers.map(String.init).joined(separator: ",")))")
            // The salvaged store is in WAL mode and the next round reads it immutably, which
            // would not see a -wal: fold the deletion into the main file.
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch let error as SQLiteError {
            throw MigrationError.writeFailed(path: file, reason: error.message)
        }
        return true
    }

    /// An empty store of the target (old UUID kept when known).
    private func emptyStore(target: CatalogVersion, entities: [IncidentReport.EntityOutcome]) throws -> CleanStore {
        let file = workspace.path("clean-empty.sqlite")
        let history = (try? OpenedStore(path: storePath, options: StoreOpenOptions(privateCopyParent: workspace.path)))
            .flatMap { StoreInspector.read(store: $0).schema }?.table(named: "ACHANGE") != nil
        _ = try StoreCreator.create(
            model: target.model, versionIdentifiers: nil, at: file,
            options: StoreCreationOptions(includesPersistentHistory: history, storeUUID: storeUUID.flatMap(UUID.init(uuidString:))),
            result: nil, faultInjection: nil)
        try UpgradeRun.finishFile(file, walMode: true)
        _ = try verifiedCounts(file, target: target)
        try CreationTarget.synchronize(file, isFolder: false)
        return CleanStore(path: file, carried: false, entities: entities)
    }

    /// Checks the clean store (integrity, match recognising the target as the migration's
    /// verifier does: `MigrationVerifier.isAtTarget`) and counts its rows per entity.
    private func verifiedCounts(_ file: String, target: CatalogVersion) throws -> [String: Int64] {
        let history = (try? SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .immutable)))
            .flatMap { try? $0.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'ACHANGE'")?.int64 } ?? 0
        let layout = try StoreLayoutBuilder.layout(for: target.model, options: StoreLayoutOptions(includesPersistentHistory: history > 0))
        let verification = try MigrationVerifier.verify(
            path: file, target: target, layout: layout, catalog: catalog, predictedRows: nil, fullCheck: options.fullIntegrityCheck,
            cancellation: cancellation)
        guard verification.integrityOK, verification.matchIsAtTarget else {
            throw UpgradeError.resultNotAtTarget(
                path: file, detail: "the clean store: \(verification.integrityCheck) \(verification.integrityOK ? "ok" : "failed"), match \(verification.matchOutcome) \(verification.matchVersion ?? "")")
        }
        return verification.rowsByEntity
    }

    /// Rows per entity in the original store, when SQLite can count them (read through a private
    /// copy or immutably, never written).
    private func countRowsInStore() -> [String: Int64]? {
        guard let sourceVersion, let version = catalog.versions.first(where: { $0.name == sourceVersion }),
              let layout = try? StoreLayoutBuilder.layout(for: version.model, options: StoreLayoutOptions()),
              let store = try? OpenedStore(path: storePath, options: StoreOpenOptions(privateCopyParent: workspace.path))
        else { return nil }
        var counts: [String: Int64] = [:]
        for number in layout.entityNumbers {
            guard let table = layout.table(ofEntity: number.name, in: version.model),
                  let count = try? store.connection.scalar(
                      "SELECT count(*) FROM \(table.name.quotedSQLIdentifier) WHERE Z_ENT = \(number.ent)")?.int64
            else { return nil }
            counts[number.name] = count
        }
        return counts
    }

    // MARK: - Names through the plan

    /// The entity's name in the target, following each hop's mapping; nil when a hop drops it.
    static func forwardName(_ name: String, through mappings: [HopMapping]) -> String? {
        var current = name
        for mapping in mappings {
            guard let next = mapping.entities.first(where: { $0.source == current })?.name else { return nil }
            current = next
        }
        return current
    }

    /// The source version's name of an entity named in `hop`'s destination.
    static func backwardName(_ name: String, hop: String, through mappings: [HopMapping]) -> String? {
        guard let index = mappings.firstIndex(where: { "\($0.hop.from) → \($0.hop.to)" == hop }) ?? (mappings.count == 1 ? 0 : nil) else {
            return nil
        }
        var current = name
        for mapping in mappings[...index].reversed() {
            guard let source = mapping.entity(named: current)?.source else { return nil }
            current = source
        }
        return current
    }

    /// The entity a data failure names (as the source version names it), when it names one.
    /// Removes a workspace store a failed attempt left, so the next round can write it again.
    static func removeStore(_ file: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(file + suffix) }
    }

    /// The entities the migration verifier names as "N Entity objects have no value for the
    /// required property" (an entity name never holds a space).
    static func entitiesMissingRequiredValues(_ problems: [String]) -> [String] {
        var names: [String] = []
        for problem in problems {
            let words = problem.split(separator: " ", maxSplits: 2)
            guard words.count == 3, Int64(words[0]) != nil,
                  words[2].hasPrefix("objects have no value for the required ") else { continue }
            let name = String(words[1])
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    static func rowsByEntity(_ report: SalvageReport) -> [String: Int64] {
        var rows: [String: Int64] = [:]
        for table in report.tables {
            for entity in table.entities { rows[entity.name, default: 0] += Int64(entity.rows) }
        }
        return rows
    }

    static func outcomes(
        source: CatalogVersion, salvagedRows: [String: Int64], rowsInStore: [String: Int64]?, inClean: [String: Int64],
        excluded: [String: String], forward: (String) -> String?, fallbackReason: String?
    ) -> [IncidentReport.EntityOutcome] {
        source.model.entities.filter { !$0.isAbstract || (salvagedRows[$0.name] ?? 0) > 0 }.map { entity in
            let salvaged = salvagedRows[entity.name] ?? 0
            let inStore = rowsInStore?[entity.name]
            let base = inStore ?? salvaged
            if let reason = excluded[entity.name] ?? fallbackReason {
                return IncidentReport.EntityOutcome(
                    entity: entity.name, rowsInStore: inStore, rowsSalvaged: salvaged, rowsInCleanStore: 0, rowsNotCarried: base,
                    keptIn: "salvage database", reason: reason)
            }
            guard let targetName = forward(entity.name) else {
                return IncidentReport.EntityOutcome(
                    entity: entity.name, rowsInStore: inStore, rowsSalvaged: salvaged, rowsInCleanStore: 0, rowsNotCarried: base,
                    keptIn: "discarded by the plan", reason: "the target version has no entity for it (the salvage database keeps the rows)")
            }
            let carried = inClean[targetName] ?? 0
            return IncidentReport.EntityOutcome(
                entity: entity.name, rowsInStore: inStore, rowsSalvaged: salvaged, rowsInCleanStore: carried,
                rowsNotCarried: max(0, base - carried), keptIn: "clean store",
                reason: targetName == entity.name ? nil : "now \(targetName)")
        }
    }

    // MARK: - Files

    /// `BACKUPS/quarantine/<name>.<UTC>[-n]/`, created private (a name too long for that is cut
    /// as backup names are: `BackupNaming.nameStem`).
    static func makeQuarantine(in backupFolder: String, store: String, date: Date) throws -> String {
        let root = backupFolder + "/quarantine"
        if mkdir(root, 0o700) != 0 && errno != EEXIST {
            throw UpgradeError.quarantineFailed(path: root, reason: SafeFileOutput.describe(errno))
        }
        let name = BackupNaming.nameStem((store as NSString).lastPathComponent)
        for suffix in 0..<1000 {
            let candidate = root + "/" + name + "." + BackupNaming.timestamp(date) + (suffix == 0 ? "" : "-\(suffix)")
            if mkdir(candidate, 0o700) == 0 {
                SafeFileOutput.syncFolder(root)
                return candidate
            }
            guard errno == EEXIST else { throw UpgradeError.quarantineFailed(path: candidate, reason: SafeFileOutput.describe(errno)) }
        }
        throw UpgradeError.quarantineFailed(path: root, reason: "no free name for a quarantine folder")
    }

    /// Copies the store's files (main file and sidecars, as they are) into `folder` and compares
    /// each copy's SHA-256 with its original's; returns the bytes copied. The backup of a store
    /// SQLite cannot read (the online backup needs SQLite to read it).
    static func copyRaw(store: String, into folder: String) throws -> Int64 {
        var total: Int64 = 0
        for original in [store] + StoreReplacement.sidecarSuffixes.map({ store + $0 }) {
            var info = stat()
            guard lstat(original, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let copy = folder + "/" + (original as NSString).lastPathComponent
            let input: ReadableFile
            do { input = try ReadableFile(path: original, followsSymlinks: false) } catch {
                throw UpgradeError.backupNotVerified(backup: folder, problems: ["\(original) cannot be read: \(error.description)"])
            }
            let output = try SafeFileOutput(destinationPath: copy)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                let count: Int
                do { count = try input.read(into: buffer) } catch {
                    throw UpgradeError.backupNotVerified(backup: folder, problems: ["\(original) cannot be read: \(error.description)"])
                }
                if count == 0 { break }
                try output.write(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
            }
            try output.publish()
            guard try FileDigest.of(path: original).sha256 == FileDigest.of(path: copy).sha256 else {
                throw UpgradeError.backupNotVerified(backup: folder, problems: ["\(copy) differs from \(original)"])
            }
            total += Int64(info.st_size)
        }
        return total
    }

    static func size(_ path: String) -> Int64 {
        var info = stat()
        return lstat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    static func storeUUID(of file: String) -> String? {
        guard let connection = try? SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .immutable)) else { return nil }
        return try? connection.scalar("SELECT Z_UUID FROM Z_METADATA")?.string
    }

    /// The one command that puts the original back. For a snapshot backup, `restore`, which
    /// keeps the clean store as a pre-restore backup and settles its sidecars. For a raw backup
    /// (a store SQLite could not read), one line of shell that does the same, in a subshell with
    /// `set -e` (the first command that fails stops the rest, and not the operator's shell):
    /// it refuses to run when the quarantine already holds `NAME.clean` or its sidecars (run
    /// twice, the second run would move the restored original over the clean store); copies the
    /// original next to the store under a temporary name (a copy that fails moves nothing);
    /// moves the clean store and its own `-wal`, `-shm` and `-journal` into the quarantine as
    /// `NAME.clean` (what `restoreByHand` does); renames the copy into place; then the original's
    /// `-wal` and `-journal` the same way. A review followed the older `cp -p RAW/NAME STORE`
    /// after the app had used the clean store: the original's bytes then sat beside the clean
    /// store's `-wal`, which SQLite (and `salvage`) read as the original's. Every path is quoted
    /// (`ShellQuote`) and no text from the store goes anywhere else in the line: a newline in a
    /// store's name once ended a comment that named it, and the rest ran as a command.
    static func restoreCommand(backup: String, kind: String, store: String, quarantine: String) -> String {
        if kind == "snapshot" {
            // The store may have been damaged when it was backed up (the reason for the fallback):
            // it is put back exactly as it was.
            return "storerescue restore \(ShellQuote.quote(backup)) --to \(ShellQuote.quote(store)) --force --as-backed-up"
        }
        let name = (store as NSString).lastPathComponent
        let target = ShellQuote.quote(store)
        let aside = ShellQuote.quote(quarantine + "/" + name + ".clean")
        let copy = ShellQuote.quote(backup + "/" + name)
        return "(set -e; for s in '' -wal -shm -journal; do if [ -e \(aside)$s ]; then echo \(aside)$s' exists: restored already? nothing done' >&2; exit 1; fi; done;"
            + " cp -p -- \(copy) \(target).restoring; mv -- \(target) \(aside);"
            + " for s in -wal -shm -journal; do if [ -e \(target)$s ]; then mv -- \(target)$s \(aside)$s; fi; done;"
            + " mv -- \(target).restoring \(target);"
            + " for s in -wal -journal; do if [ -e \(copy)$s ]; then cp -p -- \(copy)$s \(target)$s.restoring; mv -- \(target)$s.restoring \(target)$s; fi; done)"
            + "  # with the app closed"
    }

    /// The same by hand, from the quarantine: each line moves only what is not there already.
    static func restoreByHand(quarantine: String, store: String) -> [String] {
        let name = (store as NSString).lastPathComponent
        let folder = SafeFileOutput.folder(of: store)
        let target = ShellQuote.quote(store)
        let aside = ShellQuote.quote(quarantine + "/" + name + ".clean")
        let original = ShellQuote.quote(quarantine + "/" + name)
        return [
            "[ ! -e \(aside) ] && mv -- \(target) \(aside)",
            "for s in -wal -shm -journal; do if [ -e \(target)$s ] && [ ! -e \(aside)$s ]; then mv -- \(target)$s \(aside)$s; fi; done  # the clean store's own sidecars",
            "[ ! -e \(target) ] && mv -- \(original) \(original)-wal \(original)-journal \(ShellQuote.quote(folder + "/")) 2>/dev/null",
        ]
    }
}
