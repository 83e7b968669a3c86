import Foundation
import SRSQLite
import Testing
@testable import StoreRescue

/// Builds stores for the salvage tests, damages copies of them, and says which rows a salvage
/// must recover: those whose cell lies on a page whose bytes are unchanged.
enum SalvageFixtures {
    /// A plain database: `people` (an `INTEGER PRIMARY KEY`, text, a real, a blob some rows of
    /// which spill onto overflow pages), `events` (no rowid alias, a column added later by
    /// `ALTER TABLE … DEFAULT`), an index, and a few deleted rows on free pages.
    static func plainDatabase(at path: String, pageSize: Int = 4096, rows: Int = 300, autoVacuum: Bool = true) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try connection.execute("PRAGMA page_size = \(pageSize); PRAGMA auto_vacuum = \(autoVacuum ? 2 : 0)")
        try connection.execute("""
            CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, photo BLOB);
            CREATE TABLE events (kind TEXT, at INTEGER);
            CREATE INDEX people_name ON people (name);
            BEGIN;
            """)
        let people = try connection.prepare("INSERT INTO people VALUES (?, ?, ?, ?)")
        let events = try connection.prepare("INSERT INTO events VALUES (?, ?)")
        var generator = SeededGenerator(seed: 7)
        for index in 1...rows {
            people.reset()
            let photoSize = index % 23 == 0 ? pageSize * 2 + 300 : (index % 3 == 0 ? 40 : 0)
            let photo: SQLiteValue = photoSize == 0 ? .null : .blob(Data(generator.bytes(photoSize)))
            try people.bind([.integer(Int64(index)), .text("person \(index) \(String(repeating: "é", count: index % 17))"), .real(Double(index) / 3), photo])
            _ = try people.step()
            events.reset()
            try events.bind([.text(index % 2 == 0 ? "login" : "logout"), .integer(Int64(index) * 1000)])
            _ = try events.step()
        }
        try connection.execute("COMMIT; ALTER TABLE events ADD COLUMN source TEXT DEFAULT 'app'")
        try connection.execute("INSERT INTO events (kind, at, source) VALUES ('sync', 1, 'cloud')")
        // Deleting the second half frees whole leaf pages: deleted rows, recoverable. (Debian's
        // SQLite zeroes freed pages by default; Apple's, which writes real stores, does not.)
        try connection.execute("PRAGMA secure_delete = OFF; DELETE FROM people WHERE id > \(rows / 2)")
    }

    /// The last row `plainDatabase` keeps in `people`.
    static func lastLivePerson(rows: Int = 300) -> Int64 { Int64(rows / 2) }

    /// Damages the schema of the database at `path` as a hostile file or a bad write would:
    /// runs `statements` (`UPDATE sqlite_schema …`) with `writable_schema` on, which defensive
    /// mode (every connection this project opens) otherwise refuses.
    static func editSchema(of path: String, _ statements: String) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        guard srsqlite_db_config_int(connection.handle, SQLITE_DBCONFIG_DEFENSIVE, 0) == SQLITE_OK else {
            throw SQLiteError(resultCode: SQLITE_ERROR, message: "defensive mode could not be turned off")
        }
        try connection.execute("PRAGMA writable_schema = ON;\n\(statements)\nPRAGMA writable_schema = OFF;")
    }

    /// Every row of every table (SQLite's own tables aside): name → rowid → values.
    static func rows(of path: String) throws -> [String: [Int64: [SQLiteValue]]] {
        try rows(of: SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable)))
    }

    static func rows(of connection: SQLiteConnection) throws -> [String: [Int64: [SQLiteValue]]] {
        var result: [String: [Int64: [SQLiteValue]]] = [:]
        for row in try connection.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
            guard let name = row[0].string else { continue }
            var table: [Int64: [SQLiteValue]] = [:]
            for values in try connection.rows("SELECT rowid, * FROM \(name.quotedSQLIdentifier)") {
                table[values[0].int64 ?? 0] = Array(values.dropFirst())
            }
            result[name] = table
        }
        return result
    }

    // MARK: - Damage

    static func zeroPage(_ page: Int, of path: String, pageSize: Int) throws {
        try overwrite(path, at: (page - 1) * pageSize, with: Data(count: pageSize))
    }

    static func flipByte(at offset: Int, of path: String) throws {
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data[offset] ^= 0xFF
        try data.write(to: URL(fileURLWithPath: path))
    }

    static func truncate(_ path: String, to size: Int) throws {
        guard Foundation.truncate(path, off_t(size)) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    static func overwrite(_ path: String, at offset: Int, with bytes: Data) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        handle.write(bytes)
    }

    // MARK: - Pages

    static func u16(_ data: Data, at offset: Int) -> Int { Int(data[offset]) << 8 | Int(data[offset + 1]) }

    static func u32(_ data: Data, at offset: Int) -> Int { u16(data, at: offset) << 16 | u16(data, at: offset + 2) }

    /// The root page of `table`, from the undamaged store's schema.
    static func rootPage(of table: String, in path: String) throws -> Int? {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
        return try connection.scalar("SELECT rootpage FROM sqlite_schema WHERE name = ?", [.text(table)])?.int64.map(Int.init)
    }

    /// The child the first cell of a table interior page points to (4096-byte pages, not page 1).
    static func firstChild(ofInteriorPage page: Int, in data: Data) -> Int? {
        let base = (page - 1) * 4096
        guard data[base] == 5, u16(data, at: base + 3) > 0 else { return nil }
        return u32(data, at: base + u16(data, at: base + 12))
    }

    // MARK: - Truth

    /// Rows whose cell lies on a page whose bytes in `damaged` equal those in `original`, and whose
    /// overflow pages are unchanged too: what a salvage must recover exactly. Read from the intact
    /// original by a walk that trusts it (independent of the salvage code).
    static func intactRows(original: String, damaged: String) throws -> [String: Set<Int64>] {
        let before = try Data(contentsOf: URL(fileURLWithPath: original))
        let after = try Data(contentsOf: URL(fileURLWithPath: damaged))
        let pageSize = Int(before[16]) << 8 | Int(before[17])
        let usable = pageSize - Int(before[20])
        func page(_ number: Int) -> Data { before.subdata(in: (number - 1) * pageSize..<number * pageSize) }
        func intact(_ number: Int) -> Bool {
            let end = number * pageSize
            return end <= after.count && after.subdata(in: (number - 1) * pageSize..<end) == page(number)
        }
        let connection = try SQLiteConnection(path: original, options: SQLiteOpenOptions(mode: .immutable))
        var result: [String: Set<Int64>] = [:]
        for row in try connection.rows("SELECT name, rootpage FROM sqlite_schema WHERE type = 'table' AND rootpage > 0 AND name NOT LIKE 'sqlite_%'") {
            guard let name = row[0].string, let root = row[1].int64 else { continue }
            var rows = Set<Int64>()
            var stack = [Int(root)]
            while let number = stack.popLast() {
                let bytes = [UInt8](page(number))
                let base = number == 1 ? 100 : 0
                func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
                func u32(_ at: Int) -> Int { Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) }
                func varint(_ at: Int) -> (UInt64, Int) {
                    var value: UInt64 = 0
                    for index in 0..<8 {
                        value = value << 7 | UInt64(bytes[at + index] & 0x7F)
                        if bytes[at + index] & 0x80 == 0 { return (value, index + 1) }
                    }
                    return (value << 8 | UInt64(bytes[at + 8]), 9)
                }
                let cells = u16(base + 3)
                if bytes[base] == 5 {
                    for index in 0..<cells { stack.append(u32(u16(base + 12 + 2 * index))) }
                    stack.append(u32(base + 8))
                    continue
                }
                for index in 0..<cells {
                    let offset = u16(base + 8 + 2 * index)
                    let (size, a) = varint(offset)
                    let (rowid, b) = varint(offset + a)
                    let local = TableCell.localPayloadSize(payloadSize: Int(size), usableSize: usable)
                    var overflowIntact = true
                    if local < Int(size) {
                        var next = u32(offset + a + b + local)
                        var remaining = Int(size) - local
                        while remaining > 0, next != 0 {
                            overflowIntact = overflowIntact && intact(next)
                            remaining -= usable - 4
                            let overflow = [UInt8](page(next))
                            next = Int(overflow[0]) << 24 | Int(overflow[1]) << 16 | Int(overflow[2]) << 8 | Int(overflow[3])
                        }
                    }
                    if intact(number), overflowIntact { rows.insert(Int64(bitPattern: rowid)) }
                }
            }
            result[name] = rows
        }
        return result
    }

    /// Every row in `truth` is in `output` with exactly the original's values; returns how many
    /// were checked.
    @discardableResult
    static func expectRecovered(
        _ truth: [String: Set<Int64>], original: [String: [Int64: [SQLiteValue]]], output: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Int {
        let recovered = try rows(of: output)
        var checked = 0
        for (table, rowids) in truth {
            for rowid in rowids {
                checked += 1
                let want = original[table]?[rowid]
                let have = recovered[table]?[rowid]
                if have != want {
                    Issue.record("\(table) rowid \(rowid): recovered \(have.map { "\($0)" } ?? "nothing"), original \(want.map { "\($0)" } ?? "nothing")", sourceLocation: sourceLocation)
                    return checked
                }
            }
        }
        return checked
    }

    /// Every file in `folder`, with its bytes: compared before and after to show nothing changed.
    static func snapshot(_ folder: String) throws -> [String: Data] {
        try StoreFixtureBuilder.snapshot(of: folder)
    }
}
