import Foundation
import Testing
@testable import StoreRescue

/// Whatever fails — a fault at any point, a damaged store, a full disk — the store is untouched,
/// nothing is at the output and no temporary file is left.
@Suite struct MigrationFailureTests {
    typealias M = TestModel
    struct Injected: Error {}

    private func fixture(rows: Int = 50) throws -> (MigrationFixture, String) {
        let fixture = try MigrationFixture(versions: [
            M.version("V1", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("size", .integer32)])]),
            M.version("V2", [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("size", .integer64), M.attribute("note")])]),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for index in 0..<rows { try context.insert("Item", values: ["title": .text("item \(index)"), "size": .integer(Int64(index))]) }
        }
        return (fixture, path)
    }

    /// `--from` a version the store's hashes contradict is refused naming every version they
    /// fit: with a tie, pass one of those (a review found the advice "leave out --from", which
    /// the tie then refuses).
    @Test func fromAVersionTheHashesContradictNamesEveryVersionTheyFit() throws {
        typealias M = TestModel
        let item = [EntityDescription(name: "Item", properties: [M.attribute("title")])]
        let other = [EntityDescription(name: "Item", properties: [M.attribute("title"), M.attribute("note")])]
        let fixture = try MigrationFixture(versions: [
            M.version("V1", item, identifiers: ["1"]), M.version("V2", item, identifiers: ["2"]), M.version("V3", other),
        ])
        let path = try fixture.store(at: "V1")
        let report = fixture.migrate(path, from: "V3")
        let error = try #require(report.error)
        #expect(error.message.hasSuffix("is not V3 (--from): its hashes are exactly those of V1, V2; nothing was written") ||
                error.message.hasSuffix("is not V3 (--from): its hashes are exactly those of V2, V1; nothing was written"), "\(error.message)")
        #expect(error.hint?.hasPrefix("pass --from with one of ") == true, "\(error.hint ?? "")")
        #expect(report.exitStatus == .refused)
    }

    @Test(arguments: StoreMigrator.Stage.allCases)
    func aFaultAtAnyPointLeavesNothing(stage: StoreMigrator.Stage) throws {
        let (fixture, path) = try fixture()
        let before = try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path)
        let report = StoreMigrator.migrate(
            store: path, catalog: fixture.catalog, to: fixture.directory.path("out.sqlite"), options: MigrationOptions(),
            progress: nil, cancellation: nil, faultInjection: { if $0 == stage { throw MigrationError.writeFailed(path: "out.sqlite", reason: "injected at \($0)") } })
        #expect(report.error?.message.contains("injected at \(stage)") == true)
        #expect(report.exitStatus == .ioError)
        // The plan it had made stays in the report; nothing is reported written.
        #expect(report.status == .failed && report.result == nil)
        #expect(report.hops.map { "\($0.from) → \($0.to)" } == ["V1 → V2"] && report.source?.version == "V1" && report.target?.version == "V2")
        #expect(try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path) == before, "at \(stage): the folder is as it was")
    }

    /// The flush of the new store or its folder found no file descriptor left (`ulimit -n`;
    /// `CreationTarget.synchronize` throws `POSIXFailure`, here thrown where the folder's flush
    /// runs, once the store is linked): exit 74 with the open-files hint, nothing left at the
    /// output — never "free disk space or raise the file-size limit" (a review).
    @Test(arguments: [EMFILE, ENFILE])
    func noFileDescriptorLeftToFlushIsTheLimitAndLeavesNothing(code: Int32) throws {
        let (fixture, path) = try fixture()
        let before = try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path)
        let output = fixture.directory.path("out.sqlite")
        let report = StoreMigrator.migrate(
            store: path, catalog: fixture.catalog, to: output, options: MigrationOptions(), progress: nil, cancellation: nil,
            faultInjection: { if $0 == .published { throw POSIXFailure(operation: "open \(fixture.directory.url.path)", code: code) } })
        let error = try #require(report.error)
        #expect(error.message == "cannot write \(output): no file descriptor left: open \(fixture.directory.url.path): \(String(cString: strerror(code)))")
        #expect(error.hint?.hasPrefix("not a lack of disk space: raise the limit on open files") == true, "\(error.hint ?? "")")
        #expect(report.exitStatus == .ioError)
        #expect(try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path) == before, "the folder is as it was")
    }

    @Test func aCancellationStopsItAndLeavesNothing() throws {
        let (fixture, path) = try fixture()
        let before = try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path)
        let flag = CancellationFlag()
        flag.cancel()
        let report = StoreMigrator.migrate(store: path, catalog: fixture.catalog, to: fixture.directory.path("out.sqlite"), cancellation: flag)
        #expect(report.exitStatus == .temporaryFailure)
        #expect(report.error?.message.contains("was interrupted; nothing was written") == true)
        #expect(try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path) == before)
    }

    /// The checks before a store is published (`migrate`, `upgrade`'s adoption and its clean
    /// fallback) stop on a cancellation: SQLite's check of a large store runs for seconds, and a
    /// SIGTERM there waited for it (one `upgrade --on-failure clean` run in 70 was ended by the
    /// watchdog instead of stopping by itself). Before: a result, as if nothing had happened.
    @Test(arguments: [false, true])
    func theVerificationStopsOnACancellation(fullCheck: Bool) throws {
        let (fixture, path) = try fixture(rows: 500)
        let version = try fixture.version("V1")
        let layout = try StoreLayoutBuilder.layout(for: version.model)
        func verify(_ cancellation: CancellationFlag?) throws -> MigrationVerifier.Result {
            try MigrationVerifier.verify(
                path: path, target: version, layout: layout, catalog: fixture.catalog, predictedRows: ["Item": 500], fullCheck: fullCheck,
                cancellation: cancellation)
        }
        let result = try verify(CancellationFlag())
        #expect(result.problems.isEmpty && result.rowsByEntity["Item"] == 500, "\(result.problems)")
        let flag = CancellationFlag()
        flag.cancel()
        #expect {
            _ = try verify(flag)
        } throws: { error in
            guard case MigrationError.interrupted(let reported) = error else { return false }
            return reported == path
        }
    }

    /// A cancellation while the written store is flushed to disk, just before the publish: the
    /// run stops there (exit 75), nothing at the output. Before: published, exit 0 (a review's
    /// SIGTERM during the fsync of a 200 MB store, 5 of 34 runs).
    @Test func aCancellationJustBeforeThePublishPublishesNothing() throws {
        let (fixture, path) = try fixture()
        let before = try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path)
        let flag = CancellationFlag()
        let report = StoreMigrator.migrate(
            store: path, catalog: fixture.catalog, to: fixture.directory.path("out.sqlite"), options: MigrationOptions(),
            progress: nil, cancellation: flag, faultInjection: { if $0 == .beforePublishing { flag.cancel() } })
        #expect(report.exitStatus == .temporaryFailure, "\(String(describing: report.error))")
        #expect(try StoreFixtureBuilder.snapshot(of: fixture.directory.url.path) == before)
    }

    @Test func aDamagedStoreIsRefusedAsDamaged() throws {
        let (fixture, path) = try fixture(rows: 3000)
        // Zero a page in the middle of the table: the schema reads, the rows do not.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 4096 * 8)
        try handle.write(contentsOf: Data(repeating: 0, count: 4096))
        try handle.close()
        let report = fixture.migrate(path)
        #expect(report.exitStatus == .notAStore, "\(report.error?.message ?? "")")
        #expect(report.error?.message.contains("SQLite cannot read its pages") == true, "\(report.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    @Test(.enabled(if: FullDisk.isAvailable, "needs root and tmpfs mounts (a full disk is simulated with a 64 KiB tmpfs)"))
    func aFullDiskIsAClearErrorAndLeavesNothing() throws {
        let (fixture, path) = try fixture(rows: 2000)
        let disk = try FullDisk(at: fixture.directory.path("tiny"))
        defer { disk.unmount() }
        let report = fixture.migrate(path, output: "tiny/out.sqlite")
        #expect(report.exitStatus == .ioError, "\(report.error?.message ?? "")")
        #expect(report.error?.message.contains("nothing was left there") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).isEmpty)
    }

    @Test func theTargetModelsArchiveFillsTheModelCacheWhenKnown() throws {
        guard Samples.available else { return }
        let dir = try TemporaryDirectory()
        let store1 = try dir.copySample("lineages/PostsRevised/CoreDataMigration_Example_1.sqlite")
        let reference = try dir.copySample("lineages/PostsRevised/CoreDataMigration_Example_3.sqlite", as: "reference-3.sqlite")
        let model = try dir.copySampleItem("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld")
        let catalogPath = dir.path("catalog.json")
        #expect(FileManager.default.createFile(atPath: catalogPath, contents: Data("""
            {"formatVersion": 1, "app": "Posts", "versions": [
              {"name": "1", "xcdatamodeld": "\(model)", "version": "CoreDataMigration_Example"},
              {"name": "2", "xcdatamodeld": "\(model)", "version": "CoreDataMigration_Example 2"},
              {"name": "3", "store": "\(reference)"}],
             "stages": [{"kind": "lightweight", "versions": ["1"]},
                        {"kind": "custom", "from": "2", "to": "3", "create": [{"entity": "Section", "forEach": "Post", "set": {"body": "content"}, "link": {"post": "source"}}]}]}
            """.utf8)))
        let catalog = try Catalog.load(path: catalogPath)
        let report = StoreMigrator.migrate(store: store1, catalog: catalog, to: dir.path("out.sqlite"))
        #expect(report.result?.modelCacheWritten == true, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        let readout = StoreInspector.read(store: try OpenedStore(path: dir.path("out.sqlite")))
        #expect(readout.modelCacheBytes == catalog.version(named: "3")?.modelCacheContent)
        #expect(readout.report.model?.hashesMatchMetadata == true)
    }
}
