import Foundation
import Testing
@testable import StoreRescue

/// `StoreCreator` from every sample's own model: the store it writes reads back as the store
/// Core Data wrote (minus the data), and creation refuses, or fails, without leaving anything.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct StoreCreatorSampleTests {
    @Test(arguments: SampleStoreSchema.storesWithModelCache)
    func createdStoreReadsBackAsTheSample(relativePath: String) throws {
        let sample = try SampleStoreSchema(relativePath)
        let model = try #require(sample.model)
        let directory = try TemporaryDirectory()
        let evidence = try SampleStoreEvidence(sample: relativePath, in: directory)
        let identifiers = evidence.metadata?["NSStoreModelVersionIdentifiers"]?.array?.compactMap(\.string) ?? [""]
        let hasHistory = sample.schema.table(named: "ATRANSACTIONSTRING") != nil
        let output = directory.path("created.sqlite")
        let result = try StoreCreator.create(
            model: model, versionIdentifiers: identifiers, at: output,
            options: StoreCreationOptions(includesPersistentHistory: hasHistory))

        let report = StoreInspector.inspect(path: output, options: InspectOptions(checksIntegrity: true))
        #expect(report.kind == .coreDataStore, "\(relativePath): \(report.findings.map(\.message))")
        let hashes = EntityVersionHasher.versionHashes(for: model)
        let metadata = try #require(report.metadata)
        #expect(metadata.versionHashes == hashes.mapValues { $0.base64EncodedString() }, "\(relativePath)")
        #expect(metadata.hashesDigest == EntityVersionHasher.hashesDigest(hashes))
        #expect(metadata.versionChecksum == EntityVersionHasher.versionChecksum(hashes))
        #expect(metadata.versionIdentifiers == identifiers)
        #expect(metadata.frameworkVersion == 1523 && metadata.storeType == "SQLite" && metadata.autoVacuumLevel == "2")
        #expect(metadata.uuid == result.uuid)
        #expect(report.integrity?.ok == true, "\(relativePath): \(report.integrity?.messages ?? [])")
        #expect(report.file?.journalMode == "wal")
        #expect(report.file?.autoVacuum == "incremental")
        #expect(report.file?.pageSize == 4096)
        #expect(report.sidecars.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasPrefix("created") } == ["created.sqlite"])
        #expect(report.findings.filter { $0.severity == .error }.isEmpty, "\(relativePath): \(report.findings.map(\.message))")

        // The schema is the sample's: tables, columns and indexes (knowledgeC 10.13 aside, see
        // SampleLayoutTests), and the Z_PRIMARYKEY rows with Z_MAX 0.
        let created = try SampleStoreSchema(absolutePath: output)
        #expect(created.entityNumbers == sample.entityNumbers, "\(relativePath)")
        #expect(Set(created.modelTables.map(\.name)) == Set(sample.modelTables.map(\.name)))
        for table in sample.modelTables {
            let mine = created.modelTables.first { $0.name == table.name }
            #expect(mine?.columns.map(\.name) == table.columns.map(\.name), "\(relativePath): \(table.name)")
            #expect(mine?.columns.map(\.type) == table.columns.map(\.type), "\(relativePath): \(table.name)")
        }
        if relativePath != SampleLayoutTests.framework851Store {
            #expect(IndexSignature.of(created.modelIndexes) == IndexSignature.of(sample.modelIndexes), "\(relativePath)")
        }
        if hasHistory {
            let historyNames = Set(["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"])
            #expect(Set(created.schema.tables.filter { $0.category == .history }.map(\.name)) == historyNames)
        }
        #expect(try created.scalar("SELECT count(*) FROM Z_MODELCACHE") == .integer(0))
        #expect(try created.scalar("SELECT count(*) FROM Z_PRIMARYKEY WHERE Z_MAX != 0") == .integer(0))
        #expect(try created.scalar("SELECT count(*) FROM Z_PRIMARYKEY") == .integer(Int64(model.entities.count)))
    }

    /// The acceptance case named in the brief: the store created from SyncMetadata_V3's model
    /// has exactly its indexes (name, columns, uniqueness), and the same SQL text.
    @Test func syncMetadataV3IndexesAreReproduced() throws {
        let sample = try SampleStoreSchema("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let directory = try TemporaryDirectory()
        let output = directory.path("SyncMetadata.sqlite")
        try StoreCreator.create(model: try #require(sample.model), versionIdentifiers: nil, at: output)
        let created = try SampleStoreSchema(absolutePath: output)
        #expect(IndexSignature.of(created.modelIndexes) == IndexSignature.of(sample.modelIndexes))
        #expect(created.modelIndexes.count == 6)
        #expect(Set(created.modelIndexes.compactMap(\.sql)) == Set(sample.modelIndexes.compactMap(\.sql)))
        #expect(created.modelIndexes.filter(\.isUnique).map(\.name).sorted()
            == ["Z_SyncFeatureEntity_UNIQUE_name", "Z_SyncableSettingsMetadata_UNIQUE_key"])
    }
}

/// Index name, table, columns and uniqueness: what a store's indexes are compared by.
struct IndexSignature: Hashable, CustomStringConvertible {
    var name: String
    var table: String
    var columns: [String]
    var isUnique: Bool
    var description: String { "\(isUnique ? "UNIQUE " : "")\(name) ON \(table) (\(columns.joined(separator: ", ")))" }

    static func of(_ indexes: [PhysicalSchema.Index]) -> Set<IndexSignature> {
        Set(indexes.map { IndexSignature(name: $0.name, table: $0.table, columns: $0.columns, isUnique: $0.isUnique) })
    }
}
