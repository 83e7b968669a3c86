import Foundation

/// What `CatalogLearner.learn` did.
public struct CatalogLearnResult: Sendable, Equatable {
    /// The catalog file.
    public var catalogPath: String
    /// The version learned from the store.
    public var version: CatalogVersion
    /// True when the catalog file did not exist and was (or, on a dry run, would be) created.
    public var createsCatalog: Bool
    /// False on a dry run.
    public var wasWritten: Bool
    /// Versions already in the catalog with the same checksum: a staged migration could not tell
    /// them from the learned one.
    public var sameChecksumAs: [String]
}

/// Adds the version a reference store was written by to a catalog file: the store's model cache,
/// as an inline definition (`storerescue catalog learn`). The store is never modified; the
/// catalog is replaced atomically, and only if it still loads and has no version of that name.
///
/// ```swift
/// let result = try CatalogLearner.learn(store: "reference/v1.sqlite", catalog: "catalog.json", name: "V1", app: "Journal")
/// ```
public enum CatalogLearner {
    /// - Parameters:
    ///   - app: the app's name; required when the catalog does not exist yet, and when given for
    ///     an existing catalog, must match its `app`.
    ///   - dryRun: learn and check everything, but write nothing.
    /// - Throws: `CatalogFileError` (the catalog cannot be read, is invalid, already has the name,
    ///   or cannot be written), and whatever reading the store throws (`StoreAccessError`,
    ///   `StoreModelError`).
    public static func learn(
        store: String, catalog catalogPath: String, name: String, app: String? = nil, dryRun: Bool = false,
        storeOptions: StoreOpenOptions = StoreOpenOptions()
    ) throws -> CatalogLearnResult {
        precondition(!name.isEmpty, "a version name is required")
        var file: CatalogFile
        var existing: [CatalogVersion] = []
        let creates = BoundedFile.kind(of: catalogPath) == .missing && FileFingerprint(path: catalogPath) == nil
        if creates {
            guard let app, !app.isEmpty else { throw CatalogFileError.appNameRequired(path: catalogPath) }
            file = CatalogFile(newAt: catalogPath, app: app)
        } else {
            file = try CatalogFile.read(path: catalogPath)
            if let app, app != file.app { throw CatalogFileError.appMismatch(path: catalogPath, inFile: file.app, given: app) }
            existing = try file.loadCatalog().versions
            if existing.contains(where: { $0.name == name }) { throw CatalogFileError.versionNameTaken(path: catalogPath, name: name) }
        }
        let version = try StoreModelReader.readVersion(fromStore: store, name: name, options: storeOptions)
        file.appendInlineVersion(version, notes: "learned from the model cache of \(store)")
        if !dryRun { try file.write() }
        return CatalogLearnResult(
            catalogPath: catalogPath, version: version, createsCatalog: creates, wasWritten: !dryRun,
            sameChecksumAs: existing.filter { $0.versionChecksum == version.versionChecksum }.map(\.name))
    }
}
