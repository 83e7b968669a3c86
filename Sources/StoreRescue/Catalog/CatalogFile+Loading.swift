import Foundation

extension CatalogFile {
    /// Resolves every version (relative paths against the catalog file's folder) and checks the
    /// catalog as a whole: distinct version names, declared checksums, `current` and stages.
    ///
    /// A catalog file given as a symbolic link is read through it, and its relative paths resolve
    /// against the folder of the file the link leads to (resolved once, `realpath`), where the
    /// catalog's models are; messages still name the path as given. Until review rv10 they
    /// resolved against the link's folder (`cat/link.json` → `cat/Journal.xcdatamodeld`: no such
    /// folder, exit 66).
    ///
    /// - Throws: `CatalogFileError`; a failing model source is reported as `sourceFailed` with
    ///   the JSON path of the entry and the source's own message and exit status.
    public func loadCatalog() throws -> Catalog {
        let base = URL(fileURLWithPath: InputProbe.followingSymlink(at: path)).deletingLastPathComponent().path
        var versions: [CatalogVersion] = []
        var firstPath: [String: String] = [:]
        for entry in entries {
            for version in try resolve(entry, base: base) {
                if let first = firstPath[version.name] {
                    throw CatalogFileError.duplicateVersionName(path: path, jsonPath: entry.jsonPath, name: version.name, firstJSONPath: first)
                }
                firstPath[version.name] = entry.jsonPath
                if let declared = entry.versionChecksum, declared != version.versionChecksum {
                    throw CatalogFileError.checksumMismatch(
                        path: path, jsonPath: entry.jsonPath + ".versionChecksum", version: version.name, declared: declared,
                        computed: version.versionChecksum)
                }
                versions.append(version)
            }
        }
        let names = versions.map(\.name)
        if let current = currentVersionName, !names.contains(current) {
            throw CatalogFileError.unknownVersion(path: path, jsonPath: "current", name: current, known: names)
        }
        for stage in stages {
            for (key, name) in Self.namedVersions(of: stage) where !names.contains(name) {
                throw CatalogFileError.unknownVersion(path: path, jsonPath: stage.jsonPath + key, name: name, known: names)
            }
            if case .pair(let from, let to) = stage.span, let start = names.firstIndex(of: from), let end = names.firstIndex(of: to), start >= end {
                throw CatalogFileError.invalidValue(
                    path: path, jsonPath: stage.jsonPath,
                    reason: "goes from \"\(from)\" to \"\(to)\", which is not later in the catalog: stages only go forward")
            }
        }
        return Catalog(name: app, versions: versions, currentVersionName: currentVersionName, stages: stages, sourcePath: path)
    }

    /// Each version name a stage uses, with the JSON key it is under (`.from`, `.versions[1]`).
    private static func namedVersions(of stage: CatalogStage) -> [(key: String, name: String)] {
        switch stage.span {
        case .pair(let from, let to): return [(".from", from), (".to", to)]
        case .versions(let names): return names.enumerated().map { (".versions[\($0.offset)]", $0.element) }
        }
    }

    private func resolve(_ entry: Entry, base: String) throws -> [CatalogVersion] {
        switch entry.source {
        case .xcdatamodeld(let folder, let picked):
            let bundle = try reading(entry, "xcdatamodeld") { try XCDataModelReader.readBundle(at: BoundedFile.resolve(folder, against: base)) }
            return try pick(picked, from: bundle, entry: entry, named: folder)
        case .xcdatamodel(let folder):
            return [try single(entry, "xcdatamodel", at: folder, base: base) { full, name in
                CatalogVersion(name: name, model: try XCDataModelReader.readVersion(at: full), origin: "xcdatamodel", sourcePath: full)
            }]
        case .momd(let folder, let picked):
            let bundle = try reading(entry, "momd") { try CompiledModelReader.readBundle(at: BoundedFile.resolve(folder, against: base)) }
            return try pick(picked, from: bundle, entry: entry, named: folder)
        case .mom(let file):
            return [try single(entry, "mom", at: file, base: base) { full, name in
                try CompiledModelReader.readVersion(at: full, name: name)
            }]
        case .store(let file):
            return [try single(entry, "store", at: file, base: base) { full, name in
                try StoreModelReader.readVersion(fromStore: full, name: name)
            }]
        case .inline(let model):
            return [CatalogVersion(name: entry.name ?? "", model: model, origin: "inline", sourcePath: path)]
        }
    }

    /// One version of a folder (renamed to the entry's name), or all of them.
    private func pick(_ picked: String?, from bundle: Catalog, entry: Entry, named folder: String) throws -> [CatalogVersion] {
        guard let picked else { return bundle.versions }
        guard var version = bundle.version(named: picked) else {
            throw CatalogFileError.invalidValue(
                path: path, jsonPath: entry.jsonPath + ".version",
                reason: "\"\(picked)\" is not a version of \(folder); its versions are \(bundle.versions.map { "\"\($0.name)\"" }.joined(separator: ", "))")
        }
        version.name = entry.name ?? picked
        return [version]
    }

    /// Runs `body`, reporting a failure of the source under the entry's JSON path.
    /// One version read from one file or folder: its path resolved against the catalog's folder,
    /// named by the entry or else by the file name.
    private func single(
        _ entry: Entry, _ key: String, at relative: String, base: String,
        _ read: (_ fullPath: String, _ name: String) throws -> CatalogVersion
    ) throws -> CatalogVersion {
        let full = BoundedFile.resolve(relative, against: base)
        let name = entry.name ?? URL(fileURLWithPath: full).deletingPathExtension().lastPathComponent
        return try reading(entry, key) { try read(full, name) }
    }

    private func reading<T>(_ entry: Entry, _ key: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as any OperatorFacingError {
            throw CatalogFileError.sourceFailed(
                path: path, jsonPath: entry.jsonPath + "." + key, message: error.description, hint: error.recoverySuggestion,
                status: error.exitStatus)
        }
    }
}
