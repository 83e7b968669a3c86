import Foundation

/// Reads compiled models as Xcode puts them in an app bundle: a `.momd` folder (every version
/// listed by its `VersionInfo.plist`, each `<version>.mom` decoded and checked against the
/// hashes listed there) or a single `.mom` file. `.omo` files (the "optimized" form) are not read.
///
/// ```swift
/// let catalog = try CompiledModelReader.readBundle(at: "Journal.app/Journal.momd")
/// ```
public enum CompiledModelReader {
    /// The largest `.mom` or `VersionInfo.plist` read. Real ones are kilobytes.
    public static let maximumFileBytes = 32 << 20

    /// Reads a `.momd` folder into a catalog named after it; versions in natural order of names.
    ///
    /// - Throws: `CompiledModelError`, naming the file and, for a hash mismatch, the version and entity.
    public static func readBundle(at path: String) throws -> Catalog {
        guard BoundedFile.kind(of: path) == .directory else {
            let reason = BoundedFile.kind(of: path) == .missing ? "no such folder" : "is not a folder: a .momd is a folder of .mom files"
            throw CompiledModelError.notACompiledModel(path: path, reason: reason)
        }
        let folder = URL(fileURLWithPath: path)
        let infoPath = folder.appendingPathComponent("VersionInfo.plist").path
        let info = try versionInfo(at: infoPath)
        let names = info.hashes.keys.sorted(by: NaturalOrder.areInIncreasingOrder)
        var versions: [CatalogVersion] = []
        for name in names {
            let momPath = folder.appendingPathComponent(name + ".mom").path
            guard BoundedFile.kind(of: momPath) != .missing else {
                throw CompiledModelError.missingVersionFile(path: path, version: name)
            }
            let version = try readVersion(at: momPath, name: name)
            try check(version, against: info.hashes[name] ?? [:], path: infoPath)
            versions.append(version)
        }
        if let current = info.currentVersionName, !names.contains(current) {
            throw CompiledModelError.unknownCurrentVersion(path: infoPath, name: current, versions: names)
        }
        return Catalog(
            name: folder.deletingPathExtension().lastPathComponent, versions: versions,
            currentVersionName: info.currentVersionName, sourcePath: path)
    }

    /// Decodes one `.mom` file.
    public static func readModel(at path: String) throws -> ManagedObjectModel {
        try readModelAndArchive(at: path).model
    }

    /// One `.mom` file as a catalog version, with the deflated archive a store's model cache holds.
    static func readVersion(at path: String, name: String) throws -> CatalogVersion {
        let (model, archive) = try readModelAndArchive(at: path)
        var version = CatalogVersion(name: name, model: model, origin: "mom", sourcePath: path)
        version.modelCacheContent = try? RawDeflate.deflate(archive)
        return version
    }

    /// The model in a `.mom` file and the file's bytes (the archive).
    static func readModelAndArchive(at path: String) throws -> (model: ManagedObjectModel, archive: Data) {
        let data: Data
        do {
            data = try BoundedFile.contents(of: path, limit: maximumFileBytes)
        } catch .missing {
            throw CompiledModelError.notACompiledModel(path: path, reason: "no such file")
        } catch .tooManyOpenFiles {
            throw CompiledModelError.tooManyOpenFiles(path: path)
        } catch {
            throw CompiledModelError.unreadableFile(path: path, reason: error.description)
        }
        var limits = PropertyListLimits.default
        limits.maximumInputBytes = maximumFileBytes
        do {
            return (try ModelArchiveDecoder.decodeModel(archive: data, limits: limits), data)
        } catch let error as ModelDecodingError {
            throw CompiledModelError.undecodableModel(path: path, underlying: error)
        }
    }

    /// A single `.mom` file as a one-version catalog named after the file.
    static func readSingleModel(at path: String) throws -> Catalog {
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return Catalog(name: name, versions: [try readVersion(at: path, name: name)], sourcePath: path)
    }

    struct VersionInfo {
        var hashes: [String: [String: Data]]
        var currentVersionName: String?
    }

    static func versionInfo(at path: String) throws -> VersionInfo {
        let data: Data
        do {
            data = try BoundedFile.contents(of: path, limit: maximumFileBytes)
        } catch .missing {
            throw CompiledModelError.notACompiledModel(path: path, reason: "no such file: a .momd folder always has a VersionInfo.plist")
        } catch .tooManyOpenFiles {
            throw CompiledModelError.tooManyOpenFiles(path: path)
        } catch {
            throw CompiledModelError.unreadableFile(path: path, reason: error.description)
        }
        let plist: PropertyListValue
        do {
            plist = try BinaryPropertyListDecoder.decode(data)
        } catch {
            throw CompiledModelError.malformedVersionInfo(path: path, reason: "\(error)")
        }
        guard let versions = plist["NSManagedObjectModel_VersionHashes"]?.dictionary else {
            throw CompiledModelError.malformedVersionInfo(path: path, reason: "it has no NSManagedObjectModel_VersionHashes dictionary")
        }
        guard !versions.isEmpty else {
            throw CompiledModelError.malformedVersionInfo(path: path, reason: "NSManagedObjectModel_VersionHashes lists no version")
        }
        var hashes: [String: [String: Data]] = [:]
        for (version, entities) in versions {
            guard let entities = entities.dictionary else {
                throw CompiledModelError.malformedVersionInfo(path: path, reason: "version \"\(version)\" is \(entities.kindDescription), not a dictionary of entity hashes")
            }
            hashes[version] = try entities.mapValues { value in
                guard let hash = value.data, hash.count == 32 else {
                    throw CompiledModelError.malformedVersionInfo(path: path, reason: "version \"\(version)\" has an entity hash that is not 32 bytes of data")
                }
                return hash
            }
        }
        let current = plist["NSManagedObjectModel_CurrentVersionName"]
        if let current, current.string == nil {
            throw CompiledModelError.malformedVersionInfo(path: path, reason: "NSManagedObjectModel_CurrentVersionName is \(current.kindDescription), not a string")
        }
        return VersionInfo(hashes: hashes, currentVersionName: current?.string)
    }

    /// Every entity's computed hash must equal the listed one, and both must list the same entities.
    static func check(_ version: CatalogVersion, against listed: [String: Data], path: String) throws {
        let computed = version.versionHashes
        for entity in Set(computed.keys).union(listed.keys).sorted() {
            switch (computed[entity], listed[entity]) {
            case (let mine?, let theirs?) where mine != theirs:
                throw CompiledModelError.versionHashMismatch(
                    path: path, version: version.name, entity: entity,
                    reason: "VersionInfo.plist lists hash \(theirs.base64EncodedString()), the .mom gives \(mine.base64EncodedString())")
            case (nil, _?):
                throw CompiledModelError.versionHashMismatch(path: path, version: version.name, entity: entity, reason: "listed in VersionInfo.plist but not in the .mom")
            case (_?, nil):
                throw CompiledModelError.versionHashMismatch(path: path, version: version.name, entity: entity, reason: "in the .mom but not listed in VersionInfo.plist")
            default:
                continue
            }
        }
    }
}
