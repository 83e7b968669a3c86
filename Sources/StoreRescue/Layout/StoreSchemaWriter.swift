import Foundation

/// Writes a layout into an empty SQLite file, with the pragmas Core Data uses, in one
/// transaction; then checks what was written.
struct StoreSchemaWriter {
    let path: String
    /// The path the operator named, for messages.
    let reportedPath: String

    /// Everything but `Z_MODELCACHE`'s row. The connection is closed on return, which
    /// checkpoints the WAL and removes the `-wal` and `-shm`.
    func write(layout: StoreLayout, uuid: String, plist: [String: PropertyListValue]) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        // Before the first page is written: neither can change afterwards (in WAL mode).
        try connection.execute("PRAGMA page_size = 4096")
        try connection.execute("PRAGMA auto_vacuum = 2")
        let mode = try connection.setJournalMode("WAL")
        guard mode?.lowercased() == "wal" else {
            throw StoreCreationError.writeFailed(path: reportedPath, reason: "SQLite would not switch the new file to WAL mode (it reports \(mode ?? "nothing"))")
        }
        try connection.inTransaction {
            for statement in layout.createStatements() { try connection.execute(statement) }
            let insertNumber = try connection.prepare("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)")
            for number in layout.entityNumbers {
                insertNumber.reset()
                try insertNumber.bind([.integer(Int64(number.ent)), .text(number.name), .integer(Int64(number.superEnt))])
                _ = try insertNumber.step()
            }
            let insertMetadata = try connection.prepare("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)")
            try insertMetadata.bind([.text(uuid), .blob(StoreMetadataWriter.encode(plist))])
            _ = try insertMetadata.step()
        }
        let integrity = try connection.rows("PRAGMA integrity_check(10)").compactMap { $0.first?.string }
        guard integrity == ["ok"] else {
            throw StoreCreationError.verificationFailed(path: reportedPath, reason: "integrity_check: \(integrity.joined(separator: "; "))")
        }
        let pageSize = try connection.scalar("PRAGMA page_size")?.int64
        let autoVacuum = try connection.scalar("PRAGMA auto_vacuum")?.int64
        guard pageSize == 4096, autoVacuum == 2 else {
            throw StoreCreationError.verificationFailed(
                path: reportedPath, reason: "page_size \(pageSize.map(String.init) ?? "?"), auto_vacuum \(autoVacuum.map(String.init) ?? "?")")
        }
        _ = try connection.rows("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// After the connection is closed: the header says WAL, 4096-byte pages and incremental
    /// auto-vacuum, and the private folder holds the store alone (no `-wal`, no `-shm`).
    static func checkFinished(file: String, workspace: String, reportedPath: String) throws {
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: workspace).filter { $0 != (file as NSString).lastPathComponent }
        guard leftovers.isEmpty else {
            throw StoreCreationError.verificationFailed(path: reportedPath, reason: "SQLite left \(leftovers.sorted().joined(separator: ", ")) behind")
        }
        let bytes = try InputProbe.readPrefix(path: file, followsSymlinks: false, count: SQLiteFileHeader.size)
        guard let header = SQLiteFileHeader(bytes: bytes) else {
            throw StoreCreationError.verificationFailed(path: reportedPath, reason: "the new file has no SQLite header")
        }
        guard header.writeVersion == 2, header.readVersion == 2, header.pageSize == 4096, header.largestRootPage != 0,
            header.incrementalVacuum == 1
        else {
            throw StoreCreationError.verificationFailed(
                path: reportedPath,
                reason: "header: journal \(header.journalMode), page size \(header.pageSize), auto-vacuum \(header.autoVacuum)")
        }
    }
}
