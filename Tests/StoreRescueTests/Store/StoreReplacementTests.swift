import Foundation
import Testing
@testable import StoreRescue

/// Replacing a store in place: the WAL folded in first so no `-wal` ever sits beside a main file
/// it does not belong to, a store in use refused, every intermediate state a whole store.
@Suite struct StoreReplacementTests {
    struct Stop: Error {}

    private func walStore(at path: String, rows: Int) throws -> SQLiteConnection {
        try ReplacementFixtures.walStore(at: path, rows: rows)
    }

    private func walStoreAtRest(at path: String, rows: Int) throws {
        try ReplacementFixtures.walStoreAtRest(at: path, rows: rows)
    }

    private func newStore(at path: String, marker: Int) throws {
        try ReplacementFixtures.newStore(at: path, marker: marker)
    }

    private func values(_ path: String) throws -> [Int64] {
        try ReplacementFixtures.values(path)
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

    /// The new file takes the replaced store's permission bits and, run as root, its owner and
    /// group, for every command that replaces a store (restore, upgrade, the clean fallback): a
    /// review's `restore` as root left the app's store root's, and the app could not open it.
    @Test(arguments: [false, true])
    func theReplacementKeepsTheStoresModeAndOwner(damaged: Bool) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 5)
        if damaged {
            for suffix in ["-wal", "-shm"] { unlink(store + suffix) }
            try Data(repeating: 0xAB, count: 100).write(to: URL(fileURLWithPath: store))
        }
        chmod(store, 0o640)
        let owner: uid_t = geteuid() == 0 ? 65534 : geteuid()
        let group: gid_t = geteuid() == 0 ? 65534 : getegid()
        if geteuid() == 0 { chown(store, owner, group) }
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 7)
        chmod(fresh, 0o600)
        try FileManager.default.createDirectory(atPath: dir.path("aside"), withIntermediateDirectories: false)
        _ = try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh, ifDamaged: .moveSidecarsAside(into: dir.path("aside")))
        var info = stat()
        #expect(stat(store, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o640)
        #expect(info.st_uid == owner && info.st_gid == group)
        #expect(try values(store) == [7])
    }

    /// A store in TRUNCATE or PERSIST journal mode keeps a spent `-journal` (empty, or its
    /// header zeroed) after every transaction: it is removed under the lock and the store
    /// replaced. A review's `restore --force` of such stores always refused ("still has
    /// -journal beside it"). One that still starts with SQLite's magic SQLite itself rolls back.
    @Test(arguments: ["TRUNCATE", "PERSIST", "PERSIST-short", "magic"])
    func aSpentJournalIsRemovedAndTheStoreReplaced(mode: String) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        do {
            let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            _ = try writer.scalar("PRAGMA journal_mode = \(mode == "TRUNCATE" ? mode : "PERSIST")")
            // A journal_size_limit under 8 leaves fewer than 8 zero bytes (review).
            if mode == "PERSIST-short" { _ = try writer.scalar("PRAGMA journal_size_limit = 5") }
            try writer.execute("CREATE TABLE t (v); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")
        }
        #expect(FileManager.default.fileExists(atPath: store + "-journal"))
        if mode == "PERSIST-short" {
            #expect(try FileManager.default.attributesOfItem(atPath: store + "-journal")[.size] as? Int == 5)
        }
        if mode == "magic" {
            try Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7] + [UInt8](repeating: 0, count: 512)).write(to: URL(fileURLWithPath: store + "-journal"))
        }
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 9)
        let result = try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh)
        #expect(try values(store) == [9])
        #expect(!FileManager.default.fileExists(atPath: store + "-journal"))
        // A journal with SQLite's magic is hot to SQLite, which rolls it back when the store
        // is read (settling); the spent ones it leaves are removed under the lock, and said so.
        if mode == "magic" {
            #expect(result.settledSidecars == [store + "-journal"] && result.removedSpentJournal == nil)
        } else {
            #expect(result.settledSidecars.isEmpty && result.removedSpentJournal == store + "-journal")
        }
    }

    /// A disk too full to fold the store's `-wal` into its main file: exit 74 and "free disk
    /// space", the store as it was. A review's healthy store got 65 and the advice to
    /// quarantine it as damaged.
    @Test(.enabled(if: FullDisk.isAvailable, "needs root to mount a small tmpfs"))
    func aFullDiskWhileSettlingIsAnIOErrorNotADamagedStore() throws {
        let disk = try FullDisk(at: NSTemporaryDirectory() + "storerescue-settle-full-\(getpid())")
        defer { disk.unmount() }
        let store = disk.path + "/s.sqlite"
        let fresh = disk.path + "/fresh.sqlite"
        try newStore(at: fresh, marker: 1)
        do {
            let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            _ = try writer.scalar("PRAGMA page_size = 1024")
            _ = try writer.scalar("PRAGMA journal_mode = WAL")
            try writer.disableCheckpointOnClose()
            try writer.execute("PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (v); INSERT INTO t VALUES (zeroblob(6000))")
        }
        // Fill what is left.
        let filler = open(disk.path + "/filler", O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 1, count: 1024)
        while block.withUnsafeBytes({ write(filler, $0.baseAddress, 1024) }) == 1024 {}
        close(filler)
        let error = #expect(throws: StoreReplacementError.self) { try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) }
        guard case .noRoomToSettle? = error else {
            Issue.record("expected noRoomToSettle, got \(String(describing: error))")
            return
        }
        #expect(error?.exitStatus == .ioError)
        #expect(error?.recoverySuggestion?.hasPrefix("free disk space") == true)
        // The checkpoint may have copied some pages before the disk filled; the -wal still holds
        // them all, so the store reads as it did.
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        try FileManager.default.removeItem(atPath: disk.path + "/filler")
        let reader = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try reader.scalar("SELECT length(v) FROM t")?.int64 == 6000)
    }

    /// The new file swapped for a link to another file while the replacement waits (the
    /// store's folder is the app user's to write in): nothing is changed through the link and
    /// nothing replaces the store. A review's swap made a root restore hand a root file to
    /// the app's user (chmod and chown by name).
    @Test func aNewFileSwappedForALinkMeanwhileIsRefusedAndNothingIsChangedThroughIt() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 5)
        chmod(store, 0o666)
        let victim = dir.path("victim")
        try Data("secret".utf8).write(to: URL(fileURLWithPath: victim))
        chmod(victim, 0o600)
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 3)
        let error = #expect(throws: StoreReplacementError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh, faultInjection: { step in
                guard step == .locked else { return }
                unlink(fresh)
                symlink(victim, fresh)
            })
        }
        guard case .newFileUnusable? = error else {
            Issue.record("expected newFileUnusable, got \(String(describing: error))")
            return
        }
        var info = stat()
        #expect(lstat(victim, &info) == 0 && info.st_mode & 0o7777 == 0o600, "the victim's mode is as it was")
        #expect(lstat(store, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the store is still a file, not the link")
        #expect(try values(store).count == 5)
    }

    /// Another regular file renamed over the new file while the replacement waits (owned by
    /// this process too, one link: the first ownership checks let it through, a review found)
    /// is not the file written: refused before anything at the store's path changes, also for
    /// a damaged store whose sidecars would be moved aside.
    @Test(arguments: [false, true])
    func anotherFileRenamedOverTheNewFileIsRefusedBeforeAnythingChanges(damaged: Bool) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 5)
        if damaged { try Data(repeating: 0xAB, count: 100).write(to: URL(fileURLWithPath: store)) }
        let before = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        let other = dir.path("root-only.db")
        try Data("SECRET".utf8).write(to: URL(fileURLWithPath: other))
        chmod(other, 0o600)
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 3)
        var replacement = StoreReplacement(storePath: store, lockTimeout: 1)
        replacement.expectedNewFile = StoreReplacement.FileIdentity(path: fresh)
        try FileManager.default.createDirectory(atPath: dir.path("aside"), withIntermediateDirectories: false)
        let error = #expect(throws: StoreReplacementError.self) {
            try replacement.replace(with: fresh, ifDamaged: .moveSidecarsAside(into: dir.path("aside")), faultInjection: { step in
                if step == .locked || (damaged && step == .settled) { rename(other, fresh) }
            })
        }
        guard case .newFileUnusable? = error else {
            Issue.record("expected newFileUnusable, got \(String(describing: error))")
            return
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("aside")).isEmpty, "no sidecar moved aside")
        var after = try StoreFixtureBuilder.snapshot(of: dir.url.path)
        after.removeValue(forKey: "fresh.sqlite")
        after.removeValue(forKey: "aside")
        var expected = before
        expected.removeValue(forKey: "aside")
        if !damaged { expected = expected.filter { !$0.key.hasPrefix("s.sqlite") }; after = after.filter { !$0.key.hasPrefix("s.sqlite") } }
        #expect(after == expected, "the store's folder as it was")
        var info = stat()
        #expect(lstat(fresh, &info) == 0 && info.st_mode & 0o777 == 0o600, "the other file's mode as it was")
        #expect(FileManager.default.fileExists(atPath: store + "-wal") || !damaged, "a damaged store keeps its -wal")
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

    /// The wait for an app to close the store stops on a cancellation (SIGINT, SIGTERM) within
    /// about 50 ms, not at the end of the timeout: the wait runs inside the command's final
    /// publish, which an interruption lets finish, so it would have held the interruption up to
    /// its 10 s limit. Two waits: a WAL store another connection has open (SQLite refuses to
    /// leave WAL mode, asked again every 50 ms), and a rollback-mode store with a writer's
    /// transaction open (`BEGIN EXCLUSIVE` in SQLite's busy handler, which slept to the end).
    @Test(arguments: [true, false])
    func theWaitForAStoreInUseStopsOnACancellation(wal: Bool) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        let keeper: SQLiteConnection
        if wal {
            keeper = try walStore(at: store, rows: 3)
        } else {
            keeper = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try keeper.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (0), (1), (2)")
            try keeper.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES (3)")
        }
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 1)
        let flag = CancellationFlag()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { flag.cancel() }
        let started = Date()
        let error = #expect(throws: StoreReplacementError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 8, cancellation: flag).replace(with: fresh)
        }
        #expect(error == .interrupted(path: store))
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(Date().timeIntervalSince(started) < 4, "stopped long before the 8 s timeout")
        if !wal { try keeper.execute("ROLLBACK") }
        #expect(try keeper.rows("SELECT count(*) FROM t").first?.first?.int64 == 3)
        #expect(FileManager.default.fileExists(atPath: fresh))
        #expect(try values(store) == [0, 1, 2], "the store as it was")
    }

    @Test(arguments: StoreReplacement.Step.allCases)
    func stoppedAtAnyStepThePathHoldsAWholeStore(step: StoreReplacement.Step) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 4)
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 99)
        var reached: [StoreReplacement.Step] = []
        let replacement = StoreReplacement(storePath: store, lockTimeout: 1)
        do {
            try replacement.replace(with: fresh, faultInjection: { reached.append($0); if $0 == step { throw Stop() } })
            // Only a damaged store's path has this step: the replacement ran to its end.
            #expect([.sidecarsMoved, .folded].contains(step) && reached == [.settled, .locked, .renamed])
        } catch is Stop {
            #expect(reached.last == step)
        }
        // Before the rename: the old store with every row its -wal held, folded into the main
        // file (no sidecar left); after it: the new store.
        let expected: [Int64] = [.renamed, .sidecarsMoved, .folded].contains(step) ? [99] : [0, 1, 2, 3]
        for suffix in ["-wal", "-shm", "-journal"] { #expect(!FileManager.default.fileExists(atPath: store + suffix), "\(step) \(suffix)") }
        #expect(try values(store) == expected, "stopped at \(step)")
    }

    @Test func aThrowingWhileLockedCheckReplacesNothing() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try walStoreAtRest(at: store, rows: 3)
        let fresh = dir.path("fresh.sqlite")
        try newStore(at: fresh, marker: 5)
        var seen: (size: Int64, sha: String)?
        #expect(throws: Stop.self) {
            try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { locked in
                seen = (try locked.size(), try locked.sha256())
                throw Stop()
            }
        }
        #expect(try values(store) == [0, 1, 2], "the old store, its WAL rows folded in")
        #expect(try FileDigest.of(path: store).sha256 == seen?.sha, "whileLocked saw the settled store's bytes")
        #expect(try values(fresh) == [5], "the new file is left where it was")
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
