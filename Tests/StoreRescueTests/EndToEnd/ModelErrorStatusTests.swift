import Foundation
import Testing
@testable import StoreRescue

/// A model or store that is wrong is a data error (65) naming what is wrong: never 70 ("a bug")
/// and never 74 with a free-space hint.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct ModelErrorStatusTests {
    static func catalog(_ entities: [[String: Any]], in dir: TemporaryDirectory) throws -> String {
        let document: [String: Any] = ["formatVersion": 1, "app": "A", "versions": [["name": "V1", "entities": entities]]]
        let path = dir.path("catalog.json")
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func expectModelError(_ result: CommandRunner.Result, naming entity: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 65, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains("entity \"\(entity)\""), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("free space") && !result.stderr.contains("report a bug"), sourceLocation: sourceLocation)
    }

    @Test func reservedNamesAndTooManyColumnsAreModelErrors() throws {
        let dir = try TemporaryDirectory()
        let metadata = try Self.catalog([["name": "_METADATA", "attributes": [["name": "a", "type": "String"]]]], in: dir)
        Self.expectModelError(try CommandRunner.run(["create", "--catalog", metadata, "--version", "V1", dir.path("a.sqlite")]), naming: "_METADATA")
        let wide = try Self.catalog([["name": "E", "attributes": (0..<100_000).map { ["name": "a\($0)", "type": "String", "optional": true] }]], in: dir)
        Self.expectModelError(try CommandRunner.run(["create", "--catalog", wide, "--version", "V1", dir.path("b.sqlite")]), naming: "E")
        let subentities = try Self.catalog([["name": "Root"]] + (0..<2_000).map { ["name": "S\($0)", "parent": "Root", "attributes": [["name": "s\($0)", "type": "String"]]] }, in: dir)
        Self.expectModelError(try CommandRunner.run(["create", "--catalog", subentities, "--version", "V1", dir.path("c.sqlite")]), naming: "Root")
        #expect(BackupFixtures.fileNames(in: dir.url.path) == ["catalog.json"], "nothing created")
    }

    /// Before: "internal error: SQLite error 11", exit 70.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"))
    func aDamagedModelCachePageIsADamagedStore() throws {
        let dir = try TemporaryDirectory()
        let store = try dir.copySample("stores/plaso_ios_netusage.sqlite")
        chmod(store, 0o644)
        let root = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'Z_MODELCACHE'")?.int64 ?? 0
        #expect(root > 1)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: store))
        try handle.seek(toOffset: UInt64(root - 1) * 4096)
        try handle.write(contentsOf: Data(count: 4096))
        try handle.close()
        for command in [["create", "--model", store, dir.path("new.sqlite")],
                        ["catalog", "learn", store, "--catalog", dir.path("c.json"), "--name", "V1", "--app", "A", "--dry-run"],
                        ["catalog", "show", store]] {
            let result = try CommandRunner.run(command)
            #expect(result.status == 65, "\(command[0]): \(result.stdout)\(result.stderr)")
            #expect((result.stdout + result.stderr).contains("\(store): SQLite cannot read it: database disk image is malformed"))
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("new.sqlite")))
    }
}
