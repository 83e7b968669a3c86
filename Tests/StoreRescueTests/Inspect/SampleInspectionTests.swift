import Foundation
import Testing
@testable import StoreRescue

/// `inspect` over every real store written by Apple's frameworks.
@Suite(.enabled(if: Samples.available, "../shared/samples is absent"))
struct SampleInspectionTests {
    /// Stores known to have no usable model cache (see ../shared/samples/ORIGINS.md).
    static let withoutModelCache: Set<String> = [
        "stores/plaso_ios_kik.sqlite", "stores/plaso_macos_NotesV7.storedata",
        "lineages/Employees/MWKCoreDataTests.sqlite", "lineages/Employees/MWKCoreDataTests2.sqlite",
    ]

    @Test func everySampleIsListed() {
        #expect(Samples.allStores.count >= 19)
    }

    @Test(arguments: Samples.allStores)
    func everyStoreIsReadAndItsModelCacheReproducesItsHashes(relativePath: String) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample(relativePath)
        let report = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true, checksIntegrity: true))
        #expect(report.error == nil, "\(relativePath): \(report.error?.message ?? "")")
        #expect(report.kind == .coreDataStore)
        #expect(report.exitStatus == .success)
        #expect(report.integrity?.ok == true)
        #expect(!report.entities.isEmpty)
        if Self.withoutModelCache.contains(relativePath) {
            #expect(report.model == nil)
            #expect(report.findings.contains { $0.code == "no-model-cache" || $0.code == "no-metadata" })
        } else {
            let model = try #require(report.model, "\(relativePath) has a model cache")
            #expect(model.hashesMatchMetadata, "\(relativePath): mismatched \(model.mismatchedEntities)")
            #expect(model.entities.allSatisfy { $0.versionHash.count == 44 })
            #expect(!report.findings.contains { $0.code == "hashes-disagree" || $0.code == "checksum-disagrees" || $0.code == "digest-disagrees" })
            if let storedChecksum = report.metadata?.versionChecksum {
                #expect(storedChecksum == model.computedVersionChecksum)
            }
        }
    }

    @Test func walSampleShowsTheDataOfItsWAL() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store")
        let report = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true))
        #expect(report.accessMethod == .privateCopy)
        #expect(report.sidecars == ["-wal", "-shm"])
        let item = try #require(report.entities.first { $0.name == "Item" })
        #expect(item.max == 12)
        #expect(item.rowCount == 7)
        #expect(report.findings.contains { $0.code == "uncheckpointed-wal" })
    }

    /// A `-wal` longer than what SQLite would apply (here the sample's, grown sparse to 256 MiB;
    /// or all zeros) is copied only as far as its last valid commit, and the finding says what
    /// the frames are, not the file's size: a review's sparse 1 GB `-wal` was copied whole into
    /// `$TMPDIR` and reported as 1 GB "of transactions not yet in the main file".
    @Test func onlyTheWALsCommittedFramesAreCopiedAndReported() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store")
        let used = try #require(PrivateCopier.usedLength(ofWAL: path + "-wal"))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int64)
        #expect(used > 32 && used <= size)
        #expect(truncate(path + "-wal", 256 << 20) == 0)
        let report = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true))
        #expect(report.entities.first { $0.name == "Item" }?.rowCount == 7, "the same content as before")
        let finding = try #require(report.findings.first { $0.code == "uncheckpointed-wal" })
        #expect(finding.message.hasPrefix("the -wal holds \(used) bytes of committed frames"), "\(finding.message)")
        #expect(finding.message.contains("the other \((256 << 20) - used) of its \(256 << 20) bytes are no transaction SQLite would apply"))

        // A -wal of zeros holds nothing SQLite would apply.
        let zeros = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store", as: "zeros.store")
        try Data(repeating: 0, count: 4096).write(to: URL(fileURLWithPath: zeros + "-wal"))
        #expect(PrivateCopier.usedLength(ofWAL: zeros + "-wal") == 0)
        let plain = StoreInspector.inspect(path: zeros)
        #expect(!plain.findings.contains { $0.code == "uncheckpointed-wal" })
        #expect(plain.findings.contains { $0.message.contains("holds no committed frame SQLite would apply") })

        // A bad byte in the header or in the first frame: SQLite applies none of it, yet it
        // may hold lost transactions; a warning, not "nothing is missing" (a review).
        for offset in [12, 32 + 24 + 100] {
            let damaged = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store", as: "damaged-\(offset).store")
            try SalvageFixtures.flipByte(at: offset, of: damaged + "-wal")
            let report = StoreInspector.inspect(path: damaged)
            #expect(report.findings.contains { $0.severity == .warning && $0.message.contains("looks like a log but SQLite applies none of it") },
                    "offset \(offset): \(report.findings.map(\.message))")
        }
        // A torn first frame (a crash while an unfinished transaction was written: no commit
        // beyond it) is normal: the info, not the warning (a review).
        let torn = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store", as: "torn.store")
        #expect(truncate(torn + "-wal", 32 + 24 + 100) == 0)
        let tornReport = StoreInspector.inspect(path: torn)
        #expect(!tornReport.findings.contains { $0.severity == .warning && $0.code == "uncheckpointed-wal" }, "\(tornReport.findings.map(\.message))")
    }

    /// A store whose own file name ends in "-wal" (with a -wal of its own) is copied whole:
    /// only its sidecar is cut to its committed frames (a review's was copied empty).
    @Test func aStoreNamedLikeAWALIsCopiedWhole() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample("stores/swiftdata_ResourcesManager_wal/default.store", as: "Store-wal")
        unlink(path + "-shm")
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        let report = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true))
        #expect(report.accessMethod == .privateCopy)
        #expect(report.entities.first { $0.name == "Item" }?.rowCount == 7, "\(report.error?.message ?? "")")
        // Copied empty, the copy never matched and the store was read through its locks, which
        // left a -shm beside it.
        #expect(try StoreFixtureBuilder.snapshot(of: dir.url.path) == before, "nothing created beside the store")
    }

    @Test func storeWithoutSidecarsIsReadInPlace() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.copySample("stores/swiftdata_CartKitSwiftData_v1.sqlite")
        let report = StoreInspector.inspect(path: path)
        #expect(report.accessMethod == .immutableOriginal)
        #expect(report.metadata?.frameworkVersion == 1523)
        #expect(report.metadata?.versionIdentifiers == ["1.0.0"])
        #expect(report.metadata?.uuid == "C2A6F180-A5E4-47ED-ABB7-F14AB955DC76")
        #expect(report.metadata?.versionHashes?.keys.sorted() == ["CartItemModel", "CartItemModifierModel", "CartModel"])
    }

    @Test func oddStoresGiveFindingsNotFailures() throws {
        let dir = try TemporaryDirectory()
        let notes = StoreInspector.inspect(path: try dir.copySample("stores/plaso_macos_NotesV7.storedata"))
        #expect(notes.kind == .coreDataStore)
        #expect(notes.metadata == nil)
        #expect(notes.findings.contains { $0.code == "no-metadata" && $0.severity == .error })
        let kik = StoreInspector.inspect(path: try dir.copySample("stores/plaso_ios_kik.sqlite"))
        #expect(kik.kind == .coreDataStore)
        #expect(kik.metadata?.frameworkVersion == 519)
        #expect(kik.findings.contains { $0.code == "no-model-cache" })
        #expect(kik.findings.contains { $0.code == "no-version-checksum" })
        #expect(kik.findings.contains { $0.code == "no-hashes-digest" })
    }

    @Test func appDefinedMetadataKeysAreKept() throws {
        let dir = try TemporaryDirectory()
        let report = StoreInspector.inspect(path: try dir.copySample("stores/plaso_ios_Accounts3.sqlite"))
        let other = try #require(report.metadata?.otherKeys)
        #expect(!other.isEmpty, "Accounts3 carries app keys in its metadata")
    }

    /// Reading never changes a byte next to the input nor leaves a file behind.
    @Test func inputDirectoriesAreByteForByteUnchanged() throws {
        let dir = try TemporaryDirectory()
        for relativePath in Samples.allStores {
            try dir.copySample(relativePath, as: relativePath.replacingOccurrences(of: "/", with: "_"))
        }
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        for relativePath in Samples.allStores {
            let path = dir.path(relativePath.replacingOccurrences(of: "/", with: "_"))
            _ = StoreInspector.inspect(path: path, options: InspectOptions(countsRows: true, checksIntegrity: true))
        }
        let after = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        #expect(before.keys.sorted() == after.keys.sorted())
        for (name, content) in before {
            #expect(after[name] == content, "\(name) changed")
        }
    }
}
