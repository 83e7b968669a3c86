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
            #expect(step == .settled && reached == [.locked, .sidecarsMoved, .renamed], "a damaged store is never settled")
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
        case .renamed, .settled:
            #expect(try F.values(store) == [8])
            for suffix in StoreReplacement.sidecarSuffixes { #expect(!F.exists(store + suffix), "\(suffix)") }
        }
    }
}
