import Foundation

/// The JSON file written beside every backup (`<name>.manifest.json` beside `<name>.gz`),
/// documented field by field in `Docs/BACKUP.md`. It is the contract `verify`, `restore` and
/// retention rely on, so fields are only ever added.
///
/// ```json
/// {"formatVersion": 1, "reason": "pre-upgrade", "snapshotSHA256": "…", …}
/// ```
public struct BackupManifest: Codable, Sendable, Equatable {
    /// The version of this layout; 1.
    public var formatVersion: Int
    /// The tool that wrote the backup: `storerescue`.
    public var toolName: String
    /// Its version.
    public var toolVersion: String
    /// The SQLite library version that took the snapshot.
    public var sqliteVersion: String
    /// The zlib library version that compressed it.
    public var zlibVersion: String
    /// When the snapshot was taken, ISO-8601 in UTC (`2025-01-31T09:15:00Z`).
    public var createdAt: String
    /// Why the backup was taken: `manual`, `pre-upgrade`, `pre-restore`, or the operator's text.
    public var reason: String
    /// The store's main file, as an absolute path with its folder's symbolic links resolved.
    public var sourcePath: String
    /// Size in bytes of the store's main file when the backup began.
    public var sourceSize: Int64
    /// Size in bytes of the store's `-wal` when the backup began (0 when there was none).
    public var sourceWALSize: Int64
    /// The snapshot's page size in bytes.
    public var pageSize: Int
    /// The snapshot's page count; `pageSize × pageCount == snapshotSize`.
    public var pageCount: Int
    /// Size in bytes of the snapshot (the decompressed backup).
    public var snapshotSize: Int64
    /// SHA-256 of the snapshot, lowercase hex. `gunzip -c BACKUP | sha256sum` prints it.
    public var snapshotSHA256: String
    /// The file name of the compressed backup, in the manifest's folder.
    public var backupFileName: String
    /// Size in bytes of the compressed backup.
    public var backupSize: Int64
    /// SHA-256 of the compressed backup, lowercase hex. `sha256sum BACKUP` prints it.
    public var backupSHA256: String
    /// The gzip compression level used (1–9).
    public var compressionLevel: Int
    /// The store's UUID (`Z_METADATA.Z_UUID`), when it is a Core Data store.
    @NullEncoded public var storeUUID: String?
    /// `NSPersistenceFrameworkVersion` from the store metadata, when known.
    @NullEncoded public var frameworkVersion: Int?

    public static let currentFormatVersion = 1
    /// Manifests are small; a larger file is not one of ours.
    static let maximumFileSize = 1 << 20

    /// The manifest path for a backup path (`X.gz` → `X.manifest.json`).
    public static func manifestPath(forBackup backupPath: String) -> String {
        let base = backupPath.hasSuffix(".gz") ? String(backupPath.dropLast(3)) : backupPath
        return base + ".manifest.json"
    }

    /// Reads and decodes a manifest, bounding its size.
    ///
    /// - Throws: `BackupError.manifestUnreadable` naming the file and what is wrong;
    ///   `BackupError.tooManyOpenFiles` when no file descriptor is left to open it.
    public static func read(from path: String) throws -> BackupManifest {
        let data: Data
        do {
            data = try BoundedFile.contents(of: path, limit: maximumFileSize)
        } catch {
            switch error {
            case .missing: throw BackupError.manifestUnreadable(path: path, reason: "it does not exist")
            case .tooLarge: throw BackupError.manifestUnreadable(path: path, reason: "it is larger than \(maximumFileSize) bytes")
            case .tooManyOpenFiles: throw BackupError.tooManyOpenFiles(path: path, reason: String(cString: strerror(EMFILE)))
            default: throw BackupError.manifestUnreadable(path: path, reason: "it \(error.description)")
            }
        }
        do {
            let manifest = try JSONDecoder().decode(BackupManifest.self, from: data)
            guard manifest.formatVersion <= currentFormatVersion else {
                throw BackupError.manifestUnreadable(
                    path: path, reason: "format version \(manifest.formatVersion) is newer than this tool understands")
            }
            return manifest
        } catch let error as BackupError {
            throw error
        } catch let DecodingError.keyNotFound(key, _) {
            throw BackupError.manifestUnreadable(path: path, reason: "the field \"\(key.stringValue)\" is missing")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw BackupError.manifestUnreadable(path: path, reason: "the field \"\(field)\" has the wrong type")
        } catch {
            throw BackupError.manifestUnreadable(path: path, reason: "it is not valid JSON")
        }
    }

    /// The manifest as pretty-printed JSON with sorted keys, ending in a newline.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(self)
        data.append(0x0A)
        return data
    }

    /// `createdAt` as a date, when it parses.
    public var creationDate: Date? { Self.timestampFormatter().date(from: createdAt) }

    static func timestampFormatter() -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }
}
