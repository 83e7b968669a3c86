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
        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 8)
        let aside = dir.path("aside")
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        var foldedMode: mode_t?
        let result = try StoreReplacement(storePath: store, lockTimeout: 0.2).replace(
            with: fresh, knownDamage: "a test calls it damaged", ifDamaged: .moveSidecarsAside(into: aside), whileLocked: nil,
            faultInjection: { step in
                var info = stat()
                if step == .folded, lstat(store, &info) == 0 { foldedMode = info.st_mode & 0o7777 }
            })
        #expect(result.foldedWriteAheadLogPages == 2, "page 1 and the table's page")
        #expect(result.movedSidecars == [aside + "/s.sqlite-wal"])
        #expect(foldedMode == 0o640)
        #expect(try F.values(store) == [8])
    }
}
