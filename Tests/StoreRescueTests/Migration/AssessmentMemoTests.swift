import Foundation
import Testing
@testable import StoreRescue

/// `AssessmentMemo`: `match`'s diagnosis and the migration engine, reading one store, ask its
/// data once (the scans were made twice: 0.8 s of a 500,000-row store's upgrade each time), and
/// what they decide is what they decided before.
@Suite struct AssessmentMemoTests {
    /// The statements of `body` on `store`'s connection that scan a table for the analysis
    /// (`MigrationAnalyzer.run`: `SELECT count(*) FILTER …`), in no set order (by table, from a
    /// dictionary).
    private func scans(on store: OpenedStore, _ body: () throws -> Void) rethrows -> [String] {
        final class Seen: @unchecked Sendable { var statements: [String] = [] }
        let seen = Seen()
        store.connection.statementObserver = { sql in
            if sql.hasPrefix("SELECT count(*) FILTER") { seen.statements.append(sql) }
        }
        defer { store.connection.statementObserver = nil }
        try body()
        return seen.statements
    }

    private func opened(_ path: String) throws -> (OpenedStore, StoreReadout) {
        let store = try OpenedStore(path: path)
        return (store, StoreInspector.read(store: store))
    }

    private func encoded(_ match: MatchResult) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(match), as: UTF8.self)
    }

    /// Both catalogs: the stage the app lacks (134110 predicted and refused) and its fix.
    @Test(arguments: [false, true])
    func prepareScansEachTableOnceAndDecidesAsBefore(map: Bool) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: map)
        let path = try fixture.catsStore(cats: 30, owners: 3, catalog: catalog)
        for dryRun in [false, true] {
            let options = MigrationOptions(isDryRun: dryRun)
            // What the engine's own assessment alone scans, and decides.
            let (alone, aloneReadout) = try opened(path)
            var assessment: MigrationEngine.Assessment?
            let aloneScans = try scans(on: alone) {
                assessment = try MigrationEngine.assess(
                    store: alone, readout: aloneReadout, catalog: catalog, from: "V1", to: nil, handlers: [], depth: dryRun ? .forecast : .full)
            }
            let expected = try #require(assessment)
            #expect(!aloneScans.isEmpty)
            let plainMatch = StoreMatcher.match(store: alone, readout: aloneReadout, catalog: catalog)

            let (store, readout) = try opened(path)
            var preparation: MigrationPreparation?
            let prepareScans = try scans(on: store) {
                preparation = try MigrationEngine.prepare(store: store, readout: readout, catalog: catalog, options: options)
            }
            let prepared = try #require(preparation)
            // One scan per table, as the assessment alone: not the diagnosis's and then the engine's.
            #expect(prepareScans.sorted() == aloneScans.sorted(), "map \(map), dry run \(dryRun): \(prepareScans.count) scans, alone \(aloneScans.count)")
            // Decided as before: the same refusals, plan, counts; the match as `match` says it.
            #expect(prepared.refusals.map(\.message) == expected.refusals.map(\.message))
            #expect(map ? prepared.refusals.isEmpty : prepared.refusals.contains { $0.code == .mandatoryValueMissing })
            #expect(prepared.plan?.hops.map(\.summary) == expected.plan.hops.map(\.summary))
            #expect(prepared.analysis?.rowsByVersion.map(\.rows) == expected.analysis?.rowsByVersion.map(\.rows))
            #expect(prepared.analysis?.linksToClear == expected.analysis?.linksToClear)
            #expect(try encoded(prepared.match) == encoded(plainMatch))
        }
    }

    /// `--to` named is another path than the default target the diagnosis assesses: the
    /// engine's plan says the target was requested, and its own assessment is made.
    /// A `--from` named, or Swift handlers, make the engine's path one of its own too: the
    /// diagnosis then scans only for what decides refusals (a deeper scan would be thrown away).
    @Test(arguments: ["to", "from", "handlers"])
    func aNamedTargetIsAssessedForItself(_ named: String) throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: named == "handlers")
        let path = try fixture.catsStore(cats: 4, owners: 1, catalog: catalog)
        let (store, readout) = try opened(path)
        var options = MigrationOptions()
        switch named {
        case "to": options.targetVersion = "V2"
        case "from": options.sourceVersion = "V1"
        default: options.handlers = [CustomStageHandlers(from: "V1", to: "V2", willMigrate: { _ in })]
        }
        #expect(MigrationEngine.memoDepth(options) == .refusalsOnly)
        var preparation: MigrationPreparation?
        let seen = try scans(on: store) {
            preparation = try MigrationEngine.prepare(store: store, readout: readout, catalog: catalog, options: options)
        }
        let prepared = try #require(preparation)
        if named == "to" { #expect(prepared.plan?.targetChoice == .requested) }
        #expect(named == "handlers" ? prepared.refusals.isEmpty : prepared.refusals.contains { $0.code == .mandatoryValueMissing })
        // The diagnosis's scans (what decides refusals) and the engine's (everything).
        #expect(Set(seen.map { $0.components(separatedBy: " FROM ").last ?? "" }).count * 2 == seen.count, "\(seen)")
    }

    /// Swift handlers can add refusals: an assessment made with them is not kept, nor taken.
    @Test func anAssessmentWithHandlersIsNeverShared() throws {
        let fixture = try UpgradeFixture()
        let catalog = try fixture.catsCatalog(map: true)
        let path = try fixture.catsStore(cats: 5, owners: 1, catalog: catalog)
        let (store, readout) = try opened(path)
        let memo = AssessmentMemo(depth: .full)
        let handlers = [CustomStageHandlers(from: "V1", to: "V2", willMigrate: { _ in })]
        func assess(_ handlers: [CustomStageHandlers]) throws -> Int {
            try scans(on: store) {
                _ = try MigrationEngine.assess(
                    store: store, readout: readout, catalog: catalog, from: "V1", to: nil, handlers: handlers, depth: .full, memo: memo)
            }.count
        }
        let first = try assess(handlers)
        #expect(first > 0)
        #expect(try assess([]) == first, "made anew without handlers")
        #expect(try assess([]) == 0, "kept without handlers")
        #expect(try assess(handlers) == first, "made anew with handlers")
    }

    private func assessment(_ target: String) -> MigrationEngine.Assessment {
        MigrationEngine.Assessment(
            plan: MigrationPlan(sourceVersion: "V1", targetVersion: target, targetChoice: .requested, isStaged: false, hops: [], issues: [], notes: []),
            mappings: [], analysis: nil, refusals: [])
    }

    @Test func aDeeperAssessmentAnswersAShallowerOneAndNotTheOtherWayRound() throws {
        let memo = AssessmentMemo(depth: .refusalsOnly)
        var made: [MigrationAnalyzer.Depth] = []
        func ask(_ depth: MigrationAnalyzer.Depth, to: String? = nil) {
            _ = memo.assessment(from: "V1", to: to, depth: depth) { depth in
                made.append(depth)
                return assessment(to ?? "V2")
            }
        }
        ask(.refusalsOnly)
        ask(.refusalsOnly)
        #expect(made == [.refusalsOnly])
        ask(.full)
        #expect(made == [.refusalsOnly, .full])
        ask(.refusalsOnly)
        ask(.full)
        #expect(made == [.refusalsOnly, .full])
        ask(.forecast)
        ask(.full)
        #expect(made == [.refusalsOnly, .full, .forecast])
        // `to` named is another question than the default target.
        ask(.refusalsOnly, to: "V2")
        #expect(made == [.refusalsOnly, .full, .forecast, .refusalsOnly])
    }

    @Test func theMemoAssessesAsDeepAsItsDeepestCallerAndKeepsNoFailure() throws {
        struct Failure: Error {}
        let memo = AssessmentMemo(depth: .forecast)
        var made: [MigrationAnalyzer.Depth] = []
        #expect(throws: Failure.self) {
            _ = try memo.assessment(from: "V1", to: nil, depth: .refusalsOnly) { depth in
                made.append(depth)
                throw Failure()
            }
        }
        let answer = memo.assessment(from: "V1", to: nil, depth: .refusalsOnly) { depth in
            made.append(depth)
            return assessment("V2")
        }
        _ = memo.assessment(from: "V1", to: nil, depth: .forecast) { depth in
            made.append(depth)
            return assessment("V3")
        }
        #expect(made == [.forecast, .forecast])
        #expect(answer.plan.targetVersion == "V2")
    }
}
