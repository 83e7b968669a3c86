import Foundation
import Testing
@testable import StoreRescue

@Suite struct StoreMetadataWriterTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Item", properties: [.attribute(AttributeDescription(name: "name", type: .string))])
    ])

    @Test func currentFrameworkWritesEveryKey() throws {
        let plist = StoreMetadataWriter.plist(for: Self.model)
        let hashes = EntityVersionHasher.versionHashes(for: Self.model)
        #expect(plist == [
            "NSStoreType": .string("SQLite"),
            "NSPersistenceFrameworkVersion": .integer(1523),
            "NSPersistenceMaximumFrameworkVersion": .integer(1523),
            "NSStoreModelVersionHashes": .dictionary(hashes.mapValues(PropertyListValue.data)),
            "NSStoreModelVersionHashesVersion": .integer(3),
            "NSStoreModelVersionIdentifiers": .array([.string("")]),
            "NSStoreModelVersionHashesDigest": .string(EntityVersionHasher.hashesDigest(hashes)),
            "NSStoreModelVersionChecksumKey": .string(EntityVersionHasher.versionChecksum(hashes)),
            "_NSAutoVacuumLevel": .string("2"),
        ])
        let decoded = try BinaryPropertyListDecoder.decode(StoreMetadataWriter.encode(plist))
        #expect(decoded == .dictionary(plist))
    }

    @Test func identifiersGivenOrFromTheModel() {
        var model = Self.model
        #expect(StoreMetadataWriter.plist(for: model, versionIdentifiers: ["v4"])["NSStoreModelVersionIdentifiers"] == .array([.string("v4")]))
        #expect(StoreMetadataWriter.plist(for: model, versionIdentifiers: [])["NSStoreModelVersionIdentifiers"] == .array([.string("")]))
        model.versionIdentifiers = ["1.0.0"]
        #expect(StoreMetadataWriter.plist(for: model)["NSStoreModelVersionIdentifiers"] == .array([.string("1.0.0")]))
    }

    /// Restamping keeps app-defined keys and drops what an older framework would not write.
    @Test func existingKeysArePreservedAndStaleOnesDropped() {
        let existing: [String: PropertyListValue] = [
            "STUnique": .data(Data([1, 2, 3])), "ACKeychainVersion": .integer(7),
            "_NSStoreAncillaryModelVersionHashesMetadataKey": .dictionary([:]),
            "NSStoreModelVersionChecksumKey": .string("stale"), "NSStoreModelVersionHashesDigest": .string("stale"),
            "NSPersistenceMaximumFrameworkVersion": .integer(1600), "NSStoreType": .string("Binary"),
        ]
        let plist = StoreMetadataWriter.plist(for: Self.model, frameworkVersion: 866, preserving: existing)
        #expect(plist["STUnique"] == .data(Data([1, 2, 3])))
        #expect(plist["ACKeychainVersion"] == .integer(7))
        #expect(plist["_NSStoreAncillaryModelVersionHashesMetadataKey"] == .dictionary([:]))
        #expect(plist["NSStoreType"] == .string("SQLite"))
        #expect(plist["NSPersistenceFrameworkVersion"] == .integer(866))
        for dropped in ["NSStoreModelVersionChecksumKey", "NSStoreModelVersionHashesDigest", "NSPersistenceMaximumFrameworkVersion"] {
            #expect(plist[dropped] == nil, "\(dropped) is not written by framework 866")
        }
        let explicitMaximum = StoreMetadataWriter.plist(for: Self.model, frameworkVersion: 1345, maximumFrameworkVersion: 1400)
        #expect(explicitMaximum["NSPersistenceMaximumFrameworkVersion"] == .integer(1400))
        #expect(explicitMaximum["NSStoreModelVersionChecksumKey"] != nil)
    }

    @Test func metadataRowHasAnUppercaseUUID() throws {
        let uuid = try #require(UUID(uuidString: "f2a1c4b6-1c2d-4e5f-8a9b-0c1d2e3f4a5b"))
        let metadata = StoreMetadataWriter.metadata(for: Self.model, uuid: uuid)
        #expect(metadata.uuid == "F2A1C4B6-1C2D-4E5F-8A9B-0C1D2E3F4A5B")
        #expect(metadata.rowVersion == 1)
        let fresh = StoreMetadataWriter.metadata(for: Self.model)
        #expect(fresh.uuid == fresh.uuid?.uppercased() && fresh.uuid?.count == 36)
        #expect(fresh.uuid != StoreMetadataWriter.metadata(for: Self.model).uuid)
    }

    /// Given a sample's framework version and identifiers, the writer reproduces its metadata
    /// exactly: every key present or absent as Core Data left it, every value equal.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"), arguments: SampleStoreSchema.storesWithModelCache)
    func reproducesEverySamplesMetadata(relativePath: String) throws {
        let directory = try TemporaryDirectory()
        let evidence = try SampleStoreEvidence(sample: relativePath, in: directory)
        let stored = try #require(evidence.metadata?.dictionary, "\(relativePath) has no metadata")
        guard case .blob(let blob) = evidence.modelCache else { Issue.record("\(relativePath) has no model cache"); return }
        let model = try ModelArchiveDecoder.decodeModelCache(compressed: blob)
        let framework = try #require(stored["NSPersistenceFrameworkVersion"]?.integer)
        let identifiers = stored["NSStoreModelVersionIdentifiers"]?.array?.compactMap(\.string) ?? []
        let written = StoreMetadataWriter.plist(
            for: model, versionIdentifiers: identifiers, frameworkVersion: Int(framework), preserving: stored)
        #expect(written == stored, "\(relativePath): keys \(Set(written.keys).symmetricDifference(stored.keys))")
    }
}
