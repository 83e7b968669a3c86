import Foundation
import Testing
@testable import StoreRescue

/// `NSStagedMigrationManager`'s rules as the seed (001) found them, one test per finding, on the
/// seed's own ten-version lineage.
@Suite struct StagePlannerTests {
    typealias S = SeedLineage

    private func catalog(_ stages: [CatalogStage], current: String? = nil) -> Catalog {
        Catalog(name: "Seed", versions: S.versions(), currentVersionName: current, stages: stages, sourcePath: "seed")
    }

    private func hops(_ plan: MigrationPlan) -> [String] { plan.hops.map { "\($0.from)>\($0.to):\($0.kind.rawValue):\($0.origin.rawValue)" } }

    @Test func theSeedsFullPlanIsValidAndTakesV1ToV10() {
        let catalog = catalog(S.fullPlan())
        #expect(StagePlanner.issues(in: catalog).isEmpty)
        let plan = StagePlanner.plan(catalog: catalog, from: "V1", to: nil)
        #expect(plan.refusals.isEmpty)
        #expect(plan.targetVersion == "V10" && plan.targetChoice == .endOfStages && plan.isStaged)
        // #5: V3 → V6 in one inferred hop, then V6 → V7 inferred to reach the custom V7 → V8.
        #expect(hops(plan) == [
            "V1>V2:custom:stage", "V2>V3:custom:stage", "V3>V6:lightweight:stage", "V6>V7:lightweight:bridge",
            "V7>V8:custom:stage", "V8>V10:lightweight:stage",
        ])
    }

    @Test func aListStageIsOneHopToItsLatestVersionWhateverItsOrder() {
        // #1/#2: one inferred hop from the store's version to the latest listed; #3: order does not matter.
        for listed in [[4, 5, 6], [6, 4, 5], [5, 6, 4]] {
            let plan = StagePlanner.plan(catalog: catalog([S.lightweight([1, 2, 3] + listed, 0)]), from: "V3", to: "V6")
            #expect(hops(plan) == ["V3>V6:lightweight:stage"], "\(listed)")
        }
    }

    @Test func consecutiveListStagesBehaveAsOne() {
        // #1: [V4], [V5], [V6] is the same as [V4, V5, V6].
        let separate = catalog([S.lightweight([1, 2, 3], 0), S.lightweight([4], 1), S.lightweight([5], 2), S.lightweight([6], 3)], current: "V6")
        #expect(hops(StagePlanner.plan(catalog: separate, from: "V3", to: nil)) == ["V3>V6:lightweight:stage"])
    }

    @Test func pairStagesChainOneHopEach() {
        let pairs = catalog((1...9).map { S.pair($0, $0 + 1, $0 - 1) })
        let plan = StagePlanner.plan(catalog: pairs, from: "V3", to: "V6")
        #expect(hops(plan) == ["V3>V4:lightweight:stage", "V4>V5:lightweight:stage", "V5>V6:lightweight:stage"])
        #expect(StagePlanner.issues(in: pairs).isEmpty)
    }

    @Test func aVersionNamedByTwoStagesIsRefused() {
        // #5: V3 and V7 are the custom stages' own versions; listing them again is an error.
        let stages = [S.custom(1, 2, 0), S.custom(2, 3, 1), S.lightweight([3, 4, 5, 6], 2), S.custom(7, 8, 3), S.lightweight([9, 10], 4)]
        let issues = StagePlanner.issues(in: catalog(stages))
        let twice = issues.filter { $0.code == .versionClaimedTwice }
        #expect(twice.count == 1)
        #expect(twice.first?.message.contains("version V3 is named by more than one stage") == true)
        #expect(twice.first?.onDevice.contains("duplicate version checksums") == true)
        let plan = StagePlanner.plan(catalog: catalog(stages), from: "V1", to: nil)
        #expect(plan.hops.isEmpty && plan.refusals.contains { $0.code == .versionClaimedTwice })
    }

    @Test func customStagesNeedALightweightStageBetweenThem() {
        // #6: custom V2 → V3 then custom V4 → V5 with nothing between: Core Data skips the second.
        let gap = [S.custom(1, 2, 0), S.custom(2, 3, 1), S.custom(4, 5, 2), S.lightweight([6, 7, 8, 9, 10], 3)]
        let issues = StagePlanner.issues(in: catalog(gap))
        #expect(issues.contains { $0.code == .stageNotReachable && $0.stage == "stages[2]" && $0.onDevice.contains("#6") })
        #expect(!StagePlanner.plan(catalog: catalog(gap), from: "V1", to: nil).refusals.isEmpty)
        // With an empty lightweight stage between them, the store is brought from V3 to V4 by an inferred hop.
        let bridged = [S.custom(1, 2, 0), S.custom(2, 3, 1), S.lightweight([], 2), S.custom(4, 5, 3), S.lightweight([6, 7, 8, 9, 10], 4)]
        #expect(StagePlanner.issues(in: catalog(bridged)).filter { $0.severity == .error }.isEmpty)
        let plan = StagePlanner.plan(catalog: catalog(bridged), from: "V1", to: nil)
        #expect(plan.refusals.isEmpty)
        #expect(hops(plan) == [
            "V1>V2:custom:stage", "V2>V3:custom:stage", "V3>V4:lightweight:bridge", "V4>V5:custom:stage", "V5>V10:lightweight:stage",
        ])
    }

    @Test func everyVersionAStoreCanBeAtMustBeNamed() {
        // #7: without V10, the plan's last version (the app's current one) is named by no stage.
        let missingLast = catalog([S.custom(1, 2, 0), S.custom(2, 3, 1), S.lightweight([4, 5, 6], 2), S.custom(7, 8, 3), S.lightweight([9], 4)])
        let issues = StagePlanner.issues(in: missingLast)
        #expect(issues.contains { $0.code == .currentVersionNotInStages && $0.severity == .error && $0.message.contains("V10") })
        // A store at a version no stage names fails with 134504.
        let noFirst = catalog([S.lightweight([2, 3, 4, 5, 6, 7, 8, 9, 10], 0)])
        #expect(StagePlanner.issues(in: noFirst).contains { $0.code == .versionNotInStages && $0.severity == .warning && $0.message.contains("V1") })
        let plan = StagePlanner.plan(catalog: noFirst, from: "V1", to: nil)
        #expect(plan.refusals.map(\.code) == [.storeVersionNotInStages])
        #expect(plan.refusals.first?.onDevice.contains("134504") == true)
    }

    @Test func theManagerMigratesToTheLatestStagedVersionWhateverTheCurrentVersion() {
        // #9: current version V2, stages up to V10: the plan ends at V10, and says so.
        let plan = StagePlanner.plan(catalog: catalog(S.fullPlan(), current: "V2"), from: "V3", to: nil)
        #expect(plan.targetVersion == "V10")
        #expect(plan.notes.contains { $0.contains("#9") && $0.contains("V2") })
    }

    @Test func stagesOutOfOrderAndDuplicateChecksumsAreRefused() {
        let backwards = catalog([S.lightweight([1, 2, 3, 4, 5], 0), S.custom(2, 6, 1), S.lightweight([7, 8, 9, 10], 2)])
        #expect(StagePlanner.issues(in: backwards).contains { $0.code == .stagesOutOfOrder })
        var twins = S.versions()
        twins[4].name = "V5"
        twins[5] = CatalogVersion(name: "V6", model: twins[4].model, origin: "inline")
        let duplicate = Catalog(name: "Seed", versions: twins, stages: [S.lightweight(Array(1...10), 0)], sourcePath: "seed")
        #expect(StagePlanner.issues(in: duplicate).contains { $0.code == .duplicateChecksums && $0.message.contains("V5, V6") })
    }

    @Test func aTargetInsideAPairStageOrBeyondTheStagesIsUnreachable() {
        let wide = catalog([S.lightweight([1], 0), S.custom(2, 5, 1), S.lightweight(Array(6...10), 2)])
        let inside = StagePlanner.plan(catalog: wide, from: "V2", to: "V4")
        #expect(inside.refusals.contains { $0.code == .targetUnreachable && $0.message.contains("inside stages[1]") }, "\(inside.refusals)")
        let newer = StagePlanner.plan(catalog: wide, from: "V6", to: "V2")
        #expect(newer.refusals.map(\.code) == [.storeNewerThanTarget])
        let listTruncated = StagePlanner.plan(catalog: catalog([S.lightweight(Array(1...10), 0)]), from: "V3", to: "V6")
        #expect(hops(listTruncated) == ["V3>V6:lightweight:stage"])
    }

    @Test func withoutStagesTheAppMigratesAutomaticallyInOneHop() {
        let automatic = catalog([])
        #expect(StagePlanner.issues(in: automatic).isEmpty)
        let plan = StagePlanner.plan(catalog: automatic, from: "V3", to: nil)
        #expect(!plan.isStaged && plan.targetChoice == .catalogLatest && plan.targetVersion == "V10")
        #expect(hops(plan) == ["V3>V10:lightweight:automatic"])
        #expect(StagePlanner.plan(catalog: automatic, from: "V10", to: nil).isAtTarget)
        #expect(StagePlanner.plan(catalog: automatic, from: "V11", to: nil).refusals.map(\.code) == [.unknownVersion])
    }
}
