import Foundation
import Testing
@testable import StoreRescue

/// Stores built by the tests themselves, and ways to read what a store holds.
enum BackupFixtures {
    /// Creates a Core Data-like store at `path` with `rows` rows of varied text, numbers and blobs.
    static func makeStore(at path: String, rows: Int, journalMode: String = "WAL", uuid: String = "0B8C3F5E-1D2A-4C6B-9E7F-123456789ABC") throws {
        let db = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try db.execute("PRAGMA journal_mode = \(journalMode)")
        try db.execute("""
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZVALUE INTEGER,
                                ZTIMESTAMP TIMESTAMP, ZTITLE VARCHAR, ZPAYLOAD BLOB);
            CREATE INDEX ZITEM_ZVALUE_INDEX ON ZITEM (ZVALUE);
            BEGIN;
            """)
        try db.execute("INSERT INTO Z_METADATA VALUES (1, '\(uuid)', NULL)")
        let insert = try db.prepare("INSERT INTO ZITEM VALUES (?, 1, 1, ?, ?, ?, ?)")
        var generator = SplitMix64(seed: 42)
        let words = ["alpha", "invoice", "customer", "shipped", "pending", "Zürich", "order", "note", "总计", "refund"]
        for pk in 1...max(rows, 1) {
            let title = (0..<(3 + Int(generator.next() % 12))).map { _ in words[Int(generator.next() % 10)] }.joined(separator: " ")
            let blob = Data((0..<Int(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next() % 7) })
            insert.reset()
            try insert.bind([.integer(Int64(pk)), .integer(Int64(generator.next() % 100_000)),
                             .real(700_000_000 + Double(pk)), .text(title), .blob(blob)])
            _ = try insert.step()
        }
        try db.execute("COMMIT")
    }

    /// Every table's rows (sorted) and the schema, read through SQLite from `path`.
    static func content(of path: String, mode: SQLiteOpenOptions.Mode = .readOnly) throws -> [String: [String]] {
        let db = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: mode))
        var content: [String: [String]] = [:]
        let schema = try db.rows("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name")
        content["sqlite_schema"] = schema.map { "\($0)" }
        for row in schema where row.first?.string == "table" {
            guard let name = row[1].string, !name.hasPrefix("sqlite_") else { continue }
            content[name] = try db.rows("SELECT * FROM \(name.quotedSQLIdentifier)").map { "\($0)" }.sorted()
        }
        return content
    }

    /// A python3 process that runs `script` with `arguments` (`sys.argv[1...]`), its standard
    /// output piped to the test; not started yet.
    static func python(_ script: String, _ arguments: [String]) throws -> (process: Process, output: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(pythonPath))
        process.arguments = ["-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        return (process, output)
    }

    static func count(_ table: String, in path: String, mode: SQLiteOpenOptions.Mode = .immutable) throws -> Int64 {
        let db = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: mode))
        return try db.scalar("SELECT count(*) FROM \(table.quotedSQLIdentifier)")?.int64 ?? -1
    }

    /// Decompresses with the system `gzip -d` and returns the SHA-256 of what it printed.
    static func systemGunzipSHA256(_ path: String, into output: String) throws -> String {
        let result = try run("/bin/sh", ["-c", "gzip -dc \"$1\" > \"$2\"", "sh", path, output])
        #expect(result.status == 0, "gzip -d failed: \(result.standardError)")
        return try FileDigest.of(path: output).sha256
    }

    static func fileNames(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// Runs a program to its end; returns its exit status and output.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, standardOutput: String, standardError: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    /// The probe executable built beside the test bundle.
    static var probePath: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var folder = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // On some platforms the tests run from inside a bundle folder.
        for _ in 0..<4 where !FileManager.default.fileExists(atPath: folder.appendingPathComponent("storerescue-backup-probe").path) {
            folder = folder.deletingLastPathComponent()
        }
        return folder.appendingPathComponent("storerescue-backup-probe").path
    }

    /// python3 (its sqlite3 module plays the other process in the concurrency tests).
    static let pythonPath: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = ["/usr/bin/python3", "/usr/local/bin/python3"] + path.split(separator: ":").map { "\($0)/python3" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
}

/// A small deterministic generator, so fixtures are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension BackupOptions {
    /// Options for a test: the given folder, and a clock pinned when asked.
    static func testing(_ folder: String, reason: String = "manual", keep: Int? = nil, at date: Date? = nil) -> BackupOptions {
        var options = BackupOptions(destinationDirectory: folder, keep: keep, reason: reason, lockTimeout: 5)
        if let date { options.clock = { date } }
        return options
    }
}
