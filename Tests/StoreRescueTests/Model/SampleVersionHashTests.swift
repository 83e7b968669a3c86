import Foundation
import Testing
@testable import StoreRescue

/// Every real store's own model cache reproduces the hashes, digest and checksum Core Data stored
/// in its metadata; every compiled model reproduces its `VersionInfo.plist`.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct SampleVersionHashTests {
    struct Outcome {
        var entities = 0
        var digestChecked = false
        var checksumChecked = false
    }

    /// Decodes the store's model cache and compares everything the metadata stores; nil when the
    /// store has no model cache (only for the stores listed as such).
    static func verify(_ relativePath: String) throws -> Outcome? {
        let directory = try TemporaryDirectory()
        let evidence = try SampleStoreEvidence(sample: relativePath, in: directory)
        let blob: Data
        switch evidence.modelCache {
        case .absent:
            #expect(SampleStoreEvidence.storesWithoutModelCacheTable.contains(relativePath), "\(relativePath) unexpectedly lacks Z_MODELCACHE")
            #expect(evidence.storedHashes?.isEmpty == false, "\(relativePath) should still store hashes")
            return nil
        case .null:
            #expect(SampleStoreEvidence.storesWithNullModelCache.contains(relativePath), "\(relativePath) unexpectedly has a NULL model cache")
            #expect(evidence.metadata == nil, "NotesV7 has a NULL Z_PLIST too")
            return nil
        case .blob(let data):
            blob = data
        }
        let model = try ModelArchiveDecoder.decodeModelCache(compressed: blob)
        let hashes = EntityVersionHasher.versionHashes(for: model)
        let stored = try #require(evidence.storedHashes, "\(relativePath) has no NSStoreModelVersionHashes")
        #expect(hashes.count == stored.count, "\(relativePath)")
        for (name, hash) in stored {
            #expect(hashes[name] == hash, "\(relativePath): entity \(name)")
        }
        #expect(hashes.values.allSatisfy { $0.count == 32 })
        var outcome = Outcome(entities: hashes.count)
        if let digest = evidence.metadata?["NSStoreModelVersionHashesDigest"]?.string {
            #expect(EntityVersionHasher.hashesDigest(hashes) == digest, "\(relativePath)")
            outcome.digestChecked = true
        }
        if let checksum = evidence.metadata?["NSStoreModelVersionChecksumKey"]?.string {
            #expect(EntityVersionHasher.versionChecksum(hashes) == checksum, "\(relativePath)")
            outcome.checksumChecked = true
        }
        let identifiers = evidence.metadata?["NSStoreModelVersionIdentifiers"]?.array?.compactMap(\.string) ?? []
        #expect(model.versionIdentifiers == identifiers.sorted(), "\(relativePath)")
        return outcome
    }

    @Test(arguments: Samples.allStores)
    func modelCacheReproducesStoredHashes(relativePath: String) throws {
        _ = try Self.verify(relativePath)
    }

    /// The counts, so the parameterised test above cannot pass by checking nothing.
    @Test func everySampleWithAModelCacheWasChecked() throws {
        var checked: [String] = []
        var entities = 0, digests = 0, checksums = 0
        for relativePath in Samples.allStores {
            guard let outcome = try Self.verify(relativePath) else { continue }
            checked.append(relativePath)
            entities += outcome.entities
            digests += outcome.digestChecked ? 1 : 0
            checksums += outcome.checksumChecked ? 1 : 0
        }
        #expect(Samples.allStores.count == 19)
        #expect(checked.count == 15)
        #expect(entities == 122)
        #expect(digests == 10)
        #expect(checksums == 5)
    }

    @Test func walSamplesAreReadWithTheirWAL() throws {
        let directory = try TemporaryDirectory()
        let connection = try SampleStoreEvidence.open(sample: "stores/swiftdata_ResourcesManager_wal/default.store", in: directory)
        // 4 rows in the main file alone, 7 with the WAL (format notes §1).
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM")?.int64 == 7)
    }

    @Test(arguments: ["models/Model.momd", "models/DVIA_v2.momd"])
    func compiledModelsReproduceVersionInfo(momd: String) throws {
        let directory = try TemporaryDirectory()
        let folder = URL(fileURLWithPath: try directory.copySampleItem(momd))
        let versionInfo = try BinaryPropertyListDecoder.decode(Data(contentsOf: folder.appendingPathComponent("VersionInfo.plist")))
        let versions = try #require(versionInfo["NSManagedObjectModel_VersionHashes"]?.dictionary)
        #expect(!versions.isEmpty)
        for (version, expected) in versions {
            let mom = try Data(contentsOf: folder.appendingPathComponent("\(version).mom"))
            let model = try ModelArchiveDecoder.decodeModel(archive: mom)
            let expectedHashes = try #require(expected.dictionary).compactMapValues(\.data)
            #expect(EntityVersionHasher.versionHashes(for: model) == expectedHashes, "\(momd) \(version)")
            #expect(model.entities.map(\.name).sorted() == expectedHashes.keys.sorted())
        }
    }

    @Test func compiledModelsHaveTheExpectedEntities() throws {
        let directory = try TemporaryDirectory()
        let model = URL(fileURLWithPath: try directory.copySampleItem("models/Model.momd"))
        let user = try ModelArchiveDecoder.decodeModel(archive: Data(contentsOf: model.appendingPathComponent("Model.mom")))
        #expect(user.entities.map(\.name) == ["User"])
        let dvia = URL(fileURLWithPath: try directory.copySampleItem("models/DVIA_v2.momd"))
        let empty = try ModelArchiveDecoder.decodeModel(archive: Data(contentsOf: dvia.appendingPathComponent("DVIA_v2.mom")))
        #expect(empty.entities.isEmpty)
        #expect(empty.versionIdentifiers == [""])
    }
}
