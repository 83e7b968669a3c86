/// Predicts what the app's latest version does when it opens the store, from a match and the
/// same plan and checks `migrate` runs (`MigrationEngine.assess`): the diagnosis renders the
/// plan, so the prediction and the migration cannot disagree.
struct DiagnosisBuilder {
    let work: MatchWork
    let outcome: MatchResult.Outcome
    let version: String?
    let candidates: [MatchCandidate]
    let notes: [String]

    var catalog: Catalog { work.catalog }
    var metadata: StoreMetadata? { work.readout.metadata }

    /// Reading the store for the plan met pages SQLite cannot read: the store is damaged, and
    /// `StoreMatcher` says so (`damaged(_:)`) rather than "cannot be planned" under exit 0.
    struct DamageMet: Error {
        let error: SQLiteError
    }

    func build() throws(DamageMet) -> Diagnosis {
        if outcome != .notCoreData, outcome != .unknown {
            if let diagnosis = unusableMetadata() ?? compatibleWithTheLatest() { return diagnosis }
        }
        switch outcome {
        case .notCoreData, .unknown:
            return diagnosis(.cannotPredict, nil, "No known version of \(catalog.name) is close to this store: no prediction.",
                             reasons: notes + ["its entities share nothing with the catalog's versions (\(work.evidenceSource))"])
        case .newer:
            return diagnosis(.refusesNewerStore, 134100,
                             "The store is newer than every version the catalog knows: the app must refuse it; never downgrade or restamp it.",
                             reasons: notes + ["nearest known version: \(version ?? "none")"])
        case .ambiguous:
            let tied = candidates.filter(\.hashesMatch).map(\.version)
            // The plan can start from one of them only: `migrate` takes the store as that
            // version (`MigrationEngine.prepare`), so the prediction is that version's.
            if let target = StagePlanner.defaultTarget(catalog),
                let source = StagePlanner.source(amongTied: tied, to: target, in: catalog, storeIdentifiers: metadata?.versionIdentifiers)
            {
                let why = StagePlanner.whyTiedSource(source, to: target, in: catalog)
                let note = "\(tied.joined(separator: ", ")) have the same hashes; the app's migration starts from \(source): \(why)"
                return try DiagnosisBuilder(work: work, outcome: .exact, version: source, candidates: candidates, notes: notes + [note]).exact()
            }
            return diagnosis(.ambiguousVersion, nil,
                             "Versions \(tied.joined(separator: ", ")) have the same version hashes: a staged migration cannot tell them apart (duplicate version checksums).",
                             reasons: ["the store fits each of them equally", "give the versions distinct hashes (a versionHashModifier) before shipping a staged migration"],
                             adoptAs: nil)
        case .drifted:
            return try drifted()
        case .exact:
            return try exact()
        }
    }

    /// A store whose metadata holds no usable `NSStoreModelVersionHashes` (no metadata, a NULL
    /// or unreadable plist, hashes missing, empty or not a dictionary): the match then rests on
    /// the model cache or the schema, but the app compares the metadata's hashes, so what it
    /// does cannot be told (`inspect` reports the metadata as lost). A review had `match` say
    /// "migrates … recognises the store by its entity hashes" of such a store.
    private func unusableMetadata() -> Diagnosis? {
        if let hashes = metadata?.versionHashes, !hashes.isEmpty { return nil }
        let what = metadata == nil ? "the store has no readable metadata (Z_METADATA's plist)" : "its metadata has no usable NSStoreModelVersionHashes (missing, empty, or not a dictionary of data)"
        var reasons = notes + [what, "the app decides by those hashes: whether it migrates (from its models, or the store's model cache) or fails cannot be told from outside"]
        if let version, outcome == .exact || outcome == .drifted {
            reasons.append("the store's \(work.evidenceSource) point to \(version): adopt it as \(version) (metadata written as Core Data writes it) to make it certain")
        }
        return diagnosis(.cannotPredict, nil, "The store's metadata has no version hashes: what the app does with it cannot be predicted.",
                         reasons: reasons, adoptAs: outcome == .exact || outcome == .drifted ? version : nil)
    }

    /// A store whose hashes equal the latest version's, matched as another version (versions
    /// differing only in what hashes leave out: an index, a default, an identifier): the app
    /// finds it compatible and opens it without migrating (`migration-semantics.md` §1). A review
    /// had `match` predict a migration, or a refusal as "newer than every version", of such a store.
    private func compatibleWithTheLatest() -> Diagnosis? {
        // Versions the store fits equally keep their own diagnosis: with stages declared,
        // duplicate checksums stop the staged migration manager before any store is looked at.
        guard outcome != .ambiguous, let stored = metadata?.versionHashes, let latest = catalog.latest, version != latest.name,
              stored == latest.versionHashes,
              catalog.stages.isEmpty || !catalog.duplicateChecksums.contains(where: { $0.contains(latest.name) })
        else { return nil }
        var reasons = notes + [
            "its entity hashes equal \(latest.name)'s: Core Data compares only those (identifiers, indexes and defaults do not count), finds it compatible and opens it without migrating",
            "matched as \(version ?? "no single version"); \(latest.name) differs from it only in what the hashes leave out",
        ]
        let drift = candidates.first { $0.version == latest.name }?.differences.filter { $0.impact != .identity } ?? []
        reasons += drift.prefix(20).map { "as \(latest.name) it differs: \($0.detail) (Core Data leaves that as it is; storerescue migrate would make it \(latest.name)'s)" }
        return diagnosis(.opensAsIs, nil, "The latest version (\(latest.name)) opens it as is: its hashes are \(latest.name)'s.", reasons: reasons)
    }

    /// The plan from `version` and everything that stops it (nil when it cannot be worked out;
    /// thrown when the store's pages cannot be read).
    private func assessment(from version: String) throws(DamageMet) -> (MigrationEngine.Assessment?, String?) {
        do {
            return (try MigrationEngine.assess(
                store: work.store, readout: work.readout, catalog: catalog, from: version, to: nil, handlers: [], depth: .refusalsOnly, memo: work.memo), nil)
        } catch let error as SQLiteError where error.isCorruption {
            throw DamageMet(error: error)
        } catch {
            return (nil, "the plan could not be worked out: \(error)")
        }
    }

    /// The diagnosis of a store found damaged while it was read for the plan: what `inspect`
    /// says of it (`access`: its error, with salvage's and the clean fallback's commands), after
    /// the version its hashes matched.
    static func damaged(_ access: StoreAccessError, outcome: MatchResult.Outcome, version: String?, notes: [String]) -> Diagnosis {
        var reasons = notes
        if let version {
            reasons.append(outcome == .exact ? "its hashes are \(version)'s (match: exact), but its pages cannot all be read" : "nearest version: \(version) (match: \(outcome.rawValue)), but its pages cannot all be read")
        }
        reasons.append(access.description)
        if let hint = access.recoverySuggestion { reasons.append(hint) }
        return Diagnosis(
            prediction: .storeDamaged, errorCode: nil,
            summary: "The store is damaged: SQLite cannot read all of its pages, so the app cannot open or migrate it as it is.",
            reasons: reasons, adoptAs: nil, stages: [], mandatoryAttributes: [])
    }

    private func drifted() throws(DamageMet) -> Diagnosis {
        guard let version, let candidate = candidates.first(where: { $0.version == version }) else {
            return diagnosis(.cannotPredict, nil, "No version to compare with.", reasons: notes)
        }
        var reasons = ["the store's \(work.evidenceSource) match no version of the plan; nearest is \(version) (\(candidate.matchingEntities) of \(candidate.totalEntities) entities agree)"]
        if catalog.versions.first?.name == version {
            reasons.append("the catalog's first version \(version) does not reproduce the shape the app shipped before versioning")
        }
        reasons += candidate.differences.filter { $0.kind != .checksumMissing }.prefix(20).map(\.detail)
        let blocking = candidate.differences.filter { $0.impact == .blocking }
        let adopt = blocking.isEmpty ? version : nil
        var result = diagnosis(.unknownModelVersion, 134504,
                               "Fails with 134504 \"Cannot use staged migration with an unknown model version\": the store matches no known version exactly.",
                               reasons: reasons, adoptAs: adopt)
        if blocking.isEmpty {
            result.reasons.append("every physical difference is benign: the store can be adopted as \(version) (stamped with its hashes and checksum), then migrated")
            let (assessment, _) = try assessment(from: version)
            if let assessment { add(assessment, to: &result, prefix: "after adoption: ") }
        } else {
            result.reasons.append("\(blocking.count) blocking physical differences: correct the catalog's \(version) (or repair the store) before adopting it")
        }
        return result
    }

    private func exact() throws(DamageMet) -> Diagnosis {
        guard let version else { return diagnosis(.cannotPredict, nil, "No version to compare with.", reasons: notes) }
        var reasons = notes
        let blockingDrift = candidates.first { $0.version == version }?.differences.filter { $0.impact == .blocking } ?? []
        reasons += blockingDrift.map { "physical drift: \($0.detail)" }
        let (assessment, failure) = try assessment(from: version)
        guard let assessment else {
            return diagnosis(.cannotPredict, nil, "The migration from \(version) cannot be planned.", reasons: reasons + [failure ?? ""])
        }
        let plan = assessment.plan
        let hasChecksum = metadata?.versionChecksum != nil
        let planErrors = plan.refusals
        if let newer = planErrors.first(where: { $0.code == .storeNewerThanTarget }) {
            return diagnosis(.refusesNewerStore, 134100, "The store is newer than the version the app migrates to (\(plan.targetVersion)).",
                             reasons: reasons + [newer.message])
        }
        if let unknown = planErrors.first(where: { $0.code == .storeVersionNotInStages }) {
            var result = diagnosis(.unknownModelVersion, 134504,
                                   "Fails with 134504 \"Cannot use staged migration with an unknown model version\": the catalog's stages do not name \(version).",
                                   reasons: reasons + [unknown.message, "add \(version) to a stage (a lightweight stage listing it, or a stage starting from it)"])
            result.refusals = assessment.refusals
            return result
        }
        if !planErrors.isEmpty {
            var result = diagnosis(.stagePlanFails, nil, "The catalog's stages are a plan Core Data cannot run: the migration fails on the device.",
                                   reasons: reasons + planErrors.map { "\($0.stage.map { "\($0): " } ?? "")\($0.message) — on the device: \($0.onDevice)" })
            result.refusals = assessment.refusals
            return result
        }
        if plan.hops.isEmpty {
            if !hasChecksum && plan.isStaged {
                reasons.append("it has no NSStoreModelVersionChecksumKey: it opens because its hashes equal \(version)'s, but any later staged migration reports 134504 until it is stamped")
            }
            return diagnosis(.opensAsIs, nil, "The latest version (\(version)) opens it as is.", reasons: reasons,
                             adoptAs: hasChecksum || !plan.isStaged ? nil : version)
        }
        if !hasChecksum && plan.isStaged {
            reasons.insert("the store has no NSStoreModelVersionChecksumKey (written by framework \(metadata?.frameworkVersion.map(String.init) ?? "?")): staged migration (NSStagedMigrationManager) cannot find its version among the stages", at: 0)
            reasons.append("fix: adopt it as \(version) (stamp hashes, digest and checksum exactly as Core Data would), then migrate: " + plan.hops.map(\.summary).joined(separator: "; "))
            var result = diagnosis(.unknownModelVersion, 134504,
                                   "Fails with 134504 \"Cannot use staged migration with an unknown model version\": the store is \(version) but carries no version checksum.",
                                   reasons: reasons, adoptAs: version)
            add(assessment, to: &result, prefix: "after adoption: ")
            return result
        }
        if !hasChecksum {
            reasons.append("it has no NSStoreModelVersionChecksumKey; with no stages declared the app migrates automatically and recognises the store by its entity hashes, which are \(version)'s")
        }
        var result = diagnosis(.migrates, nil, "Migrates from \(version) to \(plan.targetVersion) through \(plan.hops.count) hop\(plan.hops.count == 1 ? "" : "s").",
                               reasons: reasons)
        add(assessment, to: &result, prefix: "")
        if !result.mandatoryAttributes.isEmpty {
            result.prediction = .mandatoryAttributeWithoutValue
            result.errorCode = 134110
            result.summary = "Fails with 134110 \"missing attribute values on mandatory destination attribute\" while migrating from \(version)."
        } else if !assessment.refusals.isEmpty {
            result.prediction = .migrationNotInferable
            result.errorCode = 134140
            result.summary = "Fails while migrating from \(version): a change on the way cannot be inferred (134140)."
        }
        return result
    }

    /// The plan's hops and refusals, as the diagnosis lists them.
    private func add(_ assessment: MigrationEngine.Assessment, to result: inout Diagnosis, prefix: String) {
        result.stages = assessment.plan.hops.map(\.summary)
        result.refusals = assessment.refusals
        for refusal in assessment.refusals {
            let code = refusal.coreDataErrorCode.map { " (\($0))" } ?? ""
            result.reasons.append(prefix + (refusal.hop.isEmpty ? "" : refusal.hop + ": ") + refusal.message + code + " — " + refusal.remedy)
            if refusal.code == .mandatoryValueMissing, let entity = refusal.entity, let property = refusal.property {
                result.mandatoryAttributes.append(MandatoryAttributeProblem(
                    version: refusal.destinationVersion ?? "", entity: entity, attribute: property, rowCount: refusal.rowCount ?? 0,
                    kind: refusal.propertyKind ?? "attribute"))
            }
        }
    }

    private func diagnosis(_ prediction: Diagnosis.Prediction, _ code: Int?, _ summary: String, reasons: [String], adoptAs: String? = nil) -> Diagnosis {
        Diagnosis(prediction: prediction, errorCode: code, summary: summary, reasons: reasons, adoptAs: adoptAs, stages: [], mandatoryAttributes: [])
    }
}

extension PropertyDescription {
    var renamingIdentifierValue: String? {
        switch self {
        case .attribute(let a): return a.renamingIdentifier
        case .relationship(let r): return r.renamingIdentifier
        }
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
