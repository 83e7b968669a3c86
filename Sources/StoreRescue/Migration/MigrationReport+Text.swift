import Foundation

extension MigrationReport {
    /// How many refusals the text lists before saying how many more there are.
    static let refusalsShownAsText = 50

    /// What match said of a store taken as `source.version`: "matched exactly" only when it was
    /// (a review's ambiguous and newer stores were said to be).
    static func howMatched(_ source: Source) -> String {
        switch source.matchOutcome {
        case MatchResult.Outcome.ambiguous.rawValue:
            return "matched by its hashes, which other versions share too (match: ambiguous)"
        case MatchResult.Outcome.newer.rawValue where source.matchVersion == source.version:
            return "matched exactly; match says newer: a version after the catalog's current one"
        case MatchResult.Outcome.newer.rawValue:
            return "matched by its hashes; match says newer \(source.matchVersion ?? ""), a later version that differs only in what hashes leave out"
        default:
            return "matched exactly"
        }
    }

    /// Each own column carried (`carried ZENTRY.ZAPPNOTE → ZNOTE.ZAPPNOTE (TEXT)`) or left out.
    static func ownColumnLines(carried: [MigrationAnalysis.CarriedColumn], leftOut: [MigrationAnalysis.LeftOutColumn]) -> [String] {
        carried.map { column in
            let type = column.declaredType.map { $0.isEmpty ? "no declared type" : $0 }
                ?? "no declared type: the store's \(column.storeType) is not a plain type name; values kept as they are"
            return "carried: \(column.column) → \(column.to) (\(type)), with its values"
        } + leftOut.map { "left out: \(leftOutText($0))" }
    }

    /// Each index of the store the target does not lay out: carried (`index carried:
    /// ZAPPNOTE_IDX on ZENTRY → ZNOTE`) or left out, with why.
    static func indexLines(carried: [MigrationAnalysis.CarriedIndex], leftOut: [MigrationAnalysis.LeftOutIndex]) -> [String] {
        carried.map { "index carried: \($0.index) on \($0.table) → \($0.to)" } + leftOut.map { "index left out: \(leftOutText($0))" }
    }

    /// `MYTITLE_IDX on ZENTRY (it indexes ZTITLE, a column of the model: …)`.
    static func leftOutText(_ index: MigrationAnalysis.LeftOutIndex) -> String {
        "\(index.index) on \(index.table) (\(index.reason))"
    }

    /// `ZENTRY.ZX at V1 → V2: 5 values discarded (V2 lays out a column of that name in ZENTRY)`.
    static func leftOutText(_ column: MigrationAnalysis.LeftOutColumn) -> String {
        let values = column.discardsData ? "\(column.values) values discarded" : "\(column.values) computed values, not data"
        return "\(column.column) at \(column.hop): \(values) (\(column.reason))"
    }

    /// The report for people: what the store is, the plan hop by hop (only what changes), what
    /// is discarded, the refusals with what to do (the first 50), and the result.
    public func renderText() -> String {
        var out = TextTableWriter()
        out.line("\(dryRun ? "Migration plan for" : "Migrate") \(store)\(output.map { " → \($0)" } ?? "")")
        out.field("Catalog", catalog)
        if let error {
            out.blank()
            out.error(error)
            return out.text
        }
        if let source {
            let how = source.choice == "matched" ? Self.howMatched(source) : source.choice == "adopted" ? "adopted: its tables fit, it carries no hashes" : "given with --from"
            out.field("Store version", "\(source.version) (\(how))")
        }
        if let target {
            var why = target.choice == "requested" ? "given with --to" : target.choice == "endOfStages" ? "the last version the stages reach" : "the catalog's current version"
            if let current = target.catalogCurrent, current != target.version { why += "; the catalog's current version is \(current)" }
            out.field("Target", "\(target.version) (\(why))")
            out.field("Migration", target.staged ? "staged (the catalog declares stages)" : "automatic lightweight (no stages declared)")
        }
        for note in notes { out.line("  note: \(note)") }
        for hop in hops {
            let how: String
            switch hop.origin {
            case "bridge": how = "lightweight, inferred to reach \(hop.stage ?? "the next stage")"
            case "automatic": how = "lightweight, automatic: no stages"
            default: how = hop.kind + (hop.stage.map { ", \($0)" } ?? "")
            }
            out.section("Hop \(hop.from) → \(hop.to) (\(how))")
            for entity in hop.entities {
                var header = "  \(entity.name)"
                if entity.change != "kept" { header += " (\(entity.change))" }
                if let rows = entity.rows { header += ": \(rows) rows" }
                if let from = entity.sourceTable, from != entity.destinationTable { header += ", moved from \(from) to \(entity.destinationTable)" }
                if let number = entity.sourceNumber, number != entity.destinationNumber { header += ", Z_ENT \(number) → \(entity.destinationNumber)" }
                out.line(header)
                var rows: [[String]] = []
                for property in entity.attributes + entity.relationships where property.change != "kept" {
                    rows.append(["    + \(property.name)", property.change, property.value])
                }
                for name in entity.removedAttributes { rows.append(["    - \(name)", "removed", ""]) }
                for name in entity.removedRelationships { rows.append(["    - \(name)", "removed", ""]) }
                out.table(rows)
                for rename in entity.likelyRenames {
                    out.line("    warning: \(rename.removed) is removed and \(rename.added) (\(rename.type.modelFileName)) added with no renaming identifier: if it is a rename, its values are lost (set \(rename.added)'s renaming identifier to \(rename.removed))")
                }
            }
            for creation in hop.creations {
                out.line("  creates one \(creation.entity) per \(creation.forEach)\(creation.condition.map { " where \($0)" } ?? "")\(creation.links.isEmpty ? "" : ", linked through \(creation.links.joined(separator: ", "))")")
            }
            let discarded = hop.removedEntities.map { "\($0.count) \($0.name) rows (entity removed)" }
                + hop.discardedValues.filter { $0.count > 0 }.map { "\($0.count) values of \($0.name)" }
                + hop.discardedLinks.filter { $0.count > 0 }.map { "\($0.count) links of \($0.name)" }
            out.line("  discarded: " + (discarded.isEmpty ? "nothing" : discarded.joined(separator: "; ")))
        }
        if !carriedColumns.isEmpty || !leftOutColumns.isEmpty {
            out.section("The app's own columns (no version maps them)")
            for line in Self.ownColumnLines(carried: carriedColumns, leftOut: leftOutColumns) { out.line("  " + line) }
        }
        if !carriedIndexes.isEmpty || !leftOutIndexes.isEmpty {
            out.section("Indexes of the store the target does not lay out")
            for line in Self.indexLines(carried: carriedIndexes, leftOut: leftOutIndexes) { out.line("  " + line) }
        }
        let clearing = linksToClear.filter { $0.count > 0 }
        if status == .wouldMigrate, !clearing.isEmpty {
            out.blank()
            out.line("Links to clear (the object they name is not of the relationship's kind at \(target?.version ?? "the target"): discarded, moved out of its hierarchy, or already missing): "
                + clearing.map { "\($0.name) \($0.count)" }.joined(separator: ", "))
        }
        if !refusals.isEmpty {
            out.section("Refused")
            // A catalog can hold 100,000 mistakes; a person reads the first ones (JSON has all).
            for refusal in refusals.prefix(Self.refusalsShownAsText) {
                let code = refusal.coreDataErrorCode.map { " (\($0))" } ?? ""
                out.line("  - \(refusal.hop.isEmpty ? "" : refusal.hop + ": ")\(refusal.message)\(code)")
                out.line("    Try: \(refusal.remedy)")
            }
            if refusals.count > Self.refusalsShownAsText {
                out.line("  … and \(refusals.count - Self.refusalsShownAsText) more refusals (all of them with --json)")
            }
        }
        let warnings = planIssues.filter { $0.severity == .warning }
        if !warnings.isEmpty {
            out.section("Plan warnings")
            for issue in warnings { out.line("  - \(issue.message): \(issue.onDevice)") }
        }
        out.section("Outcome")
        switch status {
        case .alreadyAtTarget: out.line("  The store is already at \(target?.version ?? "the target"): nothing to do, nothing written.")
        case .refused: out.line("  Refused: nothing was written.")
        case .wouldMigrate:
            out.line("  Dry run: the migration can run; nothing was written.")
            if !requiredValuesAlreadyMissing.isEmpty {
                out.line("  Already in the store, carried as they are unless a custom step fills them (Core Data checks required values only when such an object is saved: the app must give them a value then):")
                for gap in requiredValuesAlreadyMissing { out.line("    - \(gap.summary)") }
            }
        case .failed: out.line("  Failed.")
        case .migrated:
            guard let result else { break }
            let rows = result.rowsByEntity.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            out.line("  Migrated in \(String(format: "%.2f", result.seconds)) s: \(result.path) (\(rows))")
            let verification = result.verification
            // A target after the catalog's current version (`--to`): match calls it newer.
            let afterCurrent = verification.matchOutcome == "newer" && verification.matchVersion == target?.version
                ? " (its hashes exactly; the catalog's current version is \(target?.catalogCurrent ?? "another"))" : ""
            out.line("  Verified: \(verification.integrityCheck) \(verification.integrityOK ? "ok" : "FAILED"), \(verification.danglingLinks) dangling links, \(verification.missingRequiredValues) missing required values, match: \(verification.matchOutcome) \(verification.matchVersion ?? "")\(afterCurrent)")
            if !verification.preexistingMissingValues.isEmpty {
                out.line("  Already in the store before the migration (Core Data checks required values only when such an object is saved: the app must give them a value then):")
                for gap in verification.preexistingMissingValues { out.line("    - \(gap.summary)") }
            }
            let cleared = result.clearedLinks.filter { $0.value > 0 }
            if !cleared.isEmpty { out.line("  Cleared links (the object they named was discarded, moved out of the relationship's kind, or already missing): " + cleared.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) }
            if !result.carriedTables.isEmpty { out.line("  Carried over unchanged: \(result.carriedTables.joined(separator: ", "))") }
            if !result.leftOutTables.isEmpty { out.line("  Left out: \(result.leftOutTables.joined(separator: ", "))") }
            if !result.carriedColumns.isEmpty { out.line("  Carried over with their values (the app's own columns): \(result.carriedColumns.joined(separator: ", "))") }
            for column in result.leftOutColumns { out.line("  Left out: column \(Self.leftOutText(column))") }
            if !result.carriedIndexes.isEmpty {
                out.line("  Carried over (the app's own indexes): \(result.carriedIndexes.map { "\($0.index) on \($0.to)" }.joined(separator: ", "))")
            }
            for index in result.leftOutIndexes { out.line("  Left out: index \(Self.leftOutText(index))") }
            out.line("  Metadata stamped for \(target?.version ?? "") (framework \(result.frameworkVersion)); Z_MODELCACHE \(result.modelCacheWritten ? "holds the target model" : "left empty (Core Data fills it on the next save)")")
        }
        return out.text
    }
}
