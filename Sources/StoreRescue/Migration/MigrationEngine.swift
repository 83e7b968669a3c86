import Foundation

/// The migration engine: decides (`prepare`: the store's version, the plan, each hop's mapping,
/// the data's answers) and writes (`write`: the composed versions into new files, custom steps
/// between them, the target verified). Publishing the file is the caller's: `migrate` links it
/// into place, `upgrade` replaces the store with it.
enum MigrationEngine {
    // MARK: - Deciding

    /// How deep the diagnosis of `prepare`'s match assesses: as deep as the engine's own
    /// assessment when that can be the path the diagnosis assesses (from the version match
    /// found, to the default target, no handlers), so the engine takes it (`AssessmentMemo`);
    /// only what decides refusals otherwise: a `--to` or `--from` named, or Swift handlers,
    /// make the engine's a path of its own (a deeper scan there would be thrown away).
    static func memoDepth(_ options: MigrationOptions) -> MigrationAnalyzer.Depth {
        guard options.targetVersion == nil, options.sourceVersion == nil, options.handlers.isEmpty else { return .refusalsOnly }
        return options.isDryRun ? .forecast : .full
    }

    /// How the note that the store's version was named (`--from`, `adopt --as`) begins.
    static let sourceTakenFromPrefix = "the store's version is taken from "

    /// - Parameter memo: assessments of this reading of the store already made, or to keep
    ///   (`AssessmentMemo`); nil: one for this call, so `match`'s diagnosis makes the engine's.
    static func prepare(
        store: OpenedStore, readout: StoreReadout, catalog: Catalog, options: MigrationOptions, memo: AssessmentMemo? = nil
    ) throws -> MigrationPreparation {
        let depth: MigrationAnalyzer.Depth = options.isDryRun ? .forecast : .full
        let memo = memo ?? AssessmentMemo(depth: Self.memoDepth(options))
        let path = store.probe.path
        guard readout.isCoreDataStore else {
            if let error = readout.report.error { throw StoreAccessError.rejected(path: path, kind: readout.report.kind, reason: error.message) }
            // Some of Core Data's tables there (a bookkeeping table, or a catalog entity's
            // table) but not all: a damaged store, which the clean fallback saves, not another
            // database (a review's store that lost Z_METADATA got exit 65).
            let tables = Set((readout.schema?.tables ?? []).map { $0.name.uppercased() })
            let bookkeeping = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].filter(tables.contains)
            // An entity's table counts only with Core Data's own columns: a table that merely
            // has such a name (a review's `ztag`) does not make a database a damaged store.
            let names = Set(catalog.versions.flatMap { $0.model.entities.map { "Z" + $0.name.uppercased() } })
            let entityTables = (readout.schema?.tables ?? []).filter { table in
                names.contains(table.name.uppercased())
                    && ["Z_PK", "Z_ENT", "Z_OPT"].allSatisfy { column in table.columns.contains { $0.name.uppercased() == column } }
            }.map(\.name).sorted()
            // No table at all (an empty main file beside a -wal SQLite does not apply): nothing
            // says it is another database, and salvage reads the -wal's pages: damaged too (the
            // hostile campaign's main-empty-wal-only cases fell back before d1ff171).
            if tables.isEmpty {
                throw StoreAccessError.rejected(path: path, kind: .damaged, reason: "SQLite reads no table in it (an empty main file, or one whose -wal it does not apply)")
            }
            if !bookkeeping.isEmpty || !entityTables.isEmpty {
                let missing = ["Z_PRIMARYKEY", "Z_METADATA"].filter { !tables.contains($0) }
                throw StoreAccessError.rejected(
                    path: path, kind: .damaged,
                    reason: "a Core Data store (it has \((bookkeeping + entityTables).prefix(5).joined(separator: ", "))) whose \(missing.joined(separator: " and ")) \(missing.count == 1 ? "is" : "are") missing")
            }
            throw MigrationError.notACoreDataStore(path: path, reason: "it has no Core Data tables (Z_METADATA, Z_PRIMARYKEY, nor an entity table of the catalog)")
        }
        let names = catalog.versions.map(\.name)
        for (name, role) in [(options.sourceVersion, options.sourceVersionOption), (options.targetVersion, "--to")] {
            if let name, !names.contains(name) { throw MigrationError.unknownVersion(name: name, role: role, known: names) }
        }
        let match = StoreMatcher.match(store: store, readout: readout, catalog: catalog, memo: memo)
        // The version the store goes to: `--to`, else the plan's default (`StagePlanner.defaultTarget`).
        let intendedTarget = options.targetVersion ?? StagePlanner.defaultTarget(catalog)
        // An ambiguous store's version when the plan can start from one of the tied versions only.
        let tiedSource = match.outcome != .ambiguous ? nil : intendedTarget.flatMap { target in
            StagePlanner.source(amongTied: match.versionsWithItsHashes, to: target, in: catalog, storeIdentifiers: readout.metadata?.versionIdentifiers)
        }
        var preparation = MigrationPreparation(
            match: match, sourceVersion: nil, sourceChoice: nil, plan: nil, mappings: [], analysis: nil, refusals: [], notes: [])
        func refuse(_ code: MigrationRefusal.Code, _ message: String, remedy: String) {
            preparation.refusals.append(MigrationRefusal(code: code, hop: "", entity: nil, property: nil, rowCount: nil, message: message, remedy: remedy))
        }

        // 1. Which version the store is.
        if let requested = options.sourceVersion {
            // A version the hashes contradict would be read through the wrong model: columns
            // it lacks dropped and recomputed, uncounted (a review's ages all became 0).
            // `--from` says which of the versions the hashes fit equally, or names a version
            // where none fits.
            let fitting = match.versionsWithItsHashes
            if match.outcome == .newer, fitting.isEmpty {
                // Newer than every version the catalog knows (an entity or column none has): a
                // newer app wrote it, or a version the catalog lacks (an older store with a column
                // of its own is "newer" too: review rv6 L3, so the message says only what is
                // known). Read through the version named, it would lose what that
                // version lacks, and stamped as it, its metadata would (a review's `upgrade
                // --from V2` and `adopt --as V2` restamped such a store, exit 4). Never.
                refuse(.storeNewer,
                       "the store is newer than every version the catalog knows (nearest: \(match.version ?? "none")): \(match.diagnosis.reasons.first ?? "")"
                           + "; \(options.sourceVersionOption) \(requested) cannot name its version: the store has what no version of the catalog has "
                           + "(a newer app's version, or one the catalog lacks), and is never read nor restamped as a version without it",
                       remedy: "never downgrade or restamp a newer store; add its version to the catalog (storerescue catalog learn, from a copy of the store) if it is the app's, then run again")
            } else {
                if options.sourceVersionOption == "--from", !fitting.isEmpty,
                   match.candidates.first(where: { $0.version == requested })?.hashesMatch == false
                {
                    throw MigrationError.notThatVersion(path: path, requested: requested, found: fitting)
                }
                preparation.sourceVersion = requested
                preparation.sourceChoice = .requested
                if match.version != requested || match.outcome != .exact {
                    preparation.notes.append("\(sourceTakenFromPrefix)\(options.sourceVersionOption) (\(requested)); match said \(match.outcome.rawValue)\(match.version.map { " \($0)" } ?? "")")
                }
            }
        } else {
            switch match.outcome {
            case .exact:
                preparation.sourceVersion = match.version
                preparation.sourceChoice = .matched
            case .drifted where match.diagnosis.adoptAs != nil:
                preparation.sourceVersion = match.diagnosis.adoptAs
                preparation.sourceChoice = .adopted
                preparation.notes.append("the store carries no hashes that name its version; its tables fit \(match.diagnosis.adoptAs ?? "") with only benign differences, so it is taken as \(match.diagnosis.adoptAs ?? "")")
            case .newer where match.candidates.contains(where: { $0.hashesMatch && $0.version == intendedTarget }):
                // Matched as a version after the target only by what hashes leave out (an
                // index): its hashes are the target's, so Core Data opens it as the target, as
                // `match` predicts. A review's upgrade refused it as newer and, with
                // --on-failure clean, left an empty store in its place.
                // Or it is the target, after the catalog's current version (`--to`, or the default
                // target when the stages end past the current version: `StagePlanner.defaultTarget`).
                let target = intendedTarget ?? ""
                preparation.sourceVersion = target
                preparation.sourceChoice = .matched
                if match.version == target {
                    preparation.notes.append("the store is exactly \(target), which comes after the catalog's current version \(catalog.latest?.name ?? "") (match says newer)")
                } else {
                    preparation.notes.append("the store fits \(match.version ?? "a later version") best, but its hashes are also \(target)'s: Core Data opens it as \(target), and so it is taken")
                }
            case .newer where match.outcome == .newer && match.candidates.contains(where: { $0.hashesMatch && $0.version == match.version }):
                // Exactly a version of the catalog after its current one: match calls it newer.
                let target = intendedTarget ?? "the target"
                if let found = match.version, let index = names.firstIndex(of: found), let targetIndex = names.firstIndex(of: target), index < targetIndex {
                    // Before the target still (`--to` a later version): the store is that version,
                    // as `MigrationVerifier` recognised it when it was written. A review's
                    // `--to` the third Employees version refused the second as coming after it.
                    preparation.sourceVersion = found
                    preparation.sourceChoice = .matched
                    preparation.notes.append("the store is exactly \(found), which comes after the catalog's current version \(catalog.latest?.name ?? "") (match says newer) and before \(target)")
                } else if options.sourceVersionOption == "--as" {
                    // `adopt` has no `--to` (review rv5 F6): what it can do, or the command in full.
                    let found = match.version ?? "its version"
                    refuse(.storeNewer, "the store is \(found), which comes after \(target), the version the catalog's plan ends at: adopt stamps a version past it only when --as names it",
                           remedy: "never downgrade a store; it is exactly \(found): adopt it as that (--as \(found)), or upgrade it to \(found) or later "
                               + "(storerescue upgrade STORE --catalog CATALOG --to \(found)), or make \(found) the catalog's current version")
                } else {
                    refuse(.storeNewer, "the store is \(match.version ?? "?"), which comes after \(target), the version it would be migrated to",
                           remedy: "never downgrade a store; migrate it to \(match.version ?? "its version") or later (--to), or make that the catalog's current version")
                }
            case .newer:
                refuse(.storeNewer, "the store is newer than every version the catalog knows (nearest: \(match.version ?? "none")): \(match.diagnosis.reasons.first ?? "")",
                       remedy: "never downgrade a store; add the newer version to the catalog (storerescue catalog learn) if it is the app's")
            case .ambiguous where options.sourceVersionOption != "--as"
                && intendedTarget.map({ target in
                    MigrationVerifier.isAtTarget(match, target: target) && !StagePlanner.stagesName(anyOf: match.versionsWithItsHashes, besides: target, in: catalog)
                }) == true:
                // Its hashes are exactly the target's and another version's (the catalog has
                // versions Core Data cannot tell apart: it treats them as one model and opens the
                // store as the target). The rule the verifier applies to the store a run wrote
                // (review rv5 F5: the run wrote V2, ended in exit 70, and the next run refused it).
                // Not for `adopt` (`--as`): it stamps the version the store is, which the hashes
                // cannot tell here, so `--as` must name it. Nor when a stage names another of the
                // tied versions (a custom stage V1 → V2 between versions of the same hashes): the
                // store may be V1, whose stage must run, and `NSStagedMigrationManager` refuses
                // such stages anyway ("duplicate version checksums"); a review's V1 store was
                // called already at V2, exit 2, its stage never run.
                let target = intendedTarget ?? ""
                let tied = match.versionsWithItsHashes
                preparation.sourceVersion = target
                preparation.sourceChoice = .matched
                preparation.notes.append(
                    "the store's hashes are exactly those of \(tied.joined(separator: ", ")) (match says ambiguous): Core Data cannot tell versions with the same hashes apart "
                        + "and opens it as \(target), the target, so it is taken as \(target); give them distinct hashes (versionHashModifier) to tell them apart")
            case .ambiguous where options.sourceVersionOption != "--as" && tiedSource != nil:
                // Not at the target, and the plan can start from one of the tied versions only
                // (`StagePlanner.source(amongTied:)`: the one the stages name, or one model but
                // for its identifiers): Core Data loads the store with that model, since the
                // hashes are identical, and migrates it. A review's healthy store was refused as
                // not identified, and `--on-failure clean` replaced it by a clean one.
                let tied = match.versionsWithItsHashes
                let target = intendedTarget ?? ""
                let source = tiedSource ?? ""
                let why = StagePlanner.whyTiedSource(source, to: target, in: catalog)
                preparation.sourceVersion = source
                preparation.sourceChoice = .matched
                preparation.notes.append(
                    "the store's hashes are exactly those of \(tied.joined(separator: ", ")) (match says ambiguous): \(why); it is taken as \(source)")
            case .ambiguous where intendedTarget.flatMap({ names.firstIndex(of: $0) }).map({ targetIndex in
                    !match.versionsWithItsHashes.isEmpty
                        && match.versionsWithItsHashes.allSatisfy { (names.firstIndex(of: $0) ?? -1) > targetIndex }
                }) == true:
                // Every version it can be comes after the target: whichever it is, the run would
                // go backwards, as for a store of one of them alone (review rv7: refused as not
                // identified, advising `--from V2`, which then met this refusal).
                let tied = match.versionsWithItsHashes
                let target = intendedTarget ?? ""
                refuse(.storeNewer, "the store is \(tied.joined(separator: " or ")) (the same hashes), each of which comes after \(target), the version it would be migrated to",
                       remedy: "never downgrade a store; migrate it to \(tied.last ?? "its version") or later (--to), or make that the catalog's current version")
            case .ambiguous:
                let tied = match.versionsWithItsHashes
                let option = options.sourceVersionOption
                refuse(.storeNotIdentified, "the store fits \(tied.joined(separator: ", ")) equally (the same hashes): its version cannot be told",
                       remedy: "name the version it is with \(option) VERSION (\(tied.map { "\(option) \($0)" }.joined(separator: " or "))), or give the versions distinct hashes (versionHashModifier)")
            case .drifted:
                let candidates = match.candidates.prefix(3).map { "\($0.version) (score \(String(format: "%.2f", $0.score)))" }.joined(separator: ", ")
                refuse(.storeNotIdentified, "the store matches no version of the catalog exactly; nearest: \(candidates)",
                       remedy: "add the version that wrote the store to the catalog (storerescue catalog learn STORE), or name it with \(options.sourceVersionOption) VERSION")
            case .unknown, .notCoreData:
                refuse(.storeNotIdentified, "no version of the catalog is close to this store",
                       remedy: "check that the catalog is this app's (storerescue match STORE --catalog CATALOG)")
            }
        }
        guard let source = preparation.sourceVersion, preparation.refusals.isEmpty else { return preparation }
        if let candidate = match.candidates.first(where: { $0.version == source }) {
            let blocking = candidate.differences.filter { [.tableMissing, .columnMissing, .columnTypeDiffers].contains($0.kind) }
            if !blocking.isEmpty {
                refuse(.storeNotIdentified, "the store's tables do not have what \(source) lays out: " + blocking.prefix(5).map(\.detail).joined(separator: "; "),
                       remedy: "repair the store (storerescue salvage) or correct the catalog's \(source)")
            }
        }

        // 2. The plan, the mappings, and what the data says.
        let assessment = try assess(
            store: store, readout: readout, catalog: catalog, from: source, to: options.targetVersion, handlers: options.handlers, depth: depth, memo: memo)
        preparation.plan = assessment.plan
        preparation.notes += assessment.plan.notes
        preparation.mappings = assessment.mappings
        preparation.analysis = assessment.analysis
        preparation.refusals += assessment.refusals
        if options.isDryRun {
            // Computed values that do not fit as the store is, which those steps may change.
            for check in preparation.analysis?.deferredComputedValueChecks ?? [] {
                for refusal in check.refusalsBeforeSteps {
                    preparation.notes.append(
                        "\(check.hop): \(refusal.message) before \(check.stepsText), which may change what it reads: the run checks the values after them, "
                            + "before it writes \(check.version), and refuses (exit 3) if some still do not fit")
                }
            }
            // Steps that set values a version they run on keeps unique: its index stops them.
            for steps in preparation.analysis?.stepsUnderUniqueness ?? [] {
                preparation.notes.append(
                    "\(steps.hop): \(steps.steps) set \(steps.constrained.joined(separator: ", ")), which \(steps.version) keeps unique; the dry run does not "
                        + "run them: if they make objects share values there, the run stops in them (exit 3) and writes nothing")
            }
            // Not silently skipped (a review's dry run said nothing of it): when, and by whom.
            for check in preparation.analysis?.deferredUniquenessChecks ?? [] {
                preparation.notes.append(
                    "\(check.hop): whether objects share values of \(check.constrained) (unique at \(check.version)) is not checked before "
                        + "\(check.stepsText), which may change them: the run checks it after they ran, before it writes \(check.version)")
            }
            // Values that do not convert as the store is, which those steps may correct.
            for check in preparation.analysis?.deferredConversionChecks ?? [] {
                preparation.notes.append(
                    "\(check.hop): \(check.entity).\(check.attribute) becomes \(check.type.modelFileName), and \(check.rowsBeforeSteps) stored values do not convert "
                        + "before \(check.stepsText)\(check.exampleBeforeSteps.map { " (for example \($0))" } ?? ""), which may correct them: the run checks "
                        + "the values they leave, before it writes \(check.version), and refuses (exit 3) if some still do not convert")
            }
        }
        if options.isDryRun, preparation.refusals.isEmpty, let plan = preparation.plan, !plan.isAtTarget, let physical = readout.schema {
            do {
                preparation.requiredValuesAlreadyMissing = try forecastCarriedGaps(
                    store: store, readout: readout, catalog: catalog, plan: plan, physical: physical)
            } catch {
                // Only a forecast: the plan stands, and a real run checks the written store itself.
                preparation.notes.append("the required values the store already lacks could not be counted: \(StoreMigrator.operatorFacing(error, store: path).description)")
            }
            // Links to clear on a required relationship: objects left with none stop the run.
            if let target = catalog.version(named: plan.targetVersion)?.model {
                for clearing in (preparation.analysis?.linksToClear ?? [:]).sorted(by: { $0.key < $1.key }) {
                    let parts = clearing.key.split(separator: ".", maxSplits: 1).map(String.init)
                    guard parts.count == 2, let entity = target.entity(named: parts[0]),
                        case .relationship(let relationship)? = target.allProperties(of: entity).first(where: { $0.name == parts[1] }),
                        !relationship.isOptional
                    else { continue }
                    preparation.notes.append(
                        "\(clearing.key) is required at \(plan.targetVersion), and \(clearing.value) of its links are cleared: an object left with none that had one "
                            + "stops the migration (134110) — make it optional, keep the hierarchy, or link them again in a custom stage")
                }
            }
        }
        return preparation
    }

    /// A dry run's forecast: the store's gaps (`RequiredValueBaseline`, what the written store
    /// will be compared against) that the target version still requires, as it names them.
    private static func forecastCarriedGaps(
        store: OpenedStore, readout: StoreReadout, catalog: Catalog, plan: MigrationPlan, physical: PhysicalSchema
    ) throws -> [MigrationReport.MissingValues] {
        let context = try PathContext(catalog: catalog, plan: plan, readout: readout)
        let layouts = try context.layouts(history: includesHistory(physical))
        let target = context.version(plan.targetVersion).model
        func isRequired(_ entity: String, _ property: String) -> Bool {
            guard let description = target.entity(named: entity) else { return false }
            return RequiredValueCensus.requiredProperties(of: description, in: target).contains { $0.name == property }
        }
        return try baseline(store: store, plan: plan, context: context, layouts: layouts, physical: physical).carriedGaps()
            .filter { isRequired($0.entity, $0.property) }
            .map { MigrationReport.MissingValues(entity: $0.entity, property: $0.property, kind: $0.kind.rawValue, objects: $0.objects) }
    }

    /// Whether the store keeps persistent history (its layouts then include the history tables).
    static func includesHistory(_ physical: PhysicalSchema) -> Bool {
        physical.table(named: "ACHANGE") != nil && physical.table(named: "ATRANSACTION") != nil
    }

    /// The store as it was read, at the plan's source version: what lacked a required value
    /// before the migration (`RequiredValueBaseline`).
    static func baseline(
        store: OpenedStore, plan: MigrationPlan, context: PathContext, layouts: [String: StoreLayout], physical: PhysicalSchema
    ) -> RequiredValueBaseline {
        let file = readFile(of: store)
        return RequiredValueBaseline(
            connection: store.connection, path: file.path, isImmutable: file.isImmutable, version: context.version(plan.sourceVersion),
            layout: layouts[plan.sourceVersion] ?? context.layout(plan.sourceVersion), physical: physical, mappings: context.mappings)
    }

    /// The file the store is read from, to attach read-only: the original, immutably (the probe
    /// refused a symbolic link unless trusted, `--follow-symlinks`, and resolved one it followed:
    /// ATTACH opens the file it names, the connection never follows links itself), or its
    /// private copy.
    static func readFile(of store: OpenedStore) -> (path: String, isImmutable: Bool) {
        guard store.accessMethod == .immutableOriginal else { return (store.connection.path, false) }
        return (URL(fileURLWithPath: store.probe.resolvedPath).resolvingSymlinksInPath().path, true)
    }

    /// A plan from a known version, with everything that stops it.
    struct Assessment {
        var plan: MigrationPlan
        var mappings: [HopMapping]
        var analysis: MigrationAnalysis?
        var refusals: [MigrationRefusal]
    }

    /// Plans from `from` to `to`, builds each hop's mapping and asks the data (`depth`): the one
    /// path `match`'s diagnosis and `migrate` share. With `memo`, an assessment of the same path
    /// made earlier for this reading of the store is taken as it is (`AssessmentMemo`).
    static func assess(
        store: OpenedStore, readout: StoreReadout, catalog: Catalog, from source: String, to target: String?,
        handlers: [CustomStageHandlers], depth: MigrationAnalyzer.Depth, memo: AssessmentMemo? = nil
    ) throws -> Assessment {
        // Handlers can add refusals: such an assessment is neither kept nor taken.
        guard let memo, handlers.isEmpty else {
            return try assessOnce(store: store, readout: readout, catalog: catalog, from: source, to: target, handlers: handlers, depth: depth)
        }
        return try memo.assessment(from: source, to: target, depth: depth) { depth in
            try assessOnce(store: store, readout: readout, catalog: catalog, from: source, to: target, handlers: handlers, depth: depth)
        }
    }

    private static func assessOnce(
        store: OpenedStore, readout: StoreReadout, catalog: Catalog, from source: String, to target: String?,
        handlers: [CustomStageHandlers], depth: MigrationAnalyzer.Depth
    ) throws -> Assessment {
        let plan = StagePlanner.plan(catalog: catalog, from: source, to: target)
        var assessment = Assessment(plan: plan, mappings: [], analysis: nil, refusals: [])
        func refuse(_ code: MigrationRefusal.Code, _ message: String, remedy: String) {
            assessment.refusals.append(MigrationRefusal(code: code, hop: "", entity: nil, property: nil, rowCount: nil, message: message, remedy: remedy))
        }
        for issue in plan.refusals {
            refuse(issue.code == .storeNewerThanTarget ? .storeNewer : .plan, (issue.stage.map { "\($0): " } ?? "") + issue.message,
                   remedy: "on the device: " + issue.onDevice)
        }
        for handler in handlers where !plan.hops.contains(where: { $0.from == handler.from && $0.to == handler.to && $0.kind == .custom }) {
            refuse(.invalidCustomStage, "Swift handlers are given for \(handler.from) → \(handler.to), which is not a custom stage of this plan",
                   remedy: "declare a custom stage \(handler.from) → \(handler.to) in the catalog")
        }
        guard assessment.refusals.isEmpty, !plan.hops.isEmpty else { return assessment }

        let context = try PathContext(catalog: catalog, plan: plan, readout: readout)
        assessment.mappings = context.mappings
        assessment.refusals += context.mappings.flatMap(\.refusals)
        guard assessment.refusals.isEmpty else { return assessment }
        try MigrationFunctions.register(on: store.connection)
        // The analysis runs the catalog's expressions over the store (computed values, their
        // uniqueness): bounded as the writer's are, so `randomblob(900000000)` stops with "string
        // or blob too big" instead of taking gigabytes (the hostile-input campaign: 2.6 GB, then
        // a hang). No value read from the store is larger than the store.
        store.connection.limitValueLength(to: maximumValueBytes(storeAt: URL(fileURLWithPath: store.probe.resolvedPath).resolvingSymlinksInPath().path))
        let states: [VirtualVersion]
        do {
            states = try context.states(schema: "main", physical: readout.schema, primaryKeys: readout.primaryKeys)
        } catch let failure as VirtualVersion.ExpressionFailure {
            refuse(.invalidCustomStage, "\(failure.jsonPath): \(failure.reason)", remedy: "correct the expression (names are \(failure.entity)'s properties)")
            return assessment
        }
        if let failure = try ExpressionCheck.firstFailure(in: states, mappings: context.mappings, connection: store.connection) {
            refuse(.invalidCustomStage, failure, remedy: "correct the expression: SQLite's expression syntax, names of the model")
            return assessment
        }
        if let failure = try checkDataSteps(states: states, mappings: context.mappings) {
            refuse(.invalidCustomStage, "\(failure.jsonPath): \(failure.reason)",
                   remedy: "correct the step: SQLite's expression syntax, names of the entity at the step's version")
            return assessment
        }
        var analysis = try MigrationAnalyzer(connection: store.connection, states: states, mappings: context.mappings, handlers: handlers)
            .analyse(depth: depth)
        // The indexes of the store the target neither lays out nor carries: what the writer
        // decides, from the same schema.
        if depth != .refusalsOnly, states.count > 1, let last = states.last, let physical = readout.schema {
            let carriage = try last.indexCarriage(physical: physical)
            analysis.carriedIndexes = carriage.carried.map(\.report)
            analysis.leftOutIndexes = carriage.leftOut
        }
        assessment.analysis = analysis
        assessment.refusals += analysis.refusals
        return assessment
    }

    /// The first `willMigrate` (at a hop's `from`) or `didMigrate` (at its `to`) step that would
    /// fail, each compiled against a scratch database holding that version's empty tables.
    private static func checkDataSteps(states: [VirtualVersion], mappings: [HopMapping]) throws -> DataStepRunner.Failure? {
        for (index, mapping) in mappings.enumerated() where index + 1 < states.count {
            for (steps, state) in [(mapping.hop.custom.willMigrate, states[index]), (mapping.hop.custom.didMigrate, states[index + 1])] where !steps.isEmpty {
                let scratch = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
                try MigrationFunctions.register(on: scratch)
                for statement in state.layout.createStatements() { try scratch.execute(statement) }
                let runner = DataStepRunner(connection: scratch, version: state.version, layout: state.layout, schema: "main")
                if let failure = runner.check(steps) { return failure }
            }
        }
        return nil
    }

    // MARK: - Writing

    /// What writing produced (the file is at the path given, closed, not yet published).
    struct Written: Sendable {
        var summary: VersionWriter.Summary
        var verification: MigrationVerifier.Result
        /// Rows each custom step changed, by stage JSON path.
        var stepRows: [String: [Int64]]
        var frameworkVersion: Int
        var modelCacheWritten: Bool
        var intermediateFiles: Int
        /// What the run checked that the analysis left to it (a uniqueness constraint checked
        /// after the steps before its hop's copy), for the report's notes.
        var notes: [String] = []
        /// The app's own columns left out on the way (`OwnColumn`), with their values.
        var leftOutColumns: [MigrationAnalysis.LeftOutColumn] = []
        /// Indexes of the store left out by the versions written on the way and the target.
        var leftOutIndexes: [MigrationAnalysis.LeftOutIndex] = []
    }

    /// Writes the target version into a new file at `file` (which must not exist), composing hops
    /// and writing intermediate versions (in `workspace`) only where custom steps must run.
    ///
    /// - Parameter carriesPreexistingGaps: required values the store already lacked pass the final
    ///   check (reported as the store's own, `MigrationVerifier`); false where the store was
    ///   made from salvaged rows, whose lost links are no part of the app's data.
    static func write(
        _ preparation: MigrationPreparation, store: OpenedStore, readout: StoreReadout, catalog: Catalog, to file: String,
        workspace: String, options: MigrationOptions, progress: ((MigrationProgress) -> Void)?, cancellation: CancellationFlag?,
        carriesPreexistingGaps: Bool = true
    ) throws -> Written {
        guard let plan = preparation.plan, let physical = readout.schema else {
            throw MigrationError.notACoreDataStore(path: store.probe.path, reason: "it was not read")
        }
        let context = try PathContext(catalog: catalog, plan: plan, readout: readout)
        let layouts = try context.layouts(history: includesHistory(physical))
        let path = store.probe.path
        // The file read (a link's target): a link's own fingerprint would not change with it.
        let original = store.probe.resolvedPath
        let originalFingerprint = FileFingerprint(path: original)
        let valueLimit = maximumValueBytes(storeAt: URL(fileURLWithPath: original).resolvingSymlinksInPath().path)

        // The base: the store as read (the original, immutably, or its private copy).
        let read = readFile(of: store)
        var base = Base(
            path: read.path, isImmutable: read.isImmutable, physical: physical, primaryKeys: readout.primaryKeys, isWorkspaceFile: false)
        var state = VirtualVersion.base(
            version: context.version(plan.sourceVersion), layout: layouts[plan.sourceVersion] ?? context.layout(plan.sourceVersion),
            schema: "base", physical: physical, primaryKeys: readout.primaryKeys)
        var hopsSinceBase = 0
        var nextID = (state.rowSources.map(\.id).max() ?? 0) + 1
        // An app's own columns left out on the way, counted on the base they were read from.
        var leftOutIndexes: [MigrationAnalysis.LeftOutIndex] = []
        var leftOutColumns = try countLeftOutColumns(state, hop: context.mappings.first.map { "\($0.hop.from) → \($0.hop.to)" } ?? "", base: base)
        var stepRows: [String: [Int64]] = [:]
        var notes: [String] = []
        var intermediates = 0
        let totalSteps = context.mappings.count + 2
        var finishedSteps = 0
        func report(_ phase: MigrationProgress.Phase) {
            progress?(MigrationProgress(phase: phase, completed: finishedSteps, total: totalSteps))
        }
        let uuid = readout.metadata?.uuid ?? UUID().uuidString.uppercased()

        /// Writes `state` into a new workspace file and makes it the base.
        func materialize(_ name: String) throws {
            let file = workspace + "/" + name
            intermediates += 1
            let metadata = StoreMetadata(
                uuid: uuid, rowVersion: 1,
                plist: StoreMetadataWriter.plist(versionHashes: state.version.versionHashes, versionIdentifiers: state.version.versionIdentifiers))
            let written = try writeVersion(
                state, base: base, into: file, metadata: metadata, modelCache: nil, isFinal: false, valueLimit: valueLimit, cancellation: cancellation)
            leftOutIndexes += written.leftOutIndexes
            let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .immutable))
            base = Base(
                path: file, isImmutable: false, physical: try PhysicalSchema.read(from: connection),
                primaryKeys: try PrimaryKeyEntry.readAll(from: connection), isWorkspaceFile: true)
            state = VirtualVersion.base(version: state.version, layout: state.layout, schema: "base", physical: base.physical, primaryKeys: base.primaryKeys)
            hopsSinceBase = 0
        }

        for (index, mapping) in context.mappings.enumerated() {
            try checkCancellation(cancellation, path: file)
            let hop = mapping.hop
            let handlers = options.handlers.first { $0.from == hop.from && $0.to == hop.to }
            let hasExpressions = !hop.custom.map.isEmpty || !hop.custom.create.isEmpty
            let runsBefore = !hop.custom.willMigrate.isEmpty || handlers?.willMigrate != nil
            if runsBefore || (hasExpressions && !state.nondeterministicAttributes.isEmpty && hopsSinceBase > 0) {
                if hopsSinceBase > 0 || !base.isWorkspaceFile { try materialize("version-\(index)-\(hop.from).sqlite") }
                if runsBefore {
                    stepRows[(hop.stage ?? hop.summary) + ".willMigrate"] = try runSteps(
                        hop.custom.willMigrate, handler: handlers?.willMigrate, on: base.path, state: state, stage: hop.stage ?? hop.summary,
                        valueLimit: valueLimit)
                    try materializeBaseAgain(&base, &state)
                }
            }
            report(.writing)
            let before = state
            do {
                state = try state.applying(mapping, destination: context.version(hop.to), layout: layouts[hop.to] ?? context.layout(hop.to), nextID: &nextID)
            } catch {
                throw MigrationError.customStepFailed(path: file, stage: hop.stage ?? hop.summary, detail: "\(error.jsonPath): \(error.reason)")
            }
            hopsSinceBase += 1
            leftOutColumns += try countLeftOutColumns(state, hop: "\(hop.from) → \(hop.to)", base: base)
            // Values that do not convert first: the uniqueness check counts them as NULL.
            notes += try checkDeferredConversion(
                preparation.analysis?.deferredConversionChecks.filter { $0.hopIndex == index } ?? [], before: before, after: state,
                mapping: mapping, base: base, path: file)
            notes += try checkDeferredComputedValues(
                preparation.analysis?.deferredComputedValueChecks.filter { $0.hopIndex == index } ?? [], before: before, after: state,
                mapping: mapping, base: base, path: file)
            notes += try checkDeferredUniqueness(
                preparation.analysis?.deferredUniquenessChecks.filter { $0.hopIndex == index } ?? [], before: before, after: state,
                mapping: mapping, base: base, path: file)
            let runsAfter = !hop.custom.didMigrate.isEmpty || handlers?.didMigrate != nil
            let isLast = index == context.mappings.count - 1
            if (!hop.custom.create.isEmpty || runsAfter) && !(isLast && !runsAfter) {
                try materialize("version-\(index + 1)-\(hop.to).sqlite")
                if runsAfter {
                    stepRows[(hop.stage ?? hop.summary) + ".didMigrate"] = try runSteps(
                        hop.custom.didMigrate, handler: handlers?.didMigrate, on: base.path, state: state, stage: hop.stage ?? hop.summary,
                        valueLimit: valueLimit)
                    try materializeBaseAgain(&base, &state)
                }
            }
            finishedSteps += 1
        }

        // The target, stamped as Core Data would stamp a store it migrated.
        let target = context.version(plan.targetVersion)
        let frameworkVersion = options.frameworkVersion
            ?? max(Int(readout.metadata?.frameworkVersion ?? 0), StoreMetadataWriter.defaultFrameworkVersion)
        let metadata = StoreMetadata(
            uuid: uuid, rowVersion: 1,
            plist: StoreMetadataWriter.plist(
                versionHashes: target.versionHashes, versionIdentifiers: target.versionIdentifiers, frameworkVersion: frameworkVersion,
                preserving: readout.metadata?.plist ?? [:]))
        let modelCache = target.modelCacheContent
        report(.writing)
        let summary = try writeVersion(
            state, base: base, into: file, metadata: metadata, modelCache: modelCache, isFinal: true, valueLimit: valueLimit, cancellation: cancellation)
        finishedSteps += 1
        guard FileFingerprint(path: original) == originalFingerprint else { throw MigrationError.storeChanged(path: path) }

        report(.verifying)
        let predicted = (preparation.analysis?.countsPrecedeCustomSteps ?? true) || !options.handlers.isEmpty
            ? nil : preparation.analysis?.rows(atVersion: plan.targetVersion)
        // The store as it was read: the fingerprint above says it is still what was migrated.
        let baseline = carriesPreexistingGaps ? baseline(store: store, plan: plan, context: context, layouts: layouts, physical: physical) : nil
        let verification = try MigrationVerifier.verify(
            path: file, target: target, layout: layouts[plan.targetVersion] ?? context.layout(plan.targetVersion), catalog: catalog,
            predictedRows: predicted, fullCheck: options.fullIntegrityCheck, baseline: baseline, cancellation: cancellation)
        guard verification.problems.isEmpty else {
            // Gaps the store did not have (its own are counted in the baseline), made where the
            // catalog's steps ran: the catalog's doing, not a bug of ours.
            let stagesWithSteps = Set(stepRows.keys.map { key in
                [".willMigrate", ".didMigrate"].reduce(key) { $0.hasSuffix($1) ? String($0.dropLast($1.count)) : $0 }
            }).sorted()
            if carriesPreexistingGaps, !stagesWithSteps.isEmpty, verification.requiredValueProblems == verification.problems.count {
                throw MigrationError.customStepsLeftRequiredValuesMissing(path: file, stages: stagesWithSteps, problems: verification.problems)
            }
            // Links cleared because their objects left the relationship's kind (an entity moved
            // out of a hierarchy) left required relationships empty: 134110 on the device, not a
            // bug of ours (a review's run ended in exit 70, "report a bug").
            if carriesPreexistingGaps, !summary.clearedLinks.isEmpty, verification.requiredValueProblems == verification.problems.count {
                throw MigrationError.clearedLinksLeftRequiredValuesMissing(path: file, cleared: summary.clearedLinks, problems: verification.problems)
            }
            throw MigrationError.verificationFailed(path: file, problems: verification.problems)
        }
        finishedSteps += 1
        report(.verifying)
        return Written(
            summary: summary, verification: verification, stepRows: stepRows, frameworkVersion: frameworkVersion,
            modelCacheWritten: modelCache != nil, intermediateFiles: intermediates, notes: notes, leftOutColumns: leftOutColumns.merged(),
            leftOutIndexes: leftOutIndexes + summary.leftOutIndexes)
    }

    /// The app's own columns `state` left out, with their non-NULL values on `base` (none to
    /// count: no connection opened).
    private static func countLeftOutColumns(_ state: VirtualVersion, hop: String, base: Base) throws -> [MigrationAnalysis.LeftOutColumn] {
        guard !state.leftOutOwnColumns.isEmpty else { return [] }
        let connection = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        try connection.execute("ATTACH DATABASE \(SQLLiteral.string(SQLiteConnection.readOnlyURI(path: base.path, immutable: base.isImmutable))) AS base")
        return try state.leftOutOwnColumns.map { left in
            let values = try connection.scalar(
                "SELECT count(*) FROM \(left.from) \(RowSource.alias) WHERE (\(left.condition)) AND (\(left.column.expression)) IS NOT NULL")?.int64 ?? 0
            return MigrationAnalysis.LeftOutColumn(
                column: left.column.qualifiedName, hop: hop, values: values, discardsData: left.reason.discardsData, reason: left.reason.summary)
        }
    }

    /// The uniqueness checks the analysis left to the run (`deferredUniquenessChecks`), made
    /// on `base` once the steps before the hop's copy have run — where Core Data's copy into
    /// the destination's unique index would meet the duplicates. Refused as the analysis
    /// refuses (exit 3, the same wording), said when and after what; a note when they pass.
    private static func checkDeferredUniqueness(
        _ checks: [MigrationAnalysis.DeferredUniquenessCheck], before: VirtualVersion, after: VirtualVersion, mapping: HopMapping,
        base: Base, path: String
    ) throws -> [String] {
        guard let first = checks.first else { return [] }
        let refusals = try analyzer(of: mapping, before: before, after: after, base: base).uniquenessRefusals()
        if var refusal = refusals.first {
            // A refusal, as the analysis's are (the report lists it), said after what.
            refusal.message += " (checked after \(first.stepsText) ran)"
            refusal.remedy = "correct \(first.stepsText) so that they remove or rename the objects that share values (seed 003)"
            throw MigrationError.refusedAfterSteps(path: path, refusal: refusal)
        }
        return checks.map { check in
            "\(check.hop): \(check.constrained) (unique at \(check.version)) was checked after \(check.stepsText) ran, not before them: no value is shared"
        }
    }

    /// The conversion checks the analysis left to the run (`deferredConversionChecks`), made on
    /// `base` once the steps before the hop's copy have run, before anything of the destination
    /// is written. Refused as the analysis refuses (exit 3, the same wording), said after what;
    /// a note when every value converts.
    private static func checkDeferredConversion(
        _ checks: [MigrationAnalysis.DeferredConversionCheck], before: VirtualVersion, after: VirtualVersion, mapping: HopMapping,
        base: Base, path: String
    ) throws -> [String] {
        guard !checks.isEmpty else { return [] }
        if let refusal = try analyzer(of: mapping, before: before, after: after, base: base).conversionRefusals(checks).first {
            throw MigrationError.refusedAfterSteps(path: path, refusal: refusal)
        }
        return checks.map { check in
            "\(check.hop): whether the values of \(check.entity).\(check.attribute) convert to \(check.type.modelFileName) was checked after "
                + "\(check.stepsText) ran, not before them: every value converts"
        }
    }

    /// The computed-value checks the analysis left to the run (`deferredComputedValueChecks`),
    /// made on `base` once the steps before the hop's copy have run: refused as the analysis
    /// refuses (exit 3, the same wording), said after what; a note when every value fits.
    private static func checkDeferredComputedValues(
        _ checks: [MigrationAnalysis.DeferredComputedValueCheck], before: VirtualVersion, after: VirtualVersion, mapping: HopMapping,
        base: Base, path: String
    ) throws -> [String] {
        guard let first = checks.first else { return [] }
        if let refusal = try analyzer(of: mapping, before: before, after: after, base: base).computedValueRefusals(afterSteps: first.stepsText).first {
            throw MigrationError.refusedAfterSteps(path: path, refusal: refusal)
        }
        let paths = first.refusalsBeforeSteps.compactMap { $0.message.components(separatedBy: " gives ").first }
        return ["\(first.hop): the values \(Array(Set(paths)).sorted().joined(separator: ", ")) compute were checked after \(first.stepsText) ran, "
            + "not before them: every value fits"]
    }

    /// An analyzer of one hop over `base` (read-only), for the checks the run makes between steps.
    private static func analyzer(of mapping: HopMapping, before: VirtualVersion, after: VirtualVersion, base: Base) throws -> MigrationAnalyzer {
        let connection = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        try MigrationFunctions.register(on: connection)
        try connection.execute("ATTACH DATABASE \(SQLLiteral.string(SQLiteConnection.readOnlyURI(path: base.path, immutable: base.isImmutable))) AS base")
        return MigrationAnalyzer(connection: connection, states: [before, after], mappings: [mapping])
    }

    /// The largest string or blob a migration statement may make: the store's size (main file
    /// and WAL: no value read from it can be larger), and at least 64 MiB for what custom steps
    /// compute. A catalog's `randomblob(900000000)` or `printf('%.*c', 2147483647, 'x')` then stops
    /// the migration ("string or blob too big") instead of taking gigabytes of memory and disk.
    static func maximumValueBytes(storeAt path: String) -> Int32 {
        let size = ["", "-wal"].reduce(Int64(0)) { total, suffix in
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + suffix)
            return total + ((attributes?[.size] as? NSNumber)?.int64Value ?? 0)
        }
        return Int32(min(max(size, Int64(minimumValueLimit)), 1_000_000_000))
    }

    /// The value limit of a small store.
    static let minimumValueLimit = 64 << 20

    /// The database the next version is read from.
    struct Base {
        var path: String
        var isImmutable: Bool
        var physical: PhysicalSchema
        var primaryKeys: [PrimaryKeyEntry]
        var isWorkspaceFile: Bool
    }

    /// After steps changed a workspace file, read its schema and keys again.
    private static func materializeBaseAgain(_ base: inout Base, _ state: inout VirtualVersion) throws {
        let connection = try SQLiteConnection(path: base.path, options: SQLiteOpenOptions(mode: .immutable))
        base.physical = try PhysicalSchema.read(from: connection)
        base.primaryKeys = try PrimaryKeyEntry.readAll(from: connection)
        state = VirtualVersion.base(version: state.version, layout: state.layout, schema: "base", physical: base.physical, primaryKeys: base.primaryKeys)
    }

    private static func checkCancellation(_ cancellation: CancellationFlag?, path: String) throws {
        if cancellation?.isCancelled == true { throw MigrationError.interrupted(path: path) }
    }

    /// Runs a stage's catalog steps, then its Swift handler, on a workspace file.
    private static func runSteps(
        _ steps: [CustomStageDefinition.DataStep], handler: (@Sendable (MigrationContext) throws -> Void)?, on file: String,
        state: VirtualVersion, stage: String, valueLimit: Int32
    ) throws -> [Int64] {
        let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .readWrite))
        connection.limitValueLength(to: valueLimit)
        try MigrationFunctions.register(on: connection)
        let runner = DataStepRunner(connection: connection, version: state.version, layout: state.layout, schema: "main")
        do {
            return try connection.inTransaction {
                let rows = try runner.run(steps)
                if let handler { try handler(MigrationContext(runner: runner)) }
                return rows
            }
        } catch let failure as DataStepRunner.Failure {
            throw MigrationError.customStepFailed(path: file, stage: stage, detail: "\(failure.jsonPath): \(failure.reason)")
        } catch let error as SQLiteError where error.primaryResultCode == 19 {
            // A handler's change: the steps broke the version's constraint, not the data as read.
            throw MigrationError.customStepFailed(path: file, stage: stage, detail: "a handler: \(runner.brokenUniqueness(error))")
        } catch let error as SQLiteError {
            throw translate(error, path: file, version: state.version.name, stage: stage)
        }
    }

    /// Writes one version into `file` (a new file) from `base`.
    private static func writeVersion(
        _ state: VirtualVersion, base: Base, into file: String, metadata: StoreMetadata, modelCache: Data?, isFinal: Bool,
        valueLimit: Int32, cancellation: CancellationFlag?
    ) throws -> VersionWriter.Summary {
        do {
            let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .create))
            connection.limitValueLength(to: valueLimit)
            if let cancellation { connection.setProgressHandler { cancellation.isCancelled } }
            try connection.execute("PRAGMA page_size = 4096")
            try connection.execute("PRAGMA auto_vacuum = 2")
            try connection.setJournalMode("OFF")
            try connection.execute("PRAGMA synchronous = OFF")
            try connection.execute("PRAGMA cache_size = -4096")
            try MigrationFunctions.register(on: connection)
            do {
                try connection.execute("ATTACH DATABASE \(SQLLiteral.string(SQLiteConnection.readOnlyURI(path: base.path, immutable: base.isImmutable))) AS base")
            } catch let error as SQLiteError {
                throw MigrationError.readFailed(path: base.path, reason: error.message + " (SQLite code \(error.resultCode))")
            }
            try connection.execute("PRAGMA base.cache_size = -4096")
            let writer = VersionWriter(
                connection: connection, state: state, basePhysical: base.physical, basePrimaryKeys: base.primaryKeys,
                metadata: metadata, modelCache: modelCache, cancellation: cancellation)
            let summary = try connection.inTransaction(.exclusive) { try writer.write() }
            try connection.execute("DETACH DATABASE base")
            if isFinal {
                // Core Data leaves its stores in WAL mode, checkpointed.
                let mode = try connection.setJournalMode("WAL")
                guard mode?.lowercased() == "wal" else {
                    throw MigrationError.writeFailed(path: file, reason: "SQLite would not switch the new store to WAL mode")
                }
                _ = try connection.rows("PRAGMA main.wal_checkpoint(TRUNCATE)")
            }
            return summary
        } catch let error as SQLiteError {
            throw translate(error, path: file, version: state.version.name, stage: state.version.name)
        } catch is CancellationError {
            throw MigrationError.interrupted(path: file)
        }
    }

    /// SQLite's error as the operator should read it.
    static func translate(_ error: SQLiteError, path: String, version: String, stage: String) -> MigrationError {
        let primary = error.primaryResultCode
        if primary == 9 { return .interrupted(path: path) }  // SQLITE_INTERRUPT
        if let range = error.message.range(of: MigrationFunctions.conversionFailurePrefix) {
            return .valueDoesNotConvert(path: path, detail: String(error.message[range.upperBound...]))
        }
        if primary == 18 {  // SQLITE_TOOBIG: a value over maximumValueBytes
            return .customStepFailed(
                path: path, stage: stage,
                detail: "a value would be larger than the store and than \(minimumValueLimit >> 20) MiB (\(error.message))")
        }
        if primary == 19 { return .constraintViolated(path: path, version: version, detail: error.message) }  // SQLITE_CONSTRAINT
        if primary == 13 || primary == 10 || primary == 14 {  // FULL, IOERR, CANTOPEN
            return .writeFailed(path: path, reason: error.message + " (SQLite code \(error.resultCode))")
        }
        return .customStepFailed(path: path, stage: stage, detail: error.message + (ProcessInfo.processInfo.environment["STORERESCUE_DEBUG_SQL"] != nil ? " [\(error.sql ?? "")]" : ""))
    }
}

extension MigrationAnalysis {
    /// Rows per entity at `version`, when the analysis counted that version.
    func rows(atVersion version: String) -> [String: Int64]? {
        rowsByVersion.last { $0.version == version }?.rows
    }
}
