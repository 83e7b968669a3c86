import Foundation
@testable import StoreRescue

/// Small stores for the replacement tests: one table `t (x INTEGER)`, so a store is told from
/// another by its rows.
enum ReplacementFixtures {
    /// A WAL store whose rows live only in its `-wal`, held open by the returned connection
    /// (automatic checkpoints off).
    static func walStore(at path: String, rows: Int) throws -> SQLiteConnection {
        let keeper = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        _ = try keeper.scalar("PRAGMA journal_mode = WAL")
        try keeper.execute("PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x INTEGER)")
        for index in 0..<rows { try keeper.execute("INSERT INTO t VALUES (\(index))") }
        return keeper
    }

    /// A WAL store at rest whose rows live only in its `-wal`: copied (main file and `-wal`) while
    /// the connection that wrote them is still open, as a store is left when its app is killed.
    static func walStoreAtRest(at path: String, rows: Int) throws {
        let source = path + ".source"
        let keeper = try walStore(at: source, rows: rows)
        try FileManager.default.copyItem(atPath: source, toPath: path)
        try FileManager.default.copyItem(atPath: source + "-wal", toPath: path + "-wal")
        withExtendedLifetime(keeper) {}
    }

    /// A rollback-journal store holding the one row `marker`.
    static func newStore(at path: String, marker: Int) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try connection.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (\(marker))")
    }

    /// The rows of `t`, through SQLite (a `-wal` beside the file would be read too).
    static func values(_ path: String) throws -> [Int64] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))
        return try connection.rows("SELECT x FROM t ORDER BY x").compactMap { $0.first?.int64 }
    }

    static func bytes(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// True when some process holds a lock on the file, as `/proc/locks` says (nil: not Linux).
    static func isLocked(_ path: String) -> Bool? {
        guard let identity = StoreLocks.FileIdentity(path: path), let locked = StoreLocks.lockedFiles() else { return nil }
        return locked.contains(identity)
    }
}
