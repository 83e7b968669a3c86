import Foundation

/// Writes a new, empty store for a model version, exactly as Core Data would create it:
/// every table and index of `StoreLayoutBuilder`'s layout, the bookkeeping tables, one
/// `Z_PRIMARYKEY` row per entity (`Z_MAX` 0) and the `Z_METADATA` row of `StoreMetadataWriter`.
///
/// The store is built privately and appears at the target path complete or not at all:
/// 1. nothing may exist at the path, nor a `-wal`, `-shm` or `-journal` of it (no overwrite, no
///    `--force`), and the path may not be a symbolic link;
/// 2. the store is built in a private folder (mode 0700) created inside the destination folder,
///    in a file created exclusively (`O_EXCL | O_NOFOLLOW`, mode 0644 less the umask);
/// 3. `page_size` 4096 and `auto_vacuum` INCREMENTAL are set before any table, then
///    `journal_mode=WAL` (header bytes 18–19 = 2, as Core Data leaves them); every table, index
///    and row is written in one transaction; `integrity_check` must say `ok`;
/// 4. the WAL is checkpointed and the connection closed, so no `-wal` or `-shm` remains; the
///    header is checked; the file is fsynced;
/// 5. it is hard-linked to the target path (which fails rather than replace anything that
///    appeared meanwhile), the folder is fsynced, and the private folder removed.
/// On any failure the private folder and everything in it is removed, and the target path is
/// left as it was. (A crash mid-way can leave a hidden `.create.storerescue-tmp-*` folder (removed by the next `create` in that folder), never a
/// partial store at the target path.)
///
/// `Z_MODELCACHE` is created empty (table, no row): the archive Core Data writes there is an
/// `NSKeyedArchiver` form of the model, which this tool can read but does not write, and a cache
/// that Core Data could not read back would be worse than none. Core Data fills it the next time
/// it saves to the store.
///
/// ```swift
/// let result = try StoreCreator.create(model: model, versionIdentifiers: nil, at: "V1.sqlite",
///                                      options: StoreCreationOptions(includesPersistentHistory: true))
/// ```
public enum StoreCreator {
    /// Checks, without writing anything, that a store could be created at `path`: its folder
    /// exists and neither it, a sidecar of it, nor a symbolic link is there. `create` checks
    /// again itself; callers use this to refuse before doing expensive work.
    ///
    /// - Throws: `StoreCreationError` naming what is in the way.
    public static func checkTarget(_ path: String) throws {
        _ = try CreationTarget(path: path)
    }

    /// Creates the store at `path`, the caller's final result (`PublishedResult`: "the new store").
    ///
    /// - Parameters:
    ///   - versionIdentifiers: `NSStoreModelVersionIdentifiers`; nil takes the model's own (`[""]`
    ///     when it has none).
    /// - Throws: `LayoutError` for a model that cannot be laid out (before anything is written);
    ///   `StoreCreationError` when the path is taken or unusable, or writing fails.
    @discardableResult
    public static func create(
        model: ManagedObjectModel, versionIdentifiers: [String]?, at path: String,
        options: StoreCreationOptions = StoreCreationOptions()
    ) throws -> StoreCreationResult {
        try create(
            model: model, versionIdentifiers: versionIdentifiers, at: path, options: options,
            result: PublishedResult(path: path, description: "the new store"), faultInjection: nil)
    }

    /// The points at which a test can make creation fail, to see that nothing is left behind.
    enum Stage: CaseIterable {
        case workspaceCreated, schemaWritten, beforePublishing, published
    }

    static let declaredTypes: Set<String> = ["INTEGER", "FLOAT", "VARCHAR", "TIMESTAMP", "BLOB", "DECIMAL"]

    static func create(
        model: ManagedObjectModel, versionIdentifiers: [String]?, at path: String, options: StoreCreationOptions,
        result: PublishedResult?, faultInjection: ((Stage) throws -> Void)?
    ) throws -> StoreCreationResult {
        let layout = try StoreLayoutBuilder.layout(
            for: model, options: StoreLayoutOptions(includesPersistentHistory: options.includesPersistentHistory))
        let allTables = layout.tables + (layout.persistentHistory?.tables ?? [])
        let undeclared = allTables.flatMap(\.columns).map(\.type).filter { !declaredTypes.contains($0) }
        precondition(undeclared.isEmpty, "the layout builder declared column types \(undeclared)")
        let identifiers = (versionIdentifiers ?? model.versionIdentifiers).isEmpty ? [""] : (versionIdentifiers ?? model.versionIdentifiers)
        let hashes = EntityVersionHasher.versionHashes(for: model)
        let plist = StoreMetadataWriter.plist(
            versionHashes: hashes, versionIdentifiers: identifiers, frameworkVersion: options.frameworkVersion,
            maximumFrameworkVersion: options.maximumFrameworkVersion, preserving: options.additionalMetadata)
        let uuid = (options.storeUUID ?? UUID()).uuidString.uppercased()

        let target = try CreationTarget(path: path)
        let fileName = "new-store.sqlite"
        let workspace = try target.makeWorkspace(prefix: ".create", longestFile: fileName)
        defer { workspace.remove() }
        try faultInjection?(.workspaceCreated)

        let file = workspace.path(fileName)
        do {
            let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw POSIXFailure(operation: "create \(file)", code: errno) }
            close(fd)
            try StoreSchemaWriter(path: file, reportedPath: path).write(layout: layout, uuid: uuid, plist: plist)
            try faultInjection?(.schemaWritten)
            try StoreSchemaWriter.checkFinished(file: file, workspace: workspace.path, reportedPath: path)
        } catch let error as StoreCreationError {
            throw error
        } catch {
            throw Self.failure(error, path: path, folder: target.folder, workspace: workspace.path)
        }
        do {
            try target.publishDurably(
                file, as: result, beforeLinking: { try faultInjection?(.beforePublishing) }, afterLinking: { try faultInjection?(.published) })
        } catch let error as StoreCreationError {
            throw error
        } catch {
            throw Self.failure(error, path: path, folder: target.folder, workspace: workspace.path)
        }
        return StoreCreationResult(
            path: path, uuid: uuid, frameworkVersion: options.frameworkVersion, versionIdentifiers: identifiers,
            versionHashes: hashes.mapValues { $0.base64EncodedString() },
            hashesDigest: EntityVersionHasher.hashesDigest(hashes), versionChecksum: EntityVersionHasher.versionChecksum(hashes),
            entityCount: layout.entityNumbers.count,
            tables: layout.tables.map(\.name) + ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
                + (layout.persistentHistory?.tables.map(\.name) ?? []),
            indexCount: layout.indexes.count + (layout.persistentHistory?.indexes.count ?? 0),
            includesPersistentHistory: options.includesPersistentHistory, modelCacheWritten: false)
    }

    /// A failure while writing the store at `path` (in the private folder `workspace` inside
    /// `folder`), as `WriteFailure` reads it: a refused file is the folder's (exit 73), memory
    /// says so, only no room is "free space" (74); SQL SQLite still refuses after the layout was
    /// checked is this tool's bug (70). CANTOPEN and READONLY read "free space" until stop 27.
    static func failure(_ error: any Error, path: String, folder: String, workspace: String) -> StoreCreationError {
        let failure = WriteFailure(error, workspace: workspace)
        switch failure.kind {
        case .refused: return .verificationFailed(path: path, reason: "SQLite refused the schema written for the model: \(failure.reason)")
        case .noRoom: return .writeFailed(path: path, reason: failure.reason)
        case .denied: return .writeDenied(path: path, folder: folder, reason: failure.reason)
        case .outOfMemory: return .outOfMemory(path: path, reason: failure.reason)
        case .tooManyOpenFiles: return .tooManyOpenFiles(path: path, reason: failure.reason)
        }
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? SQLiteError { return error.message + " (SQLite code \(error.resultCode))" }
        if let error = error as? POSIXFailure { return error.description }
        if let error = error as? CocoaError, let description = error.userInfo[NSLocalizedDescriptionKey] as? String { return description }
        return "\(error)"
    }
}
