/// Predicts what the app's latest version does when it opens the store, from a match.
struct DiagnosisBuilder {
    let work: MatchWork
    let outcome: MatchResult.Outcome
    let version: String?
    let candidates: [MatchCandidate]
    let notes: [String]

    var catalog: Catalog { work.catalog }
    var metadata: InspectionReport.MetadataSummary? { work.report.metadata }

    func build() -> Diagnosis {
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
            return diagnosis(.ambiguousVersion, nil,
                             "Versions \(tied.joined(separator: ", ")) have the same version hashes: a staged migration cannot tell them apart (duplicate version checksums).",
                             reasons: ["the store fits each of them equally", "give the versions distinct hashes (a versionHashModifier) before shipping a staged migration"],
                             adoptAs: nil)
        case .drifted:
            return drifted()
        case .exact:
            return exact()
        }
    }

    private func drifted() -> Diagnosis {
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
        if blocking.isEmpty {
            reasons.append("every physical difference is benign: the store can be adopted as \(version) (stamped with its hashes and checksum), then migrated")
        } else {
            reasons.append("\(blocking.count) blocking physical differences: correct the catalog's \(version) (or repair the store) before adopting it")
        }
        return diagnosis(.unknownModelVersion, 134504,
                         "Fails with 134504 \"Cannot use staged migration with an unknown model version\": the store matches no known version exactly.",
                         reasons: reasons, adoptAs: adopt)
    }

    private func exact() -> Diagnosis {
        guard let version, let latest = catalog.latest,
            let from = catalog.versions.firstIndex(where: { $0.name == version }),
            let to = catalog.versions.firstIndex(where: { $0.name == latest.name })
        else { return diagnosis(.cannotPredict, nil, "No version to compare with.", reasons: notes) }
        // run() reports a store ahead of the current version as newer; never build a backwards range.
        guard from <= to else {
            return diagnosis(.refusesNewerStore, 134100, "The store is newer than the current version \(latest.name).", reasons: notes)
        }
        var reasons = notes
        let blockingDrift = candidates.first { $0.version == version }?.differences.filter { $0.impact == .blocking } ?? []
        reasons += blockingDrift.map { "physical drift: \($0.detail)" }
        let hasChecksum = metadata?.versionChecksum != nil
        if from == to {
            if !hasChecksum {
                reasons.append("it has no NSStoreModelVersionChecksumKey: it opens because its hashes equal \(version)'s, but any later staged migration reports 134504 until it is stamped")
            }
            return diagnosis(.opensAsIs, nil, "The latest version (\(version)) opens it as is.", reasons: reasons,
                             adoptAs: hasChecksum ? nil : version)
        }
        let stages = (from..<to).map { stageDescription(catalog.versions[$0].name, catalog.versions[$0 + 1].name) }
        let mandatory = mandatoryProblems(from: from, to: to)
        let mandatoryReasons = mandatory.map {
            "\($0.version) adds the required \($0.kind) \($0.entity).\($0.attribute)\($0.kind == "attribute" ? " with no default" : "") while \($0.rowCount) \($0.entity) rows exist"
        }
        if !hasChecksum {
            reasons.insert("the store has no NSStoreModelVersionChecksumKey (written by framework \(metadata?.frameworkVersion.map(String.init) ?? "?")): staged migration (NSStagedMigrationManager) cannot find its version among the stages", at: 0)
            reasons.append("fix: adopt it as \(version) (stamp hashes, digest and checksum exactly as Core Data would), then migrate: " + stages.joined(separator: "; "))
            reasons += mandatoryReasons.map { "after adoption: \($0) (134110)" }
            var result = diagnosis(.unknownModelVersion, 134504,
                                   "Fails with 134504 \"Cannot use staged migration with an unknown model version\": the store is \(version) but carries no version checksum.",
                                   reasons: reasons, adoptAs: version)
            result.stages = stages
            result.mandatoryAttributes = mandatory
            return result
        }
        if !mandatory.isEmpty {
            var result = diagnosis(.mandatoryAttributeWithoutValue, 134110,
                                   "Fails with 134110 \"missing attribute values on mandatory destination attribute\" while migrating from \(version).",
                                   reasons: reasons + mandatoryReasons + ["give the attribute a default, or a custom stage that fills it"])
            result.stages = stages
            result.mandatoryAttributes = mandatory
            return result
        }
        var result = diagnosis(.migrates, nil, "Migrates from \(version) to \(latest.name) through \(stages.count) stage\(stages.count == 1 ? "" : "s").",
                               reasons: reasons)
        result.stages = stages
        return result
    }

    private func stageDescription(_ from: String, _ to: String) -> String {
        if let stage = catalog.stages.first(where: { $0.from == from && $0.to == to }) {
            return "\(from) → \(to) (\(stage.kind.rawValue))"
        }
        return "\(from) → \(to) (lightweight, inferred: no stage declared)"
    }

    /// Required attributes each later version adds without a default, on entities that have rows,
    /// skipping steps the catalog declares as custom (their code fills values).
    private func mandatoryProblems(from: Int, to: Int) -> [MandatoryAttributeProblem] {
        var problems: [MandatoryAttributeProblem] = []
        guard let storeVersion = catalog.versions[safe: from] else { return [] }
        for step in from..<to {
            let previous = catalog.versions[step].model
            let next = catalog.versions[step + 1]
            if catalog.stages.contains(where: { $0.from == catalog.versions[step].name && $0.to == next.name && $0.kind == .custom }) { continue }
            for entity in next.model.entities {
                guard let before = previous.entity(named: entity.name) ?? previous.entities.first(where: { $0.name == entity.renamingIdentifier }) else { continue }
                let existing = Set(previous.allProperties(of: before).flatMap { [$0.name] + ($0.renamingIdentifierValue.map { [$0] } ?? []) })
                var required: [(name: String, renamed: String?, kind: String)] = entity.attributes
                    .filter { !$0.isOptional && !$0.isTransient && $0.defaultValue == nil }
                    .map { ($0.name, $0.renamingIdentifier, "attribute") }
                required += entity.relationships.filter { !$0.isOptional && !$0.isTransient }
                    .map { ($0.name, $0.renamingIdentifier, "relationship") }
                for property in required {
                    guard !existing.contains(property.name), !existing.contains(property.renamed ?? property.name) else { continue }
                    let source = storeVersion.model.entity(named: before.name) ?? before
                    let rows = work.layouts[storeVersion.name].flatMap {
                        DataEvidence.rowCount(of: source, in: storeVersion.model, layout: $0, readout: work.readout, connection: work.store.connection)
                    } ?? 0
                    if rows > 0 {
                        problems.append(MandatoryAttributeProblem(
                            version: next.name, entity: entity.name, attribute: property.name, rowCount: rows, kind: property.kind))
                    }
                }
            }
        }
        return problems
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
