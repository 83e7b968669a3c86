/// The assessments (`MigrationEngine.assess`) made of one store while one command reads it, so
/// that the same path is worked out, and its data asked, once.
///
/// Why: `MigrationEngine.prepare` matches the store first, and `match`'s diagnosis assesses the
/// path from the store's version to the default target (`DiagnosisBuilder`); the engine then
/// assesses the same path again for itself, one scan per table of the store each time. On the
/// migrate benchmark's store (500,000 rows, 99 MB) the diagnosis's scan took 0.78–0.83 s and the
/// engine's 1.14–1.15 s, and `upgrade` reads the store twice (in place, then its retained
/// snapshot): four scans where two answer everything. With a memo, the diagnosis makes the
/// engine's assessment, as deep as the engine needs it (`depth`), and the engine takes it.
///
/// What makes a reuse sound: the same store (the memo lives for one `prepare` of one opened
/// store: callers make one per reading), the same catalog value (the caller passes the catalog
/// it passes to `prepare`), and the same question: `from`, `to` exactly as asked (`nil`, the
/// default target, is another key than that target named: the plan says how the target was
/// chosen), no Swift handlers (they can add refusals: an assessment with handlers is never
/// kept nor taken from the memo), and a depth at least the one asked for. A deeper analysis
/// holds everything a shallower one does, and the same refusals (`MigrationAnalyzer.analyse`:
/// the depth adds only forecasts and discarded counts). A failed assessment is not kept: the
/// next caller makes it again and meets the error itself.
///
/// One thread uses a memo (the command's reading thread).
final class AssessmentMemo {
    /// How deep to assess when a shallower assessment is asked for: the deepest any caller of
    /// this memo will ask.
    let depth: MigrationAnalyzer.Depth
    private var assessments: [Key: (depth: MigrationAnalyzer.Depth, assessment: MigrationEngine.Assessment)] = [:]

    private struct Key: Hashable {
        var from: String
        var to: String?
    }

    init(depth: MigrationAnalyzer.Depth) {
        self.depth = depth
    }

    /// The assessment from `from` to `to`, at least as deep as `depth`: the one made earlier, or
    /// `make`'s, made at the deeper of `depth` and the memo's and kept.
    func assessment(
        from: String, to: String?, depth requested: MigrationAnalyzer.Depth,
        make: (MigrationAnalyzer.Depth) throws -> MigrationEngine.Assessment
    ) rethrows -> MigrationEngine.Assessment {
        let key = Key(from: from, to: to)
        if let kept = assessments[key], Self.rank(kept.depth) >= Self.rank(requested) { return kept.assessment }
        let depth = Self.rank(depth) > Self.rank(requested) ? depth : requested
        let made = try make(depth)
        assessments[key] = (depth, made)
        return made
    }

    /// Depths by what they hold: each holds everything the ones before it do.
    static func rank(_ depth: MigrationAnalyzer.Depth) -> Int {
        switch depth {
        case .refusalsOnly: return 0
        case .full: return 1
        case .forecast: return 2
        }
    }
}
