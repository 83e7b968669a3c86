/// Turns a catalog's stages into the hops a store goes through, emulating Core Data's
/// `NSStagedMigrationManager` (and SwiftData's `SchemaMigrationPlan`, which runs on it) as the
/// field notes describe it (`migration-semantics.md` §3, seed 001):
///
/// - a lightweight stage listing versions takes the store in **one** inferred hop from its
///   version to the latest version listed (#1/#2); the order inside the list does not matter
///   (#3); consecutive such stages behave as one (#1: `[V4], [V5], [V6]` = `[V4, V5, V6]`);
/// - pair stages (`from`/`to`, SwiftData's form and custom stages) run one hop each and chain
///   by sharing endpoints;
/// - a custom stage whose `from` is later than the store's version is reached by one more
///   inferred hop when a lightweight stage precedes it (#5: V6 → V7 before the custom V7 → V8);
///   without one, Core Data skips the custom stage and fails (#6) — refused here up front;
/// - every version a store can be at must be named by a stage (#7), else 134504;
/// - the manager migrates to the latest version the stages name, whatever the model's current
///   version says (#9);
/// - with no stages at all, the app migrates automatically: one inferred hop from the store's
///   version straight to the catalog's current version.
///
/// ```swift
/// let issues = StagePlanner.issues(in: catalog)              // what catalog show reports
/// let plan = StagePlanner.plan(catalog: catalog, from: "V3", to: nil)
/// ```
public enum StagePlanner {
    /// Every problem of the catalog's stages, whatever store meets them (for `catalog show`).
    /// Errors fail on the device for every store; warnings for stores at particular versions.
    public static func issues(in catalog: Catalog) -> [PlanIssue] {
        guard !catalog.stages.isEmpty else { return [] }
        var issues = structuralIssues(catalog)
        let claimed = Set(catalog.stages.flatMap(\.claimedVersions))
        let current = catalog.latest?.name
        for version in catalog.versions where !claimed.contains(version.name) {
            if version.name == current {
                issues.append(PlanIssue(
                    .error, .currentVersionNotInStages,
                    "the app's current version \(version.name) is named by no stage",
                    onDevice: "the staged migration ends at \(endOfStages(catalog) ?? "the last staged version"), not at the model the app opens: the app then fails to open the store (134100, model incompatible)"))
            } else {
                issues.append(PlanIssue(
                    .warning, .versionNotInStages, "version \(version.name) is named by no stage",
                    onDevice: "a store at \(version.name) fails with 134504 \"Cannot use staged migration with an unknown model version\""))
            }
        }
        return issues
    }

    /// The plan for a store at version `from`, to `to` (nil: the latest version the stages
    /// reach, or with no stages the catalog's current version).
    public static func plan(catalog: Catalog, from: String, to requested: String?) -> MigrationPlan {
        let isStaged = !catalog.stages.isEmpty
        let target = requested ?? defaultTarget(catalog) ?? from
        let choice: MigrationPlan.TargetChoice = requested != nil ? .requested : isStaged ? .endOfStages : .catalogLatest
        var plan = MigrationPlan(
            sourceVersion: from, targetVersion: target, targetChoice: choice, isStaged: isStaged, hops: [], issues: [], notes: [])
        let names = catalog.versions.map(\.name)
        for (role, name) in [("store", from), ("target", target)] where !names.contains(name) {
            plan.issues.append(PlanIssue(
                .error, .unknownVersion, "the \(role) version \"\(name)\" is not in the catalog (\(names.joined(separator: ", ")))",
                onDevice: "no model of that name: nothing can be planned"))
        }
        guard plan.issues.isEmpty else { return plan }
        if requested == nil, let current = catalog.latest?.name, target != current, isStaged {
            plan.notes.append("the stages end at \(target), not at the catalog's current version \(current): NSStagedMigrationManager migrates to the latest version its stages name (seed 001 #9)")
        }
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        guard let start = index[from], let end = index[target] else { return plan }
        if start > end {
            plan.issues.append(PlanIssue(
                .error, .storeNewerThanTarget, "the store is at \(from), later than the target \(target)",
                onDevice: "Core Data never migrates backwards: the app refuses a store written by a newer version (134100)"))
            return plan
        }
        if start == end { return plan }
        guard isStaged else {
            plan.hops = [MigrationHop(from: from, to: target, kind: .lightweight, origin: .automatic)]
            return plan
        }
        plan.issues = issues(in: catalog).filter { issue in
            switch issue.code {
            case .versionNotInStages: return false  // only the store's own version matters here
            case .currentVersionNotInStages: return requested == nil
            default: return issue.severity == .error
            }
        }
        guard catalog.stages.contains(where: { $0.claimedVersions.contains(from) }) else {
            plan.issues.append(PlanIssue(
                .error, .storeVersionNotInStages, "the store's version \(from) is named by no stage",
                onDevice: "fails with 134504 \"Cannot use staged migration with an unknown model version\""))
            return plan
        }
        guard plan.refusals.isEmpty else { return plan }
        plan.hops = hops(catalog: catalog, from: start, to: end, index: index, issues: &plan.issues)
        return plan
    }

    /// The version a store is migrated to when no `--to` is given: the latest version the
    /// stages name (`NSStagedMigrationManager` migrates there, whatever the model's current
    /// version says: seed 001 #9), or with no stages the catalog's current version. The one
    /// rule: the plan, `MigrationEngine.prepare` (which version a store after the catalog's
    /// current one is taken as) and `upgrade`'s clean fallback all use it. nil: no version.
    public static func defaultTarget(_ catalog: Catalog) -> String? {
        catalog.stages.isEmpty ? catalog.latest?.name : endOfStages(catalog)
    }

    /// The version `upgrade`'s clean fallback writes when no plan says which (the store could
    /// not be read): the later, by catalog order, of the catalog's current version and the end
    /// of its stages. Not `defaultTarget` alone: stages that end before the current version
    /// would make a clean store of a version the app cannot open (a review: stages V1 → V2 with
    /// V3 current gave a clean V2 store); the plan refuses such a catalog when it has a hop to
    /// run, and an unreadable store has none.
    public static func cleanStoreTarget(_ catalog: Catalog) -> String? {
        let names = catalog.versions.map(\.name)
        let candidates = [catalog.latest?.name, defaultTarget(catalog)].compactMap { $0 }
        return candidates.max { (names.firstIndex(of: $0) ?? -1) < (names.firstIndex(of: $1) ?? -1) }
    }

    /// Whether a stage of `catalog` names one of `versions` other than `target`.
    static func stagesName(anyOf versions: [String], besides target: String, in catalog: Catalog) -> Bool {
        let claimed = Set(catalog.stages.flatMap(\.claimedVersions))
        return versions.contains { $0 != target && claimed.contains($0) }
    }

    /// The version a store is migrated from when its hashes are exactly those of every version
    /// in `tied` (match: ambiguous) and `target` is not one of them; nil when the tie cannot be
    /// resolved safely, and the catalog must tell them apart (or `--from` name it).
    ///
    /// - Staged: `NSStagedMigrationManager` finds the store's version among the versions its
    ///   stages name, by checksum. Exactly one tied version named, before the target, is the one
    ///   it starts from (the others are models it never looks at); two or more fail on the
    ///   device ("duplicate version checksums") and could hide a custom stage between them
    ///   (96b4510); none, 134504. One after the target lies on no path to it.
    /// - Automatic (no stages): Core Data takes whichever model of the app fits the store. Only
    ///   when the tied versions are all before the target and are one model but for their
    ///   version identifiers is the inferred hop the same from each; then the one whose
    ///   identifiers the store's metadata carries (`storeIdentifiers`) is named, else the first.
    ///   Models that differ in what hashes leave out (a default, a renaming identifier) may map
    ///   differently: not resolved.
    static func source(amongTied tied: [String], to target: String, in catalog: Catalog, storeIdentifiers: [String]?) -> String? {
        let names = catalog.versions.map(\.name)
        guard tied.count > 1, !tied.contains(target), let end = names.firstIndex(of: target) else { return nil }
        if !catalog.stages.isEmpty {
            let claimed = Set(catalog.stages.flatMap(\.claimedVersions))
            let staged = tied.filter(claimed.contains)
            guard staged.count == 1, let start = names.firstIndex(of: staged[0]), start < end else { return nil }
            return staged[0]
        }
        let versions = tied.compactMap { catalog.version(named: $0) }
        guard versions.count == tied.count,
            versions.allSatisfy({ (names.firstIndex(of: $0.name) ?? end) < end }),
            versions.dropFirst().allSatisfy({ $0.model.entities == versions[0].model.entities })
        else { return nil }
        return versions.first { $0.versionIdentifiers == storeIdentifiers }?.name ?? versions[0].name
    }

    /// Why `source(amongTied:to:in:storeIdentifiers:)` named `source`: said by `migrate`'s note
    /// and `match`'s diagnosis alike.
    static func whyTiedSource(_ source: String, to target: String, in catalog: Catalog) -> String {
        catalog.stages.isEmpty
            ? "they are one model but for their version identifiers, so the migration to \(target) is the same from each"
            : "the stages name only \(source) of them, which is where NSStagedMigrationManager starts"
    }

    /// The latest version any stage names, by catalog order.
    static func endOfStages(_ catalog: Catalog) -> String? {
        let claimed = Set(catalog.stages.flatMap(\.claimedVersions))
        return catalog.versions.last { claimed.contains($0.name) }?.name
    }

    // MARK: - Walking the stages

    private static func hops(catalog: Catalog, from start: Int, to end: Int, index: [String: Int], issues: inout [PlanIssue]) -> [MigrationHop] {
        let names = catalog.versions.map(\.name)
        var hops: [MigrationHop] = []
        var current = start
        var position = 0
        let stages = catalog.stages
        while position < stages.count, current < end {
            let stage = stages[position]
            switch stage.span {
            case .versions:
                // A run of consecutive version-list stages is one inferred hop (#1).
                var run: [CatalogStage] = []
                while position < stages.count, case .versions = stages[position].span {
                    run.append(stages[position])
                    position += 1
                }
                let reachable = run.flatMap(\.claimedVersions).compactMap { index[$0] }.filter { $0 <= end }
                if let latest = reachable.max(), latest > current {
                    hops.append(MigrationHop(
                        from: names[current], to: names[latest], kind: .lightweight, origin: .stage,
                        stage: run.map(\.jsonPath).joined(separator: "+")))
                    current = latest
                }
            case .pair(let fromName, let toName):
                position += 1
                guard let stageStart = index[fromName], let stageEnd = index[toName], current < stageEnd else { continue }
                guard stageEnd <= end else {
                    issues.append(PlanIssue(
                        .error, .targetUnreachable, stage: stage.jsonPath,
                        "the target \(names[end]) lies inside \(stage.jsonPath) (\(stage.spanDescription)): no stage stops there",
                        onDevice: "staged migration runs whole stages: it cannot stop at \(names[end])"))
                    return hops
                }
                if current < stageStart {
                    let previousIsListStage: Bool = {
                        guard position >= 2, case .versions = stages[position - 2].span else { return false }
                        return true
                    }()
                    guard previousIsListStage else {
                        issues.append(PlanIssue(
                            .error, .stageNotReachable, stage: stage.jsonPath,
                            "the store is at \(names[current]) when \(stage.jsonPath) (\(stage.spanDescription)) expects \(fromName), and no lightweight stage comes between",
                            onDevice: "Core Data skips the stage and the migration fails: the next stage opens the store assuming it is \(fromName) (seed 001 #6)"))
                        return hops
                    }
                    hops.append(MigrationHop(
                        from: names[current], to: fromName, kind: .lightweight, origin: .bridge, stage: stage.jsonPath))
                    current = stageStart
                }
                guard current == stageStart else { continue }
                hops.append(MigrationHop(
                    from: fromName, to: toName, kind: stage.kind, origin: .stage, stage: stage.jsonPath, custom: stage.custom))
                current = stageEnd
            }
        }
        if current != end {
            issues.append(PlanIssue(
                .error, .targetUnreachable,
                "the stages take the store from \(names[start]) to \(names[current]), not to \(names[end])",
                onDevice: "the migration stops at \(names[current]); the app cannot open the store with \(names[end])'s model"))
        }
        return hops
    }

    // MARK: - Checks of the stages themselves

    /// Errors that fail on the device whatever the store: versions named twice (#5), custom
    /// stages not reachable (#6), stages out of order, duplicate checksums.
    private static func structuralIssues(_ catalog: Catalog) -> [PlanIssue] {
        var issues: [PlanIssue] = []
        let stages = catalog.stages
        let index = Dictionary(uniqueKeysWithValues: catalog.versions.enumerated().map { ($1.name, $0) })

        // #5: each version named once, except where one pair stage's `to` is the next one's `from`.
        var claims: [String: [(stage: Int, role: String)]] = [:]
        for (position, stage) in stages.enumerated() {
            switch stage.span {
            case .pair(let from, let to):
                claims[from, default: []].append((position, "from"))
                claims[to, default: []].append((position, "to"))
            case .versions(let names):
                for name in Set(names) { claims[name, default: []].append((position, "versions")) }
            }
        }
        for version in catalog.versions {
            guard let named = claims[version.name], named.count > 1 else { continue }
            let isChain = named.count == 2 && named[0].role == "to" && named[1].role == "from" && named[1].stage == named[0].stage + 1
            if isChain { continue }
            let where_ = named.map { "\(stages[$0.stage].jsonPath) (\($0.role))" }.joined(separator: ", ")
            issues.append(PlanIssue(
                .error, .versionClaimedTwice, stage: stages[named[1].stage].jsonPath,
                "version \(version.name) is named by more than one stage: \(where_)",
                onDevice: "NSStagedMigrationManager throws \"duplicate version checksums\" before migrating anything (seed 001 #5: a lightweight stage between custom stages lists only the versions in between)"))
        }

        // Order, and #6: a pair stage must start where the previous stage ended, unless a
        // lightweight list stage (even []) precedes it.
        var previousEnd: Int?
        for (position, stage) in stages.enumerated() {
            let named = stage.claimedVersions.compactMap { index[$0] }
            if let first = named.min(), let previousEnd, first < previousEnd {
                issues.append(PlanIssue(
                    .error, .stagesOutOfOrder, stage: stage.jsonPath,
                    "\(stage.jsonPath) (\(stage.spanDescription)) names a version earlier than the previous stage's last one (\(catalog.versions[previousEnd].name))",
                    onDevice: "stages run in the order given and never go backwards: the migration fails"))
            }
            if case .pair(let from, _) = stage.span, position > 0, case .pair(_, let previousTo) = stages[position - 1].span, previousTo != from {
                issues.append(PlanIssue(
                    .error, .stageNotReachable, stage: stage.jsonPath,
                    "\(stage.jsonPath) starts at \(from) but \(stages[position - 1].jsonPath) ends at \(previousTo), with no lightweight stage between them",
                    onDevice: "Core Data skips \(stage.jsonPath) and the migration fails (seed 001 #6: put a lightweight stage listing the versions in between, or [], between the two)"))
            }
            if let last = named.max() { previousEnd = max(previousEnd ?? last, last) }
        }

        // Versions the stages name must be told apart by their checksums.
        let claimedNames = Set(stages.flatMap(\.claimedVersions))
        let claimedVersions = catalog.versions.filter { claimedNames.contains($0.name) }
        for group in Dictionary(grouping: claimedVersions, by: \.versionChecksum).values where group.count > 1 {
            issues.append(PlanIssue(
                .error, .duplicateChecksums,
                "versions \(group.map(\.name).joined(separator: ", ")) have the same checksum \(group[0].versionChecksum)",
                onDevice: "NSStagedMigrationManager cannot tell them apart and throws (duplicate version checksums); give them distinct hashes with a versionHashModifier"))
        }
        return issues
    }
}
