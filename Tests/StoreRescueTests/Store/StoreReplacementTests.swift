import Foundation
import Testing
@testable import StoreRescue

/// Replacing a store in place: the WAL folded in first so no `-wal` ever sits beside a main file
/// it does not belong to, a store in use refused, every intermediate state a whole store.
@Suite struct StoreReplacementTests {
    struct Stop: Error {}

    /// A WAL store whose last rows live only in its `-wal` (another connection keeps it open
    /// while the rows are written, and closes without a checkpoint… of its own).
    private func walStore(at path: String, rows: Int) throws -> SQLiteConnection {
        let keeper = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        _ = try keeper.scalar("PRAGMA journal_mode = WAL")
        try keeper.execute("PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x INTEGER)")
        for index in 0..<rows { try keeper.execute("INSERT INTO t VALUES (\(index))") }
        return keeper
    }

    /// A WAL store at rest whose rows live only in its `-wal`: copied (main file and `-wal`) while
    /// the connection that wrote them is still open, as a store is left when its app is killed.
    private func walStoreAtRest(at path: String, rows: Int) throws {
        let source = path + ".source"
        let keeper = try walStore(at: source, rows: rows)
        try FileManager.default.copyItem(atPath: source, toPath: path)
        try FileManager.default.copyItem(atPath: source + "-wal", toPath: path + "-wal")
        _ = keeper
    }

    private func newStore(at path: String, marker: Int) throws {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try connection.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (\(marker))")
    }

    private func values(_ path: String) throws -> [Int64] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))
        return try connection.rows("SELECT x FROM t ORDER BY x").compactMap { $0.first?.int64 }
    }

    @Test func aWALStoreIsSettledThenReplaced() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 5)
        let walSize = try FileManager.default.attributesOfItem(atPath: store + "-wal")[.size] as? Int ?? 0
        #expect(walSize > 32, "the rows are in the -wal")
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 42)
        let result = try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh)
        #expect(result.replacedExisting && result.settledSidecars == [store + "-wal"])
        #expect(try values(store) == [42], "the new store, and no foreign WAL replayed onto it")
        for suffix in ["-wal", "-shm", "-journal"] { #expect(!FileManager.default.fileExists(atPath: store + suffix), "\(suffix)") }
        #expect(!FileManager.default.fileExists(atPath: fresh))
    }

    @Test func aStoreInUseIsRefusedAndLeftAsItWas() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        let keeper = try walStore(at: store, rows: 3)
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 1)
        let error = #expect(throws: StoreReplacementError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(with: fresh)
        }
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(error?.description.contains("is open in another process") == true)
        #expect(FileManager.default.fileExists(atPath: store + "-wal"), "the store keeps its WAL")
        #expect(try keeper.rows("SELECT count(*) FROM t").first?.first?.int64 == 3)
        #expect(FileManager.default.fileExists(atPath: fresh))
    }

    @Test(arguments: StoreReplacement.Step.allCases)
    func stoppedAtAnyStepThePathHoldsAWholeStore(step: StoreReplacement.Step) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 4)
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 99)
        #expect(throws: Stop.self) {
            try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { if $0 == step { throw Stop() } }
        }
        // Before the rename: the old store with every row its -wal held, folded into the main
        // file (no sidecar left); after it: the new store.
        let expected: [Int64] = step == .renamed ? [99] : [0, 1, 2, 3]
        for suffix in ["-wal", "-shm", "-journal"] { #expect(!FileManager.default.fileExists(atPath: store + suffix), "\(step) \(suffix)") }
        #expect(try values(store) == expected, "stopped at \(step)")
    }

    @Test func nothingToReplaceAndStraySidecars() throws {
        let dir = try TemporaryDirectory()
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 7)
        let store = dir.path("s.sqlite")
        #expect(FileManager.default.createFile(atPath: store + "-wal", contents: Data([1, 2, 3])))
        let stray = #expect(throws: StoreReplacementError.self) { try StoreReplacement(storePath: store).replace(with: fresh) }
        #expect(stray?.description.contains("s.sqlite-wal") == true)
        try FileManager.default.removeItem(atPath: store + "-wal")
        #expect(try StoreReplacement(storePath: store).replace(with: fresh).replacedExisting == false)
        #expect(try values(store) == [7])
    }

    @Test func aReplacementWithItsOwnSidecarIsRefused() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try newStore(at: store, marker: 1)
        let fresh = dir.path("fresh.sqlite")
        let keeper = try walStore(at: fresh, rows: 1)
        let error = #expect(throws: StoreReplacementError.self) { try StoreReplacement(storePath: store).replace(with: fresh) }
        #expect(error?.description.contains("has a -wal of its own") == true)
        _ = keeper
    }

    @Test func movingAsideTakesTheMainFileThenItsSidecars() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 2)
        #expect(FileManager.default.createFile(atPath: store + "-shm", contents: Data(count: 32768)))
        let quarantine = dir.path("quarantine")
        try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: true)
        let moved = try StoreReplacement(storePath: store).moveAside(into: quarantine)
        #expect(moved.map { ($0 as NSString).lastPathComponent } == ["s.sqlite", "s.sqlite-wal", "s.sqlite-shm"])
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: store + suffix)) }
        #expect(try values(quarantine + "/s.sqlite") == [0, 1], "the set moved whole: the rows in its -wal too")
    }
}
