import Foundation
import Testing
@testable import StoreRescue

/// A store SQLite cannot settle: refused by default, or its sidecars moved aside as they are
/// (never folded into a damaged file, never deleted) before the new file takes its name.
@Suite struct StoreReplacementDamagedTests {
    struct Stop: Error {}
    typealias F = ReplacementFixtures

    private let garbage = Data((0..<9000).map { UInt8(truncatingIfNeeded: $0 * 31) })

    /// A main file with no SQLite header, a `-wal` and a `-shm` beside it, and a new store.
    private func damagedStore(in dir: TemporaryDirectory) throws -> (store: String, fresh: String, aside: String) {
        let store = dir.path("s.sqlite")
        try garbage.write(to: URL(fileURLWithPath: store))
        try Data("old wal".utf8).write(to: URL(fileURLWithPath: store + "-wal"))
        try Data(count: 32768).write(to: URL(fileURLWithPath: store + "-shm"))
        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 8)
        let aside = dir.path("aside")
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        return (store, fresh, aside)
    }

    @Test func aDamagedStoreIsRefusedByDefaultAndLeftAsItWas() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, _) = try damagedStore(in: dir)
        let error = #expect(throws: StoreReplacementError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(with: fresh)
        }
        #expect(error?.description == "\(store) cannot be checkpointed before it is replaced: it has no SQLite header; it was not replaced")
        #expect(error?.exitStatus == .notAStore)
        #expect(try F.bytes(store) == garbage)
        #expect(try F.bytes(store + "-wal") == Data("old wal".utf8))
        #expect(try F.values(fresh) == [8])
    }

    @Test func aStoreSQLiteFindsCorruptIsRefusedWithSQLitesReason() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try F.newStore(at: store, marker: 1)
        // A valid header, then garbage where page 1's b-tree should be.
        var bytes = try F.bytes(store)
        for index in 100..<bytes.count { bytes[index] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: store))
        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 2)
        let error = #expect(throws: StoreReplacementError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(with: fresh)
        }
        #expect(error?.description.contains("malformed") == true, "\(String(describing: error))")
        #expect(try F.bytes(store) == bytes)
        let aside = dir.path("aside")
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        let result = try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(with: fresh, ifDamaged: .moveSidecarsAside(into: aside))
        #expect(result == .init(settled: false, settledSidecars: [], movedSidecars: [], replacedExisting: true))
        #expect(try F.values(store) == [2])
    }

    @Test func itsSidecarsAreMovedAsideAndItsMainFileCanBePreserved() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, aside) = try damagedStore(in: dir)
        var preserved: FileMover.Move?
        let result = try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(
            with: fresh, ifDamaged: .moveSidecarsAside(into: aside),
            whileLocked: { preserved = try $0.preserve(at: aside + "/s.sqlite") })
        #expect(result == .init(settled: false, settledSidecars: [],
                                movedSidecars: [aside + "/s.sqlite-wal", aside + "/s.sqlite-shm"], replacedExisting: true))
        #expect(preserved?.wasCopied == false)
        #expect(try F.values(store) == [8])
        for suffix in StoreReplacement.sidecarSuffixes { #expect(!F.exists(store + suffix), "\(suffix)") }
        #expect(try F.bytes(aside + "/s.sqlite") == garbage)
        #expect(try F.bytes(aside + "/s.sqlite-wal") == Data("old wal".utf8))
        #expect(try F.bytes(aside + "/s.sqlite-shm") == Data(count: 32768))
    }

    @Test func aDamagedStoreLockedElsewhereIsInUse() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, aside) = try damagedStore(in: dir)
        let holder = try StoreReplacement.LockedStore(path: store, writable: true)
        #expect(holder.lockAsSQLiteWould(waitingAtMost: 0))
        let error = #expect(throws: StoreReplacementError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 0.3).replace(with: fresh, ifDamaged: .moveSidecarsAside(into: aside))
        }
        #expect(error == .inUse(path: store, seconds: 0.3))
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(try F.bytes(store + "-wal") == Data("old wal".utf8))
        #expect(BackupFixtures.fileNames(in: aside).isEmpty, "nothing moved")
        holder.close()
    }

    @Test(arguments: StoreReplacement.Step.allCases)
    func stoppedAtAnyStepNoForeignSidecarSitsBesideTheNewStore(step: StoreReplacement.Step) throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, aside) = try damagedStore(in: dir)
        var reached: [StoreReplacement.Step] = []
        do {
            try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(
                with: fresh, ifDamaged: .moveSidecarsAside(into: aside),
                faultInjection: { reached.append($0); if $0 == step { throw Stop() } })
            #expect([.settled, .folded].contains(step) && reached == [.locked, .sidecarsMoved, .renamed],
                    "a damaged store is never settled; a -wal that is not one is not folded")
        } catch is Stop {
            #expect(reached.last == step)
        }
        switch step {
        case .locked:
            #expect(try F.bytes(store) == garbage)
            #expect(try F.bytes(store + "-wal") == Data("old wal".utf8))
        case .sidecarsMoved:
            #expect(try F.bytes(store) == garbage, "the old main file, its sidecars aside")
            #expect(!F.exists(store + "-wal"))
            #expect(try F.bytes(aside + "/s.sqlite-wal") == Data("old wal".utf8))
        case .renamed, .settled, .folded:
            #expect(try F.values(store) == [8])
            for suffix in StoreReplacement.sidecarSuffixes { #expect(!F.exists(store + suffix), "\(suffix)") }
        }
    }
    /// A damaged store whose `-wal` holds committed transactions: the `-wal` is folded into a copy
    /// of the main file, put in the store's place before any sidecar moves, so that a stop at any
    /// step leaves the store's content as SQLite read it. A review's kill between the sidecars'
    /// move and the rename left the main file without the rows only its `-wal` held.
    @Test(arguments: [StoreReplacement.Step.folded, .sidecarsMoved, .renamed])
    func aCommittedWALIsFoldedIntoTheMainFileBeforeItMoves(step: StoreReplacement.Step) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try F.walStoreAtRest(at: store, rows: 40)
        let original = try F.bytes(store), wal = try F.bytes(store + "-wal")
        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 8)
        let aside = dir.path("aside")
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        var reached: [StoreReplacement.Step] = []
        var folded: StoreReplacement.FileIdentity?
        do {
            try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(
                with: fresh, knownDamage: "a test calls it damaged", ifDamaged: .moveSidecarsAside(into: aside),
                whileLocked: { try $0.preserve(at: aside + "/s.sqlite") }, beforeFolding: { folded = $0 },
                faultInjection: { reached.append($0); if $0 == step { throw Stop() } })
            Issue.record("the replacement was not stopped at \(step)")
        } catch is Stop {}
        let order: [StoreReplacement.Step] = [.locked, .folded, .sidecarsMoved, .renamed]
        #expect(reached == Array(order.prefix(through: try #require(order.firstIndex(of: step)))))
        #expect(try F.bytes(aside + "/s.sqlite") == original, "the original main file, kept as it was")
        switch step {
        case .folded, .sidecarsMoved:
            #expect(folded != nil && StoreReplacement.FileIdentity(path: store) == folded, "the folded copy is at the path")
            // The main file alone holds every row only the -wal held.
            let alone = dir.path("alone/s.sqlite")
            try FileManager.default.createDirectory(atPath: dir.path("alone"), withIntermediateDirectories: false)
            try FileManager.default.copyItem(atPath: store, toPath: alone)
            #expect(try F.values(alone) == Array(0..<40))
            if step == .folded {
                #expect(try F.bytes(store + "-wal") == wal, "not moved yet")
                // With the -wal still beside it: the same rows (its frames are in the copy already).
                let both = dir.path("both/s.sqlite")
                try FileManager.default.createDirectory(atPath: dir.path("both"), withIntermediateDirectories: false)
                for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: store + suffix, toPath: both + suffix) }
                #expect(try F.values(both) == Array(0..<40))
            } else {
                #expect(!F.exists(store + "-wal"))
                #expect(try F.bytes(aside + "/s.sqlite-wal") == wal)
            }
        default:
            #expect(try F.values(store) == [8])
            for suffix in StoreReplacement.sidecarSuffixes { #expect(!F.exists(store + suffix), "\(suffix)") }
            #expect(try F.bytes(aside + "/s.sqlite-wal") == wal)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(names.allSatisfy { !$0.contains(TemporaryItems.marker) }, "\(names)")
    }

    /// The fold, whole: the result says how many pages went in; the copy keeps the store's mode.
    @Test func theResultCountsTheFoldedPages() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try F.walStoreAtRest(at: store, rows: 5)
        chmod(store, 0o640)
        var foldedMode: mode_t?
        let (result, _) = try replaceDamaged(store, in: dir) { folded in
            var info = stat()
            if lstat(folded, &info) == 0 { foldedMode = info.st_mode & 0o7777 }
        }
        #expect(result.foldedSidecar == .init(name: "s.sqlite-wal", pages: 2), "page 1 and the table's page")
        #expect(result.movedSidecars == [dir.path("aside/s.sqlite-wal")])
        #expect(foldedMode == 0o640)
        #expect(try F.values(store) == [8])
    }
    /// A rollback-mode store left by a process killed mid-transaction: 2,000 rows, an `UPDATE` of
    /// every row spilled part-way into the main file (a cache of 2 pages), and the hot `-journal`
    /// holding the pages it overwrote.
    private func hotJournalStore(at store: String) throws {
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
        try connection.execute("""
            CREATE TABLE t (x INTEGER, pad TEXT);
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1999)
            INSERT INTO t SELECT i, printf('%.*c', 200, 'p') FROM n;
            """)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(BackupFixtures.pythonPath))
        process.arguments = ["-c", """
            import sqlite3, os, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute('PRAGMA cache_size = 2')
            c.execute('BEGIN')
            c.execute('UPDATE t SET x = x + 1000000')
            os._exit(0)
            """, store]
        try process.run()
        process.waitUntilExit()
        #expect(F.exists(store + "-journal"))
    }

    /// A damaged store in rollback mode with a hot `-journal`: the journal's original pages are
    /// rolled back into a copy of the main file put in its place before the journal moves, so a
    /// stop between the two never leaves the main file half-written (it did until stop 25).
    @Test(arguments: [StoreReplacement.Step.folded, .sidecarsMoved])
    func aHotJournalIsRolledBackIntoACopyBeforeItMoves(step: StoreReplacement.Step) throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try hotJournalStore(at: store)
        let journal = try F.bytes(store + "-journal")
        let halfWritten = dir.path("alone-before/s.sqlite")
        try FileManager.default.createDirectory(atPath: dir.path("alone-before"), withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: store, toPath: halfWritten)
        #expect(try F.values(halfWritten) != Array(0..<2000), "the main file alone is half-written")
        // What SQLite reads: both files copied, the journal rolled back by SQLite itself.
        let both = dir.path("both/s.sqlite")
        try FileManager.default.createDirectory(atPath: dir.path("both"), withIntermediateDirectories: false)
        for suffix in ["", "-journal"] { try FileManager.default.copyItem(atPath: store + suffix, toPath: both + suffix) }
        let rolledBack = try SQLiteConnection(path: both, options: SQLiteOpenOptions(mode: .readWrite))
            .rows("SELECT x FROM t ORDER BY x").compactMap { $0.first?.int64 }
        #expect(rolledBack == Array(0..<2000))

        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 8)
        let aside = dir.path("aside")
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        var reached: [StoreReplacement.Step] = []
        do {
            try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(
                with: fresh, knownDamage: "a test calls it damaged", ifDamaged: .moveSidecarsAside(into: aside), whileLocked: nil,
                faultInjection: { reached.append($0); if $0 == step { throw Stop() } })
            Issue.record("the replacement was not stopped at \(step)")
        } catch is Stop {}
        #expect(reached.contains(.folded))
        let alone = dir.path("alone/s.sqlite")
        try FileManager.default.createDirectory(atPath: dir.path("alone"), withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: store, toPath: alone)
        #expect(try F.values(alone) == rolledBack, "the main file alone holds what SQLite read")
        #expect(try F.bytes(step == .folded ? store + "-journal" : aside + "/s.sqlite-journal") == journal)
    }

    /// The journal reader against SQLite's own rollback, byte for byte: the fold of a hot journal
    /// is the main file SQLite leaves after rolling it back.
    @Test func theFoldOfAHotJournalIsTheFileSQLiteRollsBackTo() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try hotJournalStore(at: store)
        let expected = try settledBySQLite(store, suffixes: ["", "-journal"], in: dir)
        #expect(!F.exists(dir.path("sqlite/s.sqlite-journal")), "SQLite rolled it back")
        let (result, folded) = try replaceDamaged(store, in: dir)
        let segments = try #require(result.foldedSidecar)
        #expect(segments.name == "s.sqlite-journal" && segments.pages > 1)
        #expect(folded == expected)
    }

    /// Replaces the damaged `store` (a test's word for it) with a new store, moving its sidecars
    /// into `aside/`; returns the result and the main file's bytes once folded (nil: no fold).
    /// `atFold` sees the store's path once the folded copy is there.
    private func replaceDamaged(_ store: String, in dir: TemporaryDirectory, atFold: ((String) -> Void)? = nil) throws
        -> (StoreReplacement.Result, Data?)
    {
        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 8)
        let aside = dir.path("aside")
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        var folded: Data?
        let result = try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(
            with: fresh, knownDamage: "a test calls it damaged", ifDamaged: .moveSidecarsAside(into: aside), whileLocked: nil,
            faultInjection: { step in
                guard step == .folded else { return }
                folded = try F.bytes(store)
                atFold?(store)
            })
        return (result, folded)
    }

    /// The main file SQLite leaves once it has rolled back (and checkpointed) a copy of `store`'s
    /// files: what a fold must equal byte for byte.
    private func settledBySQLite(_ store: String, suffixes: [String], in dir: TemporaryDirectory) throws -> Data {
        let copy = dir.path("sqlite/s.sqlite")
        try FileManager.default.createDirectory(atPath: dir.path("sqlite"), withIntermediateDirectories: false)
        for suffix in suffixes { try FileManager.default.copyItem(atPath: store + suffix, toPath: copy + suffix) }
        let connection = try SQLiteConnection(path: copy, options: SQLiteOpenOptions(mode: .readWrite))
        _ = try connection.scalar("SELECT count(*) FROM sqlite_schema")
        if suffixes.contains("-wal") { _ = try connection.scalar("PRAGMA wal_checkpoint(TRUNCATE)") }
        return try F.bytes(copy)
    }

    /// A hand-made hot journal (`pageSize`-byte records, a 512-byte sector) with `records`
    /// (page, fill byte, whether its checksum is wrong), over a store of `originalPages` pages.
    private func handMadeJournal(pageSize: Int, originalPages: UInt32, records: [(UInt32, UInt8, Bool)]) -> Data {
        let nonce: UInt32 = 0x1234_5678
        func be(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        var journal = RollbackJournal.magic + be(UInt32(records.count)) + be(nonce) + be(originalPages) + be(512) + be(UInt32(pageSize))
        journal += [UInt8](repeating: 0, count: 512 - journal.count)
        for (page, byte, bad) in records {
            let data = [UInt8](repeating: byte, count: pageSize)
            var sum = nonce
            var index = pageSize - 200
            while index > 0 { sum &+= UInt32(data[index]); index -= 200 }
            journal += be(page) + data + be(bad ? sum &+ 1 : sum)
        }
        return Data(journal)
    }

    /// A store of at least 4 pages of 4096 bytes, in rollback mode; its page count.
    private func fourPageStore(at store: String) throws -> UInt32 {
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
        try connection.execute("PRAGMA page_size = 4096; CREATE TABLE t (x INTEGER, pad TEXT); INSERT INTO t VALUES (1, printf('%.*c', 9000, 'p'))")
        let pages = UInt32(try connection.scalar("PRAGMA page_count")?.int64 ?? 0)
        #expect(pages >= 4)
        return pages
    }

    /// A hand-made hot journal by `pager.c`'s rules: page 2 journaled twice (SQLite writes every
    /// record in turn: the last wins), then a record for page 99 — past the original size — with
    /// a bad checksum (skipped unread, not the end), then page 3. A review found the first record
    /// winning and the bad checksum ending the playback.
    @Test func aHandMadeJournalIsPlayedBackAsSQLitePlaysItBack() throws {
        let (expected, result, folded) = try handMadeJournalCase(
            pageSize: 4096, pagesPerStorePage: 1, records: [(2, 0xA1, false), (2, 0xB2, false), (99, 0xC3, true), (3, 0xD4, false)])
        #expect(expected[4096] == 0xB2 && expected[8192] == 0xD4, "SQLite: the last record of page 2, and page 3 after the skipped one")
        #expect(result.foldedSidecar == .init(name: "s.sqlite-journal", pages: 2))
        #expect(folded == expected)
    }

    /// `fourPageStore` with a hand-made journal of `pageSize`-byte records beside it: what
    /// SQLite's own rollback of a copy leaves, and what the replacement's fold wrote.
    private func handMadeJournalCase(pageSize: Int, pagesPerStorePage: UInt32, records: [(UInt32, UInt8, Bool)]) throws
        -> (expected: Data, result: StoreReplacement.Result, folded: Data?)
    {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        let pages = try fourPageStore(at: store)
        try handMadeJournal(pageSize: pageSize, originalPages: pages * pagesPerStorePage, records: records)
            .write(to: URL(fileURLWithPath: store + "-journal"))
        let expected = try settledBySQLite(store, suffixes: ["", "-journal"], in: dir)
        let (result, folded) = try replaceDamaged(store, in: dir)
        return (expected, result, folded)
    }

    /// A hot journal whose page size (1024) differs from the main file's (4096): SQLite plays it
    /// back with its own page size. A review's was not folded, leaving the window open.
    @Test func aJournalsOwnPageSizeIsTheOneItIsPlayedBackWith() throws {
        // 4096-byte page 3 is 1024-byte pages 9 to 12.
        let (expected, result, folded) = try handMadeJournalCase(pageSize: 1024, pagesPerStorePage: 4, records: (9...12).map { ($0, 0xE5, false) })
        #expect(expected[8192] == 0xE5 && expected[12287] == 0xE5)
        #expect(result.foldedSidecar == .init(name: "s.sqlite-journal", pages: 4))
        #expect(folded == expected)
    }

    /// An empty main file with a `-wal`: SQLite deletes the `-wal` and reads an empty database, so
    /// nothing is folded (a review's was folded into 520 kB of pages SQLite called malformed).
    @Test func anEmptyMainFilesWALIsNotFolded() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try F.walStoreAtRest(at: store, rows: 5)
        try Data().write(to: URL(fileURLWithPath: store))
        let (result, folded) = try replaceDamaged(store, in: dir)
        #expect(result.foldedSidecar == nil && folded == nil)
        #expect(result.movedSidecars == [dir.path("aside/s.sqlite-wal")])
    }

    /// A store with a hot `-journal` and a `-wal`: SQLite rolls the journal back first, then
    /// reads through the `-wal`; the fold does both, in that order (a review's ignored the journal).
    @Test func aHotJournalAndAWALAreFoldedInSQLitesOrder() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("s.sqlite")
        try hotJournalStore(at: store)
        // A -wal written after the rollback: a copy rolled back by SQLite, switched to WAL, one
        // row changed and left in its -wal, which is then put beside the store.
        let rolled = dir.path("rolled/s.sqlite")
        try FileManager.default.createDirectory(atPath: dir.path("rolled"), withIntermediateDirectories: false)
        for suffix in ["", "-journal"] { try FileManager.default.copyItem(atPath: store + suffix, toPath: rolled + suffix) }
        let writer = try SQLiteConnection(path: rolled, options: SQLiteOpenOptions(mode: .readWrite))
        _ = try writer.scalar("PRAGMA journal_mode = WAL")
        try writer.disableCheckpointOnClose()
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.execute("UPDATE t SET x = x + 1000000 WHERE rowid = 2")
        try FileManager.default.copyItem(atPath: rolled + "-wal", toPath: store + "-wal")
        withExtendedLifetime(writer) {}
        let expected = try settledBySQLite(store, suffixes: ["", "-journal", "-wal"], in: dir)
        let (result, folded) = try replaceDamaged(store, in: dir)
        #expect(result.foldedSidecar?.name == "s.sqlite-journal and s.sqlite-wal")
        #expect(folded == expected)
        let alone = dir.path("alone/s.sqlite")
        try FileManager.default.createDirectory(atPath: dir.path("alone"), withIntermediateDirectories: false)
        try (try #require(folded)).write(to: URL(fileURLWithPath: alone))
        #expect(try F.values(alone) == [0] + (2..<2000).map(Int64.init) + [1_000_001], "rolled back, then the -wal's change")
    }
}
