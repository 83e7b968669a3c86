import Foundation

extension MatchResult {
    /// The match for people: the verdict, the diagnosis, then the evidence per version. A store
    /// that could not be read is its error; one found damaged once matched (`isDamagedOnceMatched`)
    /// is the whole report, its error printed apart (the CLI: on stderr).
    public func renderText(maximumDifferences: Int = 12) -> String {
        var out = TextTableWriter()
        out.line(path)
        out.field("Catalog", catalog)
        if let error, !isDamagedOnceMatched {
            out.blank()
            out.error(error)
            return out.text
        }
        out.field("Outcome", outcome.rawValue + (version.map { outcome == .exact ? ": \($0)" : " (nearest: \($0))" } ?? ""))
        if isDamagedOnceMatched { out.field("Store", "damaged: SQLite cannot read all of its pages") }

        out.section("Diagnosis")
        out.line("  " + diagnosis.summary)
        for reason in diagnosis.reasons { out.line("  - " + reason) }
        if let adopt = diagnosis.adoptAs { out.field("Adopt as", adopt) }
        if !diagnosis.stages.isEmpty { out.field("Stages", diagnosis.stages.joined(separator: ", ")) }

        guard !candidates.isEmpty else { return out.text }
        out.section("Candidates")
        var rows = [["  version", "score", "hashes", "checksum", "entities", "blocking", "benign"]]
        for candidate in candidates {
            rows.append([
                "  " + candidate.version, String(format: "%.2f", candidate.score), candidate.hashesMatch ? "match" : "differ",
                candidate.checksumMatches ? "match" : "—", "\(candidate.matchingEntities)/\(candidate.totalEntities)",
                "\(candidate.differences.filter { $0.impact == .blocking }.count)",
                "\(candidate.differences.filter { $0.impact == .benign }.count)",
            ])
        }
        out.table(rows)
        if let best = candidates.first(where: { $0.version == version }) ?? candidates.first, !best.differences.isEmpty {
            out.section("Differences from \(best.version)")
            out.table(best.differences.prefix(maximumDifferences).map { ["  " + $0.impact.rawValue, $0.detail] })
            if best.differences.count > maximumDifferences {
                out.line("  … and \(best.differences.count - maximumDifferences) more (see --json)")
            }
        }
        return out.text
    }
}

extension MatchResult {
    /// Found damaged while it was read for the diagnosis, after it was matched: the report has
    /// an error (exit 65) and the versions weighed.
    public var isDamagedOnceMatched: Bool { error != nil && diagnosis.prediction == .storeDamaged }
}
