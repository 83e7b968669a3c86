import Foundation
@testable import StoreRescue

/// Builds small SQLite files for tests: plain databases, Core Data-shaped stores with chosen
/// metadata, and hostile variants. Everything is written into a `TemporaryDirectory`.
enum StoreFixtureBuilder {
    /// Creates a database at `path` and runs `sql` in it.
    static func database(at path: String, sql: String) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try connection.execute(sql)
    }

    /// Runs `sql` with bound values in an existing database.
    static func run(_ path: String, _ sql: String, _ values: [SQLiteValue] = []) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        let statement = try connection.prepare(sql)
        try statement.bind(values)
        _ = try statement.step()
    }

    static let bookkeepingSQL = """
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
        CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
        """

    /// A minimal Core Data-shaped store with one entity `Item` (table `ZITEM`) holding `rows`
    /// rows, `Z_MAX` set to `zMax`, and `plist` as its metadata.
    static func coreDataStore(at path: String, rows: Int = 3, zMax: Int? = nil, plist: Data?) throws {
        try database(at: path, sql: bookkeepingSQL + """
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, \(zMax ?? rows));
            """)
        for i in 0..<rows {
            try run(path, "INSERT INTO ZITEM VALUES (?, 1, 1, ?)", [.integer(Int64(i + 1)), .text("item \(i)")])
        }
        try run(path, "INSERT INTO Z_METADATA VALUES (1, 'F2A1C4B6-1C2D-4E5F-8A9B-0C1D2E3F4A5B', ?)", [plist.map(SQLiteValue.blob) ?? .null])
    }

    /// Metadata a current Core Data would write for `hashes`, plus extra keys.
    static func metadataPlist(hashes: [String: Data], extra: [String: PropertyListValue] = [:], checksum: Bool = true) -> Data {
        var plist: [String: PropertyListValue] = [
            "NSStoreType": .string("SQLite"),
            "NSPersistenceFrameworkVersion": .integer(1523),
            "NSStoreModelVersionHashes": .dictionary(hashes.mapValues(PropertyListValue.data)),
            "NSStoreModelVersionHashesVersion": .integer(3),
            "NSStoreModelVersionIdentifiers": .array([.string("")]),
            "NSStoreModelVersionHashesDigest": .string(EntityVersionHasher.hashesDigest(hashes)),
            "_NSAutoVacuumLevel": .string("2"),
        ]
        if checksum { plist["NSStoreModelVersionChecksumKey"] = .string(EntityVersionHasher.versionChecksum(hashes)) }
        plist.merge(extra) { _, new in new }
        return BinaryPropertyListEncoder.encode(.dictionary(plist))
    }

    /// A snapshot of every file in `directory`: name → (size, SHA-256-ish content digest).
    static func snapshot(of directory: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let path = directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFREG {
                result[name] = try Data(contentsOf: URL(fileURLWithPath: path))
            } else {
                result[name] = Data("mode:\(info.st_mode)".utf8)
            }
        }
        return result
    }
}
