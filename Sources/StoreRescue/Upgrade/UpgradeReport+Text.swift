import Foundation

extension UpgradeReport {
    /// The report as people read it: the phases with their timings, then the backup, what was
    /// adopted, the hops and what they discard, refusals with what to try, the fallback's
    /// incident, and the outcome.
    public func renderText() -> String {
        var out = TextTableWriter()
        let verb = command == "adopt" ? "Adopt" : "Upgrade"
        out.line("\(dryRun ? "\(verb) plan for" : verb) \(store)")
        out.field("Catalog", catalog)
        if let source { out.field("Store version", "\(source.version) (\(source.choice))") }
        if let target { out.field("Target", target.version) }
        for line in recovered { out.line("  recovered: \(line)") }
        if !phases.isEmpty {
            out.section("Phases")
            out.table(phases.map { phase in
                [
                    "  \(phase.name)", phase.status,
                    phase.status == "predicted" || phase.status == "skipped" ? "" : String(format: "%.2f s", phase.seconds), phase.detail,
                ]
            })
        }
        if let backup {
            out.section("Backup")
            out.line("  \(backup.path) (\(backup.kind), \(backup.size) bytes\(backup.kind == "snapshot" ? " of \(backup.snapshotSize)" : ""))")
            if let sha256 = backup.sha256 { out.line("  SHA-256 \(sha256)") }
            if let manifest = backup.manifest { out.line("  manifest \(manifest)") }
            out.line("  verified: \(backup.verified ? "yes" : "no")\(backup.integrityCheck.map { ", \($0)" } ?? "")")
        }
        // Already current: nothing is stamped, even where the metadata differs (a store newer by
        // what hashes leave out; one stamped as a version of the same hashes as the target).
        if let adoption, adoption.isNeeded, status != .alreadyCurrent {
            out.section("Phase 1 — adopt as \(adoption.version)")
            for change in adoption.changes { out.line("  \(change.key): \(change.before) → \(change.after)") }
        }
        if let migration, !migration.hops.isEmpty {
            out.section("Phase 2 — migrate")
            for hop in migration.hops {
                let discarded = hop.removedEntities.map { "\($0.count) \($0.name) rows (entity removed)" }
                    + hop.discardedValues.filter { $0.count > 0 }.map { "\($0.count) values of \($0.name)" }
                    + hop.discardedLinks.filter { $0.count > 0 }.map { "\($0.count) links of \($0.name)" }
                out.line("  \(hop.from) → \(hop.to) (\(hop.kind)): discards \(discarded.isEmpty ? "nothing" : discarded.joined(separator: "; "))")
            }
            // What the run did when it ran, else the forecast.
            if let result = migration.result {
                if !result.carriedColumns.isEmpty { out.line("  carried with their values (the app's own columns): \(result.carriedColumns.joined(separator: ", "))") }
                for column in result.leftOutColumns { out.line("  left out: column \(MigrationReport.leftOutText(column))") }
                if !result.carriedIndexes.isEmpty {
                    out.line("  carried (the app's own indexes): \(result.carriedIndexes.map { "\($0.index) on \($0.to)" }.joined(separator: ", "))")
                }
                for index in result.leftOutIndexes { out.line("  left out: index \(MigrationReport.leftOutText(index))") }
            } else {
                for line in MigrationReport.ownColumnLines(carried: migration.carriedColumns, leftOut: migration.leftOutColumns) {
                    out.line("  the app's own column, \(line)")
                }
                for line in MigrationReport.indexLines(carried: migration.carriedIndexes, leftOut: migration.leftOutIndexes) { out.line("  " + line) }
            }
        }
        // Faults of the catalog (and a store newer than it) are not the store's: the clean
        // fallback never applies to them (a review found its advice printed anyway). One is
        // enough, as for the run (`refuseForTheCatalog`).
        let isCatalogsFault = refusals.contains(where: \.isCatalogsFault)
        if !refusals.isEmpty {
            out.section(isCatalogsFault ? "Refused: the catalog must change, not the store" : "Cannot be saved as it is")
            for refusal in refusals {
                let code = refusal.coreDataErrorCode.map { " (\($0))" } ?? ""
                out.line("  - \(refusal.hop.isEmpty ? "" : refusal.hop + ": ")\(refusal.message)\(code)")
                if !refusal.remedy.isEmpty { out.line("    Try: \(refusal.remedy)") }
            }
        }
        if let fallback {
            out.section("Fallback to a clean store")
            for line in fallback.renderText().split(separator: "\n", omittingEmptySubsequences: false) { out.line("  " + line) }
        }
        for note in notes { out.line("  note: \(note)") }
        if let error {
            out.blank()
            out.error(error)
            return out.text
        }
        out.section("Outcome")
        let prefix = dryRun ? "Dry run — would end: " : ""
        switch status {
        case .upgraded:
            if let published {
                let rows = published.rowsByEntity.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                out.line("  \(prefix)Upgraded to \(published.version) in \(String(format: "%.2f", seconds)) s (\(rows)); match: \(published.matchOutcome).")
            } else {
                out.line("  \(prefix)upgraded to \(target?.version ?? "the target"); nothing was written.")
            }
        case .adoptedOnly:
            out.line("  \(prefix)\(dryRun ? "adopted" : "Adopted") as \(adoption?.version ?? "its version") (no migration needed)\(dryRun ? "; nothing was written" : "; match: \(published?.matchOutcome ?? "exact")").")
        case .alreadyCurrent: out.line("  Already exactly at \(target?.version ?? adoption?.version ?? "the target"): nothing to do, nothing written.")
        case .refused where command == "adopt":
            // adopt has no --on-failure: what to try is each refusal's.
            out.line("  Refused: nothing was changed.")
        case .refused where isCatalogsFault:
            out.line("  Refused: nothing was changed. Correct the catalog as said above; --on-failure clean does not apply (the store is not damaged).")
        case .refused: out.line("  Refused: nothing was changed. Run with --on-failure clean to quarantine the store and start clean with every row that can be saved.")
        case .fellBackToClean:
            if dryRun {
                out.line("  \(prefix)fell back to a clean store (--on-failure clean); nothing was written.")
            } else {
                out.line("  Fell back to a clean \(fallback?.cleanStore?.version ?? "") store; the original is in \(fallback?.quarantine ?? "the quarantine"). To put it back: \(fallback?.restoreCommand ?? "")")
            }
        case .failed: out.line("  Failed.")
        }
        return out.text
    }
}
