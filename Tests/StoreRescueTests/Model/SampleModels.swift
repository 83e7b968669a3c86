import Foundation
import Testing
@testable import StoreRescue

/// What a sample store says about its model: the model cache blob and the metadata plist, read
/// from a private copy of the store (with its sidecars).
struct SampleStoreEvidence {
    enum ModelCache {
        case absent
        case null
        case blob(Data)
    }

    let modelCache: ModelCache
    let metadata: PropertyListValue?

    /// Samples without a usable model cache, and why: checked explicitly, never skipped silently.
    static let storesWithoutModelCacheTable: Set<String> = [
        "lineages/Employees/MWKCoreDataTests.sqlite",  // framework 519
        "lineages/Employees/MWKCoreDataTests2.sqlite",  // framework 519
        "stores/plaso_ios_kik.sqlite",  // framework 519
    ]
    static let storesWithNullModelCache: Set<String> = ["stores/plaso_macos_NotesV7.storedata"]

    /// Copies `relativePath` with its sidecars into `directory` and reads it. A store with a
    /// `-wal` is opened read-write (on the copy) so the WAL's committed pages are seen.
    init(sample relativePath: String, in directory: TemporaryDirectory) throws {
        let connection = try Self.open(sample: relativePath, in: directory)
        let tables = try connection.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.first?.string }
        if tables.contains("Z_MODELCACHE") {
            switch try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE") {
            case .blob(let data)?: modelCache = .blob(data)
            default: modelCache = .null
            }
        } else {
            modelCache = .absent
        }
        if let blob = try connection.scalar("SELECT Z_PLIST FROM Z_METADATA")?.data {
            metadata = try BinaryPropertyListDecoder.decode(blob)
        } else {
            metadata = nil
        }
    }

    /// Opens a private copy of a sample: immutable, or read-write (the copy made writable) when
    /// it has a `-wal`, so SQLite reads the committed pages the WAL holds.
    static func open(sample relativePath: String, in directory: TemporaryDirectory) throws -> SQLiteConnection {
        let copy = try directory.copySample(relativePath)
        let fileManager = FileManager.default
        guard fileManager.fileExists(atPath: copy + "-wal") else {
            return try SQLiteConnection(path: copy, options: SQLiteOpenOptions(mode: .immutable))
        }
        for path in [copy, copy + "-wal", copy + "-shm"] where fileManager.fileExists(atPath: path) {
            try fileManager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        return try SQLiteConnection(path: copy, options: SQLiteOpenOptions(mode: .readWrite))
    }

    /// `NSStoreModelVersionHashes` as entity name → hash.
    var storedHashes: [String: Data]? {
        metadata?["NSStoreModelVersionHashes"]?.dictionary?.compactMapValues(\.data)
    }
}

/// Reads models from the samples for structural tests.
enum SampleModels {
    /// The model cache of a sample store, decoded.
    static func modelCache(_ relativePath: String) throws -> ManagedObjectModel {
        let directory = try TemporaryDirectory()
        let evidence = try SampleStoreEvidence(sample: relativePath, in: directory)
        guard case .blob(let blob) = evidence.modelCache else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "\(relativePath) has no model cache"])
        }
        return try ModelArchiveDecoder.decodeModelCache(compressed: blob)
    }

    /// The inflated model-cache archive of a sample store, as a property list.
    static func modelCacheArchive(_ relativePath: String) throws -> PropertyListValue {
        let directory = try TemporaryDirectory()
        let evidence = try SampleStoreEvidence(sample: relativePath, in: directory)
        guard case .blob(let blob) = evidence.modelCache else { return .dictionary([:]) }
        return try BinaryPropertyListDecoder.decode(try RawDeflate.inflate(blob, maximumOutputBytes: 64 << 20))
    }
}
