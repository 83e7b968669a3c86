import Foundation
import Testing
@testable import StoreRescue

/// `ModelFileLoader` tells a `.mom` from a store by content and reads either; anything else is
/// refused with a message and an exit status.
@Suite struct ModelFileLoaderTests {
    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func readsACompiledModelAndAStoresModelCache() throws {
        let directory = try TemporaryDirectory()
        let mom = try directory.copySampleItem("models/Model.momd") + "/Model.mom"
        #expect(try ModelFileLoader.load(path: mom).entities.map(\.name) == ["User"])
        let store = try directory.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let model = try ModelFileLoader.load(path: store)
        #expect(model.entities.map(\.name).sorted() == ["SyncFeatureEntity", "SyncableSettingsMetadata"])
        #expect(model == (try SampleModels.modelCache("lineages/SyncMetadata/SyncMetadata_V3.sqlite")))
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before, "the store and its -wal are untouched")
    }

    @Test func refusesWhatIsNotAModel() throws {
        let directory = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: directory.path("notes.txt"), contents: Data("hello".utf8)))
        #expect(throws: ModelFileError.notAModel(path: directory.path("notes.txt"))) {
            try ModelFileLoader.load(path: directory.path("notes.txt"))
        }
        #expect(ModelFileError.notAModel(path: "x").exitStatus == .notAStore)

        let folder = directory.path("App.momd")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: folder + "/App 2.mom", contents: Data()))
        #expect(FileManager.default.createFile(atPath: folder + "/App.mom", contents: Data()))
        let folderError = ModelFileError.modelFolder(path: folder, versions: ["App 2.mom", "App.mom"])
        #expect(throws: folderError) { try ModelFileLoader.load(path: folder) }
        #expect(folderError.recoverySuggestion == "pass one version, e.g. \(folder)/App 2.mom (versions here: App 2.mom, App.mom)")
        #expect(folderError.exitStatus == .noInput)

        let missing = directory.path("absent.mom")
        #expect(throws: StoreAccessError.rejected(path: missing, kind: .missing, reason: "no such file")) {
            try ModelFileLoader.load(path: missing)
        }
        #expect(FileManager.default.createFile(atPath: directory.path("empty.mom"), contents: Data()))
        #expect(throws: StoreAccessError.rejected(path: directory.path("empty.mom"), kind: .empty, reason: "is empty (0 bytes)")) {
            try ModelFileLoader.load(path: directory.path("empty.mom"))
        }
    }

    @Test func refusesAStoreWithoutAModel() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        try StoreCreator.create(model: StoreCreatorRefusalTests.model, versionIdentifiers: nil, at: path)
        let error = ModelFileError.noModelCache(path: path, reason: "Z_MODELCACHE has no row")
        #expect(throws: error) { try ModelFileLoader.load(path: path) }
        #expect(error.description == "\(path) holds no model: Z_MODELCACHE has no row")
        let plain = directory.path("plain.db")
        try StoreFixtureBuilder.database(at: plain, sql: "CREATE TABLE t(x);")
        #expect(throws: ModelFileError.noModelCache(path: plain, reason: "it has no Z_MODELCACHE table")) {
            try ModelFileLoader.load(path: plain)
        }
    }

    @Test func damagedArchiveIsAModelDecodingError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("broken.mom")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("bplist00 and then nothing useful".utf8)))
        #expect(throws: ModelDecodingError.self) { try ModelFileLoader.load(path: path) }
    }
}
