import Foundation
import Testing
@testable import StoreRescue

/// Deep inheritance chains are refused clearly (inline catalogs, `.xcdatamodel` files); chains
/// within the bound are read. Before: a 500-deep inline chain took 54 s and a 2,000-deep
/// `.xcdatamodel` 80 s in `catalog show`, `match` and `create` (the runs here are bounded).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct HierarchyBoundsTests {
    static func inlineChain(depth: Int, in dir: TemporaryDirectory) throws -> String {
        let entities: [[String: Any]] = (0..<depth).map { level in
            var entity: [String: Any] = ["name": "E\(level)", "attributes": [["name": "a\(level)", "type": "String", "optional": true]]]
            if level > 0 { entity["parent"] = "E\(level - 1)" }
            return entity
        }
        let path = dir.path("chain\(depth).json")
        let document: [String: Any] = ["formatVersion": 1, "app": "A", "versions": [["name": "V1", "entities": entities]]]
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func xcdatamodelChain(depth: Int, in dir: TemporaryDirectory) throws -> String {
        let folder = dir.path("Chain\(depth).xcdatamodel")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\">\n"
        for level in 0..<depth {
            let parent = level == 0 ? "" : " parentEntity=\"E\(level - 1)\""
            xml += "<entity name=\"E\(level)\"\(parent)><attribute name=\"a\(level)\" optional=\"YES\" attributeType=\"String\"/></entity>\n"
        }
        xml += "</model>\n"
        try Data(xml.utf8).write(to: URL(fileURLWithPath: folder + "/contents"))
        return folder
    }

    @Test func deepChainsAreRefusedNamingTheEntity() throws {
        let dir = try TemporaryDirectory()
        let inline = try Self.inlineChain(depth: 500, in: dir)
        let xcdatamodel = try Self.xcdatamodelChain(depth: 2_000, in: dir)
        let cases: [([String], String)] = [
            (["catalog", "show", inline], "versions[0].entities[499].parent: inherits through 499 levels of superentities; at most 100 are read"),
            (["create", "--catalog", inline, "--version", "V1", dir.path("new.sqlite")], "inherits through 499 levels"),
            (["catalog", "show", xcdatamodel], "entity \"E1999\": inherits through 1999 levels of superentities; at most 100 are read"),
        ]
        for (command, message) in cases {
            let result = try CommandRunner.run(command, timeout: 30)
            #expect(!result.timedOut, "\(command[0]) hung")
            #expect(result.status == 65, "\(command): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("new.sqlite")))
    }

    @Test func aChainAtTheBoundIsReadMatchedAndCreated() throws {
        let dir = try TemporaryDirectory()
        let catalog = try Self.inlineChain(depth: ModelHierarchy.maximumDepth + 1, in: dir)
        let created = try CommandRunner.run(["create", "--catalog", catalog, "--version", "V1", dir.path("s.sqlite")], timeout: 60)
        #expect(created.status == 0, "\(created.stderr)")
        let matched = try CommandRunner.run(["match", dir.path("s.sqlite"), "--catalog", catalog, "--json"], timeout: 60)
        #expect(matched.status == 0)
        #expect(try matched.json()["outcome"] as? String == "exact")
    }
}
