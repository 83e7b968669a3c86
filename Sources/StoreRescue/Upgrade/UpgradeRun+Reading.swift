import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading the store (in place, then its backed-up snapshot), and deciding what the run does.
extension UpgradeRun {
    // MARK: - Reading and deciding

    func read(probe: InputProbe) -> Result<Reading, any Error> {
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
    func prepare(store: OpenedStore, readout: StoreReadout) throws -> MigrationPreparation {
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

    func readSnapshot(_ snapshot: RetainedSnapshot) throws -> Reading {
        let store = try OpenedStore(path: snapshot.path)
        let readout = StoreInspector.read(store: store)
        let preparation = try prepare(store: store, readout: readout)
        return Reading(store: store, readout: readout, preparation: preparation)
    }

    /// The migration engine's options: `adopt` plans from the store's version to itself.
    func migrationOptions(store: OpenedStore, readout: StoreReadout, memo: AssessmentMemo) throws -> MigrationOptions {
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

    func decide(_ reading: Result<Reading, any Error>) -> Decision {
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
    func tiedVersionStamped(_ reading: Reading, target: CatalogVersion) -> String? {
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
    func catalogsGaps(in refusals: [MigrationRefusal], of reading: Reading) -> [MigrationRefusal] {
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
    func damage(of store: OpenedStore) -> String? {
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
    /// Why the file at the store's path is no store at all, or nil: empty or not SQLite, and
    /// no page of it reads as a page of a database (`Salvager.findsNothing`). `--on-failure
    /// clean` leaves such a file as it is, as `keep` does (review rv8: `/etc/services` given as
    /// the store was quarantined and an empty store put in its place). A store whose header is
    /// gone but whose pages are there is still a store to save.
    func notAStore(_ reading: Result<Reading, any Error>) -> String? {
        guard case .failure(let error) = reading, let access = error as? StoreAccessError, [.empty, .notSQLite].contains(access.kind) else {
            return nil
        }
        return Salvager.findsNothing(in: storePath)
    }

    func refuseForTheCatalog(_ refusals: [MigrationRefusal]) -> Bool {
        // A newer store is not damaged: the catalog lacks its version (or is behind it), and the
        // fallback could carry none of its rows backwards (a review's store was replaced by an
        // empty one).
        guard refusals.contains(where: \.isCatalogsFault) else { return false }
        if options.onFailure == .clean {
            report.notes.append("not falling back to a clean store: the catalog must change, not the store (\(refusals.count == 1 ? "the refusal" : "a refusal") above names the catalog's fault)")
        }
        return true
    }

    func readDetail(_ reading: Result<Reading, any Error>, _ decision: Decision) -> String {
        switch reading {
        case .failure(let error): return "the store cannot be read as a store: \(error)"
        case .success(let reading):
            let match = reading.preparation.match
            let source = reading.preparation.sourceVersion.map { "\($0) (\(reading.preparation.sourceChoice?.rawValue ?? ""))" } ?? "unknown"
            return "match: \(match.outcome.rawValue)\(match.version.map { " \($0)" } ?? ""); store version \(source)"
        }
    }

    /// Fills the report's source, target, adoption and migration from a reading.
    func describe(_ reading: Result<Reading, any Error>, _ decision: Decision) {
        guard case .success(let reading) = reading else { return }
        let migration = MigrationReport(
            store: storePath, output: nil, catalog: catalog,
            options: MigrationOptions(targetVersion: options.targetVersion, sourceVersion: options.sourceVersion, isDryRun: true),
            preparation: reading.preparation)
        report.source = migration.source
        report.target = migration.target
        report.migration = isAdoptOnly ? nil : migration
        // Added to what the run noted before the read (a dry run's permission problem, a wait
        // for another process), which `=` dropped.
        report.notes += reading.preparation.notes + reading.preparation.requiredValuesAlreadyMissing.map { $0.summary + "; carried as they are" }
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
    func predict(_ decision: Decision, _ reading: Result<Reading, any Error>) {
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
}
