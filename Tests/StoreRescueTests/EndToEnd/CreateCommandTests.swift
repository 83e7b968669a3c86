import Foundation
import Testing
@testable import StoreRescue

enum CreateCommandAvailability {
    /// True when the built executable knows `create`.
    static let isRegistered: Bool = {
        guard CommandRunner.isAvailable, let help = try? CommandRunner.run(["create", "--help"]) else { return false }
        return help.status == 0 && help.stdout.contains("--model")
    }()
}

/// `storerescue create` run as a process. Enabled once the command is registered in
/// `StoreRescueCommand` (the layout branch leaves that file to the merge).
@Suite(.enabled(if: CreateCommandAvailability.isRegistered, "the storerescue executable is not built or has no create subcommand yet"))
struct CreateCommandTests {
    /// A compiled `.mom` copied from the samples, or one written by the test when they are absent.
    static func modelFile(in directory: TemporaryDirectory) throws -> String {
        if Samples.available {
            return try directory.copySampleItem("models/Model.momd") + "/Model.mom"
        }
        let path = directory.path("Item.sqlite")
        try StoreCreator.create(model: StoreCreatorRefusalTests.model, versionIdentifiers: nil, at: path)
        return path  // a store without a model cache: enough for the refusal tests below
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func createsFromACompiledModel() throws {
        let directory = try TemporaryDirectory()
        let model = try Self.modelFile(in: directory)
        let output = directory.path("new.sqlite")
        let result = try CommandRunner.run(["create", "--model", model, output])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Created \(output)\n"))
        #expect(result.stdout.contains("from:        model \(model)"))
        #expect(result.stderr.isEmpty)
        let report = StoreInspector.inspect(path: output)
        #expect(report.kind == .coreDataStore)
        #expect(report.entities.map(\.name) == ["User"])
        #expect(report.sidecars.isEmpty)
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func jsonContract() throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let output = directory.path("new.sqlite")
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let result = try CommandRunner.run(["create", "--json", "--history", "--model", store, output])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.json()
        for key in ["path", "uuid", "frameworkVersion", "versionIdentifiers", "versionHashes", "hashesDigest", "versionChecksum",
                    "entityCount", "tables", "indexCount", "includesPersistentHistory", "modelCacheWritten", "source", "error"] {
            #expect(json[key] != nil, "missing key \(key)")
        }
        #expect(json["path"] as? String == output)
        #expect(json["entityCount"] as? Int == 2)
        #expect(json["includesPersistentHistory"] as? Bool == true)
        #expect((json["tables"] as? [String])?.contains("ATRANSACTIONSTRING") == true)
        #expect(json["error"] is NSNull)
        let source = try #require(json["source"] as? [String: Any])
        #expect(source["kind"] as? String == "model" && source["path"] as? String == store)
        // The model's store was read through a private copy: its folder holds only the new store more.
        var after = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        #expect(after.removeValue(forKey: "new.sqlite") != nil)
        #expect(after == before)
    }

    /// The file-size limit (`ulimit -f`) hit by a command that writes before any writer of its
    /// own starts: `create`'s new store, and the private read copy `inspect` makes of a store
    /// with a `-wal`. Exit 74 with an `Error:`/`Try:` pair and nothing left behind — they used to
    /// die of SIGXFSZ (status 153 from the shell), temporaries left in place.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func aFileSizeLimitIsExit74NotASignal() throws {
        let directory = try TemporaryDirectory()
        let catalog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Journal/catalog.json").path
        try FileManager.default.createDirectory(atPath: directory.path("out"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: directory.path("tmp"), withIntermediateDirectories: false)
        let store = try directory.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        for arguments in [["create", "--catalog", catalog, "--version", "V4", directory.path("out/new.sqlite")], ["inspect", store]] {
            let result = try CommandRunner.run(program: "/bin/sh", [
                // The test process ignores SIGXFSZ (SafeFileOutput does), and children inherit
                // that: `env` gives the command the default a shell would.
                "-c", "ulimit -f 8 && TMPDIR=\"$0\" exec env --default-signal=XFSZ \"$@\"", directory.path("tmp"), CommandRunner.executable.path,
            ] + arguments)
            #expect(result.status == 74, "\(arguments[0]): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("Error: ") && result.stderr.contains("Try: "), "\(arguments[0]): \(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path("out")).isEmpty, "\(arguments[0])")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path("tmp")).isEmpty, "\(arguments[0])")
        }
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before, "the store and its sidecars unchanged")
    }

    @Test func existingTargetExits73AndIsKept() throws {
        let directory = try TemporaryDirectory()
        let model = try Self.modelFile(in: directory)
        let output = directory.path("taken.sqlite")
        #expect(FileManager.default.createFile(atPath: output, contents: Data("precious".utf8)))
        let result = try CommandRunner.run(["create", "--model", model, output])
        #expect(result.status == 73)
        #expect(result.stderr.contains("Error: \(output) already exists; refusing to overwrite it"))
        #expect(result.stderr.contains("Try: "))
        #expect(result.stdout.isEmpty)
        #expect(FileManager.default.contents(atPath: output) == Data("precious".utf8))
    }

    @Test(arguments: ["-wal", "-shm", "-journal"])
    func existingSidecarExits73(suffix: String) throws {
        let directory = try TemporaryDirectory()
        let model = try Self.modelFile(in: directory)
        let output = directory.path("new.sqlite")
        #expect(FileManager.default.createFile(atPath: output + suffix, contents: Data()))
        let result = try CommandRunner.run(["create", "--model", model, output])
        #expect(result.status == 73)
        #expect(result.stderr.contains("Error: \(output + suffix) exists; refusing to create \(output)"))
        #expect(!FileManager.default.fileExists(atPath: output))
        let json = try CommandRunner.run(["create", "--json", "--model", model, output])
        #expect(json.status == 73)
        let error = try #require(try json.json()["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains(output + suffix) == true)
        #expect(error["exitStatus"] as? Int == 73)
    }

    @Test func usageErrorsExit64() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("new.sqlite")
        let noSource = try CommandRunner.run(["create", output])
        #expect(noSource.status == 64)
        #expect(noSource.stderr.contains("Give --catalog CATALOG --version NAME, or --model PATH."))
        let noVersion = try CommandRunner.run(["create", "--catalog", directory.path("catalog.json"), output])
        #expect(noVersion.status == 64)
        #expect(noVersion.stderr.contains("--catalog needs --version NAME."))
        let both = try CommandRunner.run(["create", "--catalog", "c", "--version", "v", "--model", "m", output])
        #expect(both.status == 64)
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func modelInputErrors() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("new.sqlite")
        let missing = try CommandRunner.run(["create", "--model", directory.path("absent.mom"), output])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("Error: \(directory.path("absent.mom")): no such file"))
        #expect(FileManager.default.createFile(atPath: directory.path("notes.txt"), contents: Data("hello".utf8)))
        let notAModel = try CommandRunner.run(["create", "--model", directory.path("notes.txt"), output])
        #expect(notAModel.status == 65)
        #expect(notAModel.stderr.contains("is neither a compiled model (.mom) nor an SQLite store"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["notes.txt"])
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func frameworkVersionDecidesTheKeys() throws {
        let directory = try TemporaryDirectory()
        let model = try Self.modelFile(in: directory)
        let output = directory.path("old.sqlite")
        let result = try CommandRunner.run(["create", "--framework-version", "866", "--model", model, output])
        #expect(result.status == 0, "\(result.stderr)")
        let metadata = StoreInspector.inspect(path: output).metadata
        #expect(metadata?.frameworkVersion == 866)
        #expect(metadata?.hashesDigest == nil && metadata?.versionChecksum == nil)
    }
}
