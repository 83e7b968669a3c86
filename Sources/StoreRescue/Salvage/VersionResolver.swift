import Foundation

/// Decides which catalog version a damaged store was, from what survived, most direct evidence
/// first: `--version`; the stored entity hashes of its `Z_METADATA` row; the hashes of its own
/// model cache; its physical schema (entity and join tables with exactly a version's columns);
/// the catalog's only version. Evidence that fits no version is passed over (with a note);
/// evidence that fits several equally is an error, never a guess.
enum VersionResolver {
    struct Evidence {
        var metadata: StoreMetadata?
        var modelCacheHashes: [String: Data]?
        /// Tables read from the store's schema (empty when it is unreadable).
        var schemaTables: [TableDefinition]
    }

    struct Resolution {
        var version: CatalogVersion
        /// `option`, `metadata`, `modelCache`, `schema`, `onlyVersion`.
        var source: String
        var notes: [String]
    }

    static func resolve(catalog: Catalog, requested: String?, evidence: Evidence, path: String) throws -> Resolution {
        let names = catalog.versions.map(\.name)
        if let requested {
            guard let version = catalog.version(named: requested) else {
                throw SalvageError.unknownVersion(catalog: catalog.sourcePath, version: requested, available: names)
            }
            return Resolution(version: version, source: "option", notes: disagreement(with: version, catalog: catalog, evidence: evidence, path: path))
        }
        var notes: [String] = []
        if let metadata = evidence.metadata, let hashes = metadata.versionHashes, !hashes.isEmpty {
            let fitting = catalog.versions.filter { $0.versionHashes == hashes }
            if let chosen = try choose(fitting, identifiers: metadata.versionIdentifiers, path: path) {
                return Resolution(version: chosen, source: "metadata", notes: notes)
            }
            notes.append("the surviving metadata's entity hashes are those of no catalog version")
        }
        if let hashes = evidence.modelCacheHashes {
            let fitting = catalog.versions.filter { $0.versionHashes == hashes }
            if let chosen = try choose(fitting, identifiers: nil, path: path) {
                return Resolution(version: chosen, source: "modelCache", notes: notes)
            }
            notes.append("the surviving model cache is the model of no catalog version")
        }
        if !evidence.schemaTables.isEmpty {
            let layouts = catalog.versions.map { try? StoreLayoutBuilder.layout(for: $0.model) }
            // Every table of every version, by its columns: a table left over that has one's is
            // another version's, whatever its (damaged) name.
            let catalogTables = Set(layouts.compactMap { $0 }.flatMap { $0.tables.map { $0.columns.map { $0.name.uppercased() } } })
            func versionsFitting(readingRenamedTables: Bool) -> [CatalogVersion] {
                zip(catalog.versions, layouts).compactMap { version, layout in
                    guard let layout,
                        schemaFits(evidence.schemaTables, layout: layout, readingRenamedTables: readingRenamedTables, catalogTables: catalogTables)
                    else { return nil }
                    return version
                }
            }
            // Tables by their names first; a table read by its columns only when no version fits
            // so (two versions told apart by a table's name alone stay told apart).
            let byName = versionsFitting(readingRenamedTables: false)
            let fitting = byName.isEmpty ? versionsFitting(readingRenamedTables: true) : byName
            if let chosen = try choose(fitting, identifiers: nil, path: path) {
                return Resolution(version: chosen, source: "schema", notes: notes)
            }
            notes.append("the surviving schema's tables are those of no catalog version")
        }
        if catalog.versions.count == 1 {
            notes.append("nothing that survived names the version; the catalog's only version \"\(names[0])\" was used")
            return Resolution(version: catalog.versions[0], source: "onlyVersion", notes: notes)
        }
        let reason = notes.isEmpty ? "no metadata, model cache or schema survived" : notes.joined(separator: "; ")
        throw SalvageError.versionUndetermined(path: path, reason: reason, available: names)
    }

    /// A note when what survived names another version than the one asked for (`--version`):
    /// the rows are read as the version asked for, so a table whose columns differ loses its
    /// rows to lost and found (not written in Core Data mode) or, with the schema unreadable,
    /// has them taken for another table's of the same shape (a review: employees written as
    /// departments), and attributes it requires can have no value. None when the evidence names
    /// it, names none, or names several.
    private static func disagreement(with requested: CatalogVersion, catalog: Catalog, evidence: Evidence, path: String) -> [String] {
        guard let found = try? resolve(catalog: catalog, requested: nil, evidence: evidence, path: path), found.source != "onlyVersion",
            found.version.name != requested.name
        else { return [] }
        let witness = ["metadata": "metadata (its entity hashes)", "modelCache": "model cache", "schema": "schema (its tables' columns)"][found.source] ?? found.source
        return [
            "--version \"\(requested.name)\" was given, but the store's \(witness) names version \"\(found.version.name)\": its rows were read as "
                + "\"\(requested.name)\"'s, so rows of a table whose columns differ can be lost (lost and found, not written) or, where the schema "
                + "is unreadable, taken for another table's of the same shape, and attributes \"\(requested.name)\" requires may have no value; to keep "
                + "every row where it belongs, salvage with --version \"\(found.version.name)\" (or without --version), then upgrade"
        ]
    }

    private static func choose(_ fitting: [CatalogVersion], identifiers: [String]?, path: String) throws -> CatalogVersion? {
        guard fitting.count > 1 else { return fitting.first }
        if let identifiers {
            let narrowed = fitting.filter { $0.versionIdentifiers == (identifiers.isEmpty ? [""] : identifiers) }
            if narrowed.count == 1 { return narrowed[0] }
        }
        throw SalvageError.ambiguousVersion(path: path, versions: fitting.map(\.name))
    }

    /// True when every entity and join table of the layout is in the schema with the same column
    /// names, and the schema has no Core Data table the layout lacks (bookkeeping aside): none
    /// named `Z…`, none with the columns of a table of the catalog (`catalogTables`: another
    /// version's table whose name lost its `Z`). History, CloudKit and app tables are neither. A layout table
    /// the schema does not name is in it when exactly one table the layout does not name has its
    /// columns, in order: a table whose name is damaged, read as that table by the salvage too
    /// (`SalvageRun.identifyRenamedTables`). Without this, a damaged name with the metadata and
    /// model cache lost left no way to tell the version.
    static func schemaFits(
        _ tables: [TableDefinition], layout: StoreLayout, readingRenamedTables: Bool = true, catalogTables: Set<[String]> = []
    ) -> Bool {
        func names(_ columns: [String]) -> [String] { columns.map { $0.uppercased() } }
        let stored = Dictionary(tables.map { ($0.name.uppercased(), names($0.columns.map(\.name))) }, uniquingKeysWith: { first, _ in first })
        let expected = Set(layout.tables.map { $0.name.uppercased() } + ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        var unnamed = stored.filter { !expected.contains($0.key) }
        for table in layout.tables {
            let columns = names(table.columns.map(\.name))
            if let held = stored[table.name.uppercased()] {
                guard Set(held) == Set(columns) else { return false }
                continue
            }
            let candidates = unnamed.filter { $0.value == columns }
            guard readingRenamedTables, candidates.count == 1, let renamed = candidates.first else { return false }
            unnamed[renamed.key] = nil
        }
        // A table left over that is a Core Data table — by its `Z` name, or by the columns of a
        // table of the catalog, whatever its (damaged) name — is one this version lacks.
        return !unnamed.contains { $0.key.hasPrefix("Z") || catalogTables.contains($0.value) }
    }
}
