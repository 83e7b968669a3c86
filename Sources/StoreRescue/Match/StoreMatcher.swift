import Foundation

/// Matches a store to the known versions of its app, weighing every kind of evidence, and
/// predicts what the app's latest version will do with it.
///
/// ```swift
/// let catalog = try CatalogLoader.load(path: "Journal.xcdatamodeld")
/// let result = StoreMatcher.match(storePath: "default.store", catalog: catalog)
/// print(result.outcome, result.version ?? "-", result.diagnosis.summary)
/// ```
public enum StoreMatcher {
    public static func match(storePath: String, catalog: Catalog, options: StoreOpenOptions = StoreOpenOptions()) -> MatchResult {
        do {
            // An app that writes the store while it is read in place: read again, from a copy.
            return try OpenedStore.readingConsistently(path: storePath, options: options) { store in
                match(store: store, readout: StoreInspector.read(store: store), catalog: catalog)
            }
        } catch {
            let report = StoreInspector.inspect(path: storePath, options: InspectOptions(open: options))
            return notCoreData(report: report, catalog: catalog)
        }
    }

    /// Matches a store that is already open and read (so `migrate` and `upgrade` weigh exactly
    /// what they go on to transform).
    public static func match(store: OpenedStore, readout: StoreReadout, catalog: Catalog) -> MatchResult {
        match(store: store, readout: readout, catalog: catalog, memo: nil)
    }

    /// `match`, whose diagnosis keeps its assessment in `memo` (or takes it from there), for the
    /// migration engine reading the same store with the same catalog (`AssessmentMemo`).
    static func match(store: OpenedStore, readout: StoreReadout, catalog: Catalog, memo: AssessmentMemo?) -> MatchResult {
        guard readout.isCoreDataStore else { return notCoreData(report: readout.report, catalog: catalog) }
        var matching = MatchWork(readout: readout, store: store, catalog: catalog, memo: memo)
        return matching.run()
    }

    static func notCoreData(report: InspectionReport, catalog: Catalog) -> MatchResult {
        let reason = report.error?.message ?? "\(report.path) is \(report.kind.rawValue), not a Core Data / SwiftData store"
        return MatchResult(
            path: report.path, catalog: catalog.name, outcome: .notCoreData, version: nil, candidates: [],
            diagnosis: Diagnosis(
                prediction: .cannotPredict, errorCode: nil, summary: "Not a Core Data store: nothing to match.",
                reasons: [reason], adoptAs: nil, stages: [], mandatoryAttributes: []),
            storeKind: report.kind, error: report.error)
    }
}

/// One match in progress.
struct MatchWork {
    let readout: StoreReadout
    let store: OpenedStore
    let catalog: Catalog

    var report: InspectionReport { readout.report }
    /// Read by `StoreMatcher.match` only for Core Data stores, whose schema was read.
    var schema: PhysicalSchema { readout.schema ?? PhysicalSchema(tables: [], indexes: [], triggers: [], views: []) }

    /// Entity name → 32-byte hash: the stored hashes, or the model cache's when the metadata has none.
    let evidenceHashes: [String: Data]?
    let evidenceSource: String
    /// Each version's exact layout, built once (nil when the model cannot be laid out).
    let layouts: [String: StoreLayout]
    /// The entities the store names: `Z_PRIMARYKEY` (history aside) and the evidence hashes.
    let storeEntityNames: Set<String>

    /// Where the diagnosis keeps its assessment for the engine (`AssessmentMemo`).
    let memo: AssessmentMemo?

    init(readout: StoreReadout, store: OpenedStore, catalog: Catalog, memo: AssessmentMemo? = nil) {
        self.readout = readout
        self.store = store
        self.catalog = catalog
        self.memo = memo
        if let stored = readout.metadata?.versionHashes, !stored.isEmpty {
            evidenceHashes = stored
            evidenceSource = "stored hashes"
        } else if let model = readout.model {
            evidenceHashes = EntityVersionHasher.versionHashes(for: model)
            evidenceSource = "the model cache's hashes (the metadata has none)"
        } else {
            evidenceHashes = nil
            evidenceSource = "the physical schema only (no hashes, no model cache)"
        }
        var layouts: [String: StoreLayout] = [:]
        for version in catalog.versions where layouts[version.name] == nil {
            layouts[version.name] = try? StoreLayoutBuilder.layout(for: version.model)
        }
        self.layouts = layouts
        storeEntityNames = Set(readout.primaryKeys.filter { !$0.isHistoryEntity }.map(\.name)).union(evidenceHashes?.keys.map { $0 } ?? [])
    }

    mutating func run() -> MatchResult {
        var candidates = catalog.versions.map(candidate(for:))
        let exact = candidates.filter(\.hashesMatch)
        var outcome: MatchResult.Outcome
        var chosen: String?
        var notes: [String] = []
        if exact.count == 1 {
            outcome = .exact
            chosen = exact[0].version
        } else if exact.count > 1 {
            let tieBroken = breakTie(exact.map(\.version), candidates: &candidates)
            if let winner = tieBroken.winner {
                outcome = .exact
                chosen = winner
                notes.append("\(exact.map(\.version).joined(separator: ", ")) have the same hashes; \(winner) was chosen by \(tieBroken.reason)")
            } else {
                outcome = .ambiguous
                chosen = exact.first?.version
            }
        } else {
            let best = candidates.max { $0.score < $1.score }
            let unknown = unknownEvidence()
            let related = catalog.versions.contains { !storeEntityNames.isDisjoint(with: $0.model.entities.map(\.name)) }
            if best == nil || !related {
                outcome = .unknown
            } else {
                outcome = unknown.isEmpty ? .drifted : .newer
            }
            chosen = outcome == .unknown ? nil : best?.version
            notes += unknown
        }
        if let chosen, outcome != .ambiguous, let index = catalog.versions.firstIndex(where: { $0.name == chosen }),
            let latestIndex = catalog.latest.flatMap({ latest in catalog.versions.firstIndex { $0.name == latest.name } }),
            index > latestIndex, outcome == .exact
        {
            outcome = .newer
            notes.append("\(chosen) comes after the current version \(catalog.versions[latestIndex].name): the app would have to go backwards")
        }
        candidates.sort { ($0.hashesMatch ? 1 : 0, $0.score) > ($1.hashesMatch ? 1 : 0, $1.score) }
        do throws(DiagnosisBuilder.DamageMet) {
            let diagnosis = try DiagnosisBuilder(work: self, outcome: outcome, version: chosen, candidates: candidates, notes: notes).build()
            return MatchResult(
                path: report.path, catalog: catalog.name, outcome: outcome, version: chosen, candidates: candidates,
                diagnosis: diagnosis, storeKind: report.kind, error: nil)
        } catch {
            // Damaged pages met while reading the data for the plan (the schema and metadata
            // read): the store is `damaged`, as `inspect --counts` says, with its error and exit
            // 65; the version its hashes matched is kept. A review's match said exact, exit 0,
            // "cannot be planned", with only SQLite's message to tell.
            let access = StoreAccessError.rejected(path: report.path, kind: .damaged, reason: "SQLite failed while reading it: \(error.error)")
            return MatchResult(
                path: report.path, catalog: catalog.name, outcome: outcome, version: chosen, candidates: candidates,
                diagnosis: DiagnosisBuilder.damaged(access, outcome: outcome, version: chosen, notes: notes),
                storeKind: .damaged, error: ErrorSummary(access))
        }
    }

    // MARK: - Evidence per version

    func candidate(for version: CatalogVersion) -> MatchCandidate {
        var differences: [Difference] = []
        let versionHashes = version.versionHashes
        var matching = 0
        var total = 0
        var hashesMatch = false
        if let evidence = evidenceHashes {
            let names = Set(evidence.keys).union(versionHashes.keys)
            total = names.count
            for name in names.sorted() {
                switch (evidence[name], versionHashes[name]) {
                case let (stored?, expected?) where stored == expected: matching += 1
                case (_?, _?):
                    differences.append(Difference(
                        kind: .entityHashDiffers, impact: .identity, entity: name, table: nil, column: nil,
                        detail: "\(name): the store's hash differs from this version's"))
                case (_?, nil):
                    differences.append(Difference(
                        kind: .entityOnlyInStore, impact: .identity, entity: name, table: nil, column: nil,
                        detail: "\(name) is in the store but not in this version"))
                default:
                    differences.append(Difference(
                        kind: .entityOnlyInVersion, impact: .identity, entity: name, table: nil, column: nil,
                        detail: "\(name) is in this version but not in the store"))
                }
            }
            hashesMatch = matching == total && total > 0
        }
        let storedChecksum = readout.metadata?.versionChecksum
        if readout.metadata != nil {
            if storedChecksum == nil {
                differences.append(Difference(
                    kind: .checksumMissing, impact: .identity, entity: nil, table: nil, column: nil,
                    detail: "the store has no NSStoreModelVersionChecksumKey"))
            } else if storedChecksum != version.versionChecksum {
                differences.append(Difference(
                    kind: .checksumDiffers, impact: .identity, entity: nil, table: nil, column: nil,
                    detail: "the store's checksum \(storedChecksum ?? "") is not this version's \(version.versionChecksum)"))
            }
            let storedIdentifiers = readout.metadata?.versionIdentifiers ?? []
            if storedIdentifiers != version.versionIdentifiers {
                differences.append(Difference(
                    kind: .identifiersDiffer, impact: .identity, entity: nil, table: nil, column: nil,
                    detail: "the store's version identifiers \(storedIdentifiers) are not this version's \(version.versionIdentifiers)"))
            }
        }
        if let model = readout.model, readout.metadata?.versionHashes != nil {
            let cached = EntityVersionHasher.versionHashes(for: model)
            if hashesMatch, cached != versionHashes {
                differences.append(Difference(
                    kind: .modelCacheDiffers, impact: .identity, entity: nil, table: nil, column: nil,
                    detail: "the store's model cache is not this version's model, although its stored hashes are"))
            }
        }
        var physical: [Difference] = []
        if let layout = layouts[version.name] {
            physical = SchemaComparison.differences(store: schema, layout: layout)
        }
        differences += physical
        let score = Self.score(matching: matching, total: total, hasHashes: evidenceHashes != nil, physical: physical,
                               checksumMatches: storedChecksum == version.versionChecksum)
        return MatchCandidate(
            version: version.name, score: score, hashesMatch: hashesMatch,
            checksumMatches: storedChecksum == version.versionChecksum, matchingEntities: matching, totalEntities: total,
            differences: differences)
    }

    /// Hash agreement weighs most; the physical schema next; the checksum last.
    static func score(matching: Int, total: Int, hasHashes: Bool, physical: [Difference], checksumMatches: Bool) -> Double {
        let blocking = Double(physical.filter { $0.impact == .blocking }.count)
        let benign = Double(physical.filter { $0.impact == .benign }.count)
        let physicalScore = 1.0 / (1.0 + blocking + 0.25 * benign)
        guard hasHashes, total > 0 else { return physicalScore }
        let hashScore = Double(matching) / Double(total)
        return 0.6 * hashScore + 0.3 * physicalScore + 0.1 * (checksumMatches ? 1 : 0)
    }

    // MARK: - Ties and unknowns

    /// Among versions with the same hashes, the physical schema, then the data, may tell one apart.
    func breakTie(_ names: [String], candidates: inout [MatchCandidate]) -> (winner: String?, reason: String) {
        func blocking(_ name: String) -> Int {
            candidates.first { $0.version == name }?.differences.filter { $0.impact == .blocking }.count ?? .max
        }
        func physicalCount(_ name: String) -> Int {
            candidates.first { $0.version == name }?.differences.filter { $0.impact != .identity }.count ?? .max
        }
        let ranked = names.map { ($0, blocking($0), physicalCount($0)) }.sorted { ($0.1, $0.2) < ($1.1, $1.2) }
        if ranked.count > 1, (ranked[0].1, ranked[0].2) < (ranked[1].1, ranked[1].2) {
            return (ranked[0].0, "its physical schema (indexes, columns) fitting best")
        }
        // Data: a version that requires a value in a column holding NULLs does not fit.
        let tied = ranked.filter { ($0.1, $0.2) == (ranked[0].1, ranked[0].2) }.map(\.0)
        var nullCounts: [String: Int] = [:]
        for name in tied {
            guard let version = catalog.version(named: name), let layout = layouts[name] else { continue }
            let problems = DataEvidence.nullsInRequiredColumns(version: version, layout: layout, readout: readout, connection: store.connection)
            nullCounts[name] = problems.count
            if let index = candidates.firstIndex(where: { $0.version == name }) { candidates[index].differences += problems }
        }
        let fitting = tied.filter { nullCounts[$0] == 0 }
        if fitting.count == 1 { return (fitting[0], "the data: the others require values the rows lack") }
        return (nil, "")
    }

    /// Entities and columns the store has that no known version has.
    func unknownEvidence() -> [String] {
        var knownEntities = Set<String>()
        var knownColumns: [[UInt8]: Set<[UInt8]>] = [:]
        for version in catalog.versions {
            knownEntities.formUnion(version.model.entities.map(\.name))
            if let layout = layouts[version.name] {
                for table in layout.tables {
                    knownColumns[table.name.sqliteNameKey, default: []].formUnion(table.columns.map(\.name.sqliteNameKey))
                }
            }
        }
        var notes = storeEntityNames.subtracting(knownEntities).sorted().map { "entity \($0) is in no known version" }
        if !knownColumns.isEmpty {
            for table in SchemaComparison.comparableTables(schema) {
                guard let known = knownColumns[table.name.sqliteNameKey] else { continue }
                for column in table.columns where !known.contains(column.name.sqliteNameKey) {
                    notes.append("column \(table.name).\(column.name) is in no known version")
                }
            }
        }
        return notes
    }
}
