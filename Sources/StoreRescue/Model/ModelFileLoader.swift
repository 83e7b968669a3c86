import Foundation

/// Reads a model from one file: a compiled `.mom` (a binary `NSKeyedArchiver` plist) or a store
/// whose `Z_MODELCACHE` holds the model that wrote it. Which one is told by the file's first
/// bytes, not its name.
///
/// ```swift
/// let model = try ModelFileLoader.load(path: "App.momd/App 3.mom")
/// ```
public enum ModelFileLoader {
    /// The largest `.mom` read (real ones are well under a megabyte).
    public static let maximumModelFileBytes = 64 << 20
    /// The largest compressed model cache read, and the most it may inflate to.
    public static let maximumModelCacheBytes: Int64 = 32 << 20
    public static let maximumInflatedModelBytes = 128 << 20

    /// Reads the model in the file at `path`.
    ///
    /// - Throws: `StoreAccessError` when the path is missing, a directory, a refused symbolic
    ///   link or unreadable (or, for a store, cannot be opened); `ModelFileError` when the file
    ///   is neither a model nor a store with a model cache; `ModelDecodingError` when the model
    ///   archive is damaged.
    public static func load(path: String, followsSymlinks: Bool = false) throws -> ManagedObjectModel {
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            let moms = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".mom") }.sorted()
            throw ModelFileError.modelFolder(path: path, versions: moms)
        }
        let prefix: [UInt8]
        do {
            prefix = try InputProbe.readPrefix(path: path, followsSymlinks: followsSymlinks, count: 16)
        } catch {
            // The probe names the problem (missing, symlink, directory, FIFO…) with its exit status.
            _ = try InputProbe(path: path, followsSymlinks: followsSymlinks)
            throw error
        }
        if prefix.starts(with: Array("bplist00".utf8)) {
            return try ModelArchiveDecoder.decodeModel(archive: try readModelFile(path: path, followsSymlinks: followsSymlinks))
        }
        if prefix.starts(with: SQLiteFileHeader.magic) {
            return try readModelCache(path: path, followsSymlinks: followsSymlinks)
        }
        if prefix.isEmpty { _ = try InputProbe(path: path, followsSymlinks: followsSymlinks) }  // reports "empty"
        throw ModelFileError.notAModel(path: path)
    }

    static func readModelFile(path: String, followsSymlinks: Bool) throws -> Data {
        do {
            return try BoundedFile.contents(of: path, limit: maximumModelFileBytes, followsSymlinks: followsSymlinks)
        } catch {
            if case .tooLarge(let size, let limit) = error {
                throw ModelFileError.tooLarge(path: path, bytes: size, limit: Int64(limit))
            }
            if case .tooManyOpenFiles = error {
                throw StoreAccessError.tooManyOpenFiles(path: path, reason: String(cString: strerror(EMFILE)))
            }
            _ = try InputProbe(path: path, followsSymlinks: followsSymlinks)  // names what the path is
            throw StoreAccessError.rejected(path: path, kind: .unreadable, reason: "cannot be read: \(error.description)")
        }
    }

    static func readModelCache(path: String, followsSymlinks: Bool) throws -> ManagedObjectModel {
        let blob = try OpenedStore.readingConsistently(path: path, options: StoreOpenOptions(followsSymlinks: followsSymlinks)) { store in
            try store.read { connection -> Data in
                let tables = try connection.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'Z_MODELCACHE'")
                guard !tables.isEmpty else { throw ModelFileError.noModelCache(path: path, reason: "it has no Z_MODELCACHE table") }
                let row = try connection.rows("SELECT typeof(Z_CONTENT), length(Z_CONTENT) FROM Z_MODELCACHE LIMIT 1").first
                guard let row, row[0].string == "blob" else {
                    throw ModelFileError.noModelCache(path: path, reason: row == nil ? "Z_MODELCACHE has no row" : "Z_MODELCACHE holds no model")
                }
                let length = row[1].int64 ?? 0
                guard length <= maximumModelCacheBytes else {
                    throw ModelFileError.tooLarge(path: path, bytes: length, limit: maximumModelCacheBytes)
                }
                return try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1")?.data ?? Data()
            }
        }
        return try ModelArchiveDecoder.decodeModelCache(compressed: blob, maximumInflatedBytes: maximumInflatedModelBytes)
    }
}
