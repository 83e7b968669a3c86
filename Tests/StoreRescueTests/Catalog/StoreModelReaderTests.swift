import Foundation
import Testing
@testable import StoreRescue

/// Versions learned from real stores' model caches reproduce the stores' own hashes; stores
/// without a usable model cache say what to do instead.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct StoreModelReaderTests {
    static var storesWithModelCache: [String] {
        Samples.allStores.filter {
            !SampleStoreEvidence.storesWithoutModelCacheTable.contains($0) && !SampleStoreEvidence.storesWithNullModelCache.contains($0)
        }
    }

    /// Learns a catalog from a private copy of the store; checks it against the stored metadata.
    static func verifyLearned(_ relativePath: String) throws -> Int {
        let directory = try TemporaryDirectory()
        let copy = try directory.copySample(relativePath)
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let catalog = try Catalog.load(path: copy)
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before, "\(relativePath) was modified")
        let metadata = try CatalogTestSupport.storedMetadata(relativePath)
        #expect(catalog.versions.count == 1)
        let version = try #require(catalog.versions.first)
        #expect(version.origin == "store" && version.sourcePath == copy)
        #expect(version.name == URL(fileURLWithPath: copy).deletingPathExtension().lastPathComponent)
        #expect(version.versionHashes == metadata.versionHashes, "\(relativePath)")
        if let digest = metadata.hashesDigest { #expect(version.hashesDigest == digest, "\(relativePath)") }
        if let checksum = metadata.versionChecksum { #expect(version.versionChecksum == checksum, "\(relativePath)") }
        #expect(version.versionIdentifiers == (metadata.versionIdentifiers ?? [""]).sorted(), "\(relativePath)")
        return version.versionHashes.count
    }

    /// A symbolic link to a reference store given as the catalog is followed, as one to a
    /// catalog file is (it was refused with a hint to add --follow-symlinks, which catalog show
    /// does not have).
    /// The entities whose hashes disagree are named up to 20, then counted: a review's store of
    /// 4,000 entities printed 30 KB of names.
    @Test func aLongListOfDisagreeingEntitiesIsCut() {
        let names = (0..<30).map { "E\($0)" }
        let message = StoreModelError.hashesDisagree(path: "s.sqlite", entities: names).description
        #expect(message.contains("E19 and 10 more: the metadata was edited"))
        #expect(!message.contains("E20"))
    }

    @Test func aReferenceStoreThroughALinkIsReadAsTheCatalog() throws {
        let dir = try TemporaryDirectory()
        let store = try dir.copySample("stores/swiftdata_CartKitSwiftData_v1.sqlite")
        let link = dir.path("reference.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: store)
        let catalog = try Catalog.load(path: link)
        #expect(catalog.versions.count == 1)
        #expect(catalog.versions.first?.versionHashes == (try Catalog.load(path: store)).versions.first?.versionHashes)
    }

    @Test(arguments: storesWithModelCache)
    func learnedVersionEqualsTheStoredHashes(relativePath: String) throws {
        #expect(try Self.verifyLearned(relativePath) > 0)
    }

    /// The figures, so the parameterised test cannot pass by checking nothing.
    @Test func everyStoreWithAModelCacheWasLearned() throws {
        #expect(Self.storesWithModelCache.count == 15)
        var entities = 0
        for store in Self.storesWithModelCache { entities += try Self.verifyLearned(store) }
        #expect(entities == 122)
    }

    @Test(arguments: Array(SampleStoreEvidence.storesWithoutModelCacheTable).sorted())
    func storesWithoutModelCacheSayWhatToUseInstead(relativePath: String) throws {
        let directory = try TemporaryDirectory()
        let copy = try directory.copySample(relativePath)
        let error = #expect(throws: StoreModelError.self) { try StoreModelReader.readVersion(fromStore: copy, name: "Old") }
        #expect(error?.description == "\(copy): it has no Z_MODELCACHE table (framework 519 predates the model cache), so the model that wrote it cannot be learned from it")
        #expect(error?.recoverySuggestion?.contains("match stores on this store's stored hashes only") == true)
        #expect(error?.exitStatus == .notAStore)
    }

    @Test func nullModelCacheAndNonCoreDataStores() throws {
        let directory = try TemporaryDirectory()
        let notes = try directory.copySample("stores/plaso_macos_NotesV7.storedata")
        let null = #expect(throws: StoreModelError.self) { try StoreModelReader.readVersion(fromStore: notes, name: "N") }
        #expect(null?.description == "\(notes): its Z_MODELCACHE holds NULL, so the model that wrote it cannot be learned from it")
        try StoreFixtureBuilder.database(at: directory.path("plain.sqlite"), sql: "CREATE TABLE t(x);")
        let plain = #expect(throws: StoreModelError.self) { try StoreModelReader.readVersion(fromStore: directory.path("plain.sqlite"), name: "P") }
        #expect(plain == .notACoreDataStore(path: directory.path("plain.sqlite")))
        let missing = #expect(throws: StoreAccessError.self) { try StoreModelReader.readVersion(fromStore: directory.path("none.sqlite"), name: "X") }
        #expect(missing?.exitStatus == .noInput)
    }

    @Test func restampedMetadataIsRefused() throws {
        // The V3 model cache in a store whose metadata claims other hashes.
        let directory = try TemporaryDirectory()
        let connection = try SampleStoreEvidence.open(sample: "lineages/SyncMetadata/SyncMetadata_V3.sqlite", in: directory)
        let blob = try #require(try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE")?.data)
        let fake = directory.path("restamped.sqlite")
        let wrong = ["SyncFeatureEntity": Data(repeating: 1, count: 32), "SyncableSettingsMetadata": Data(repeating: 2, count: 32)]
        try StoreFixtureBuilder.coreDataStore(at: fake, plist: StoreFixtureBuilder.metadataPlist(hashes: wrong))
        try StoreFixtureBuilder.run(fake, "INSERT INTO Z_MODELCACHE VALUES (?)", [.blob(blob)])
        let error = #expect(throws: StoreModelError.self) { try StoreModelReader.readVersion(fromStore: fake, name: "R") }
        #expect(error == .hashesDisagree(path: fake, entities: ["SyncFeatureEntity", "SyncableSettingsMetadata"]))
        #expect(error?.description.contains("the metadata was edited or stamped for another version") == true)
    }
}

/// Stores built by the tests: a model cache without version identifiers.
struct StoreModelFixtureTests {
    @Test func identifiersComeFromTheMetadataWhenTheModelHasNone() throws {
        var archive = SyntheticModelArchive()
        archive.setField("NSVersionIdentifiers", of: archive.root, to: .uid(0))
        let model = try ModelArchiveDecoder.decodeModel(archive: archive.data)
        #expect(model.versionIdentifiers.isEmpty)
        let directory = try TemporaryDirectory()
        let path = directory.path("fixture.sqlite")
        let hashes = EntityVersionHasher.versionHashes(for: model)
        try StoreFixtureBuilder.coreDataStore(
            at: path, plist: StoreFixtureBuilder.metadataPlist(hashes: hashes, extra: ["NSStoreModelVersionIdentifiers": .array([.string("7")])]))
        try StoreFixtureBuilder.run(path, "INSERT INTO Z_MODELCACHE VALUES (?)", [.blob(try RawDeflate.deflate(archive.data))])
        let version = try StoreModelReader.readVersion(fromStore: path, name: "Seven")
        #expect(version.model.versionIdentifiers == ["7"])
        #expect(version.versionIdentifiers == ["7"])
        #expect(version.versionHashes == hashes)
        #expect(version.model.entities.map(\.name) == ["Employee", "Person"])
    }
}
