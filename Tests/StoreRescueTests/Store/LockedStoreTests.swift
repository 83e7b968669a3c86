import Foundation
import Testing
@testable import StoreRescue

/// What a `whileLocked` check may do: read the store through `LockedStore`, and preserve it
/// (`preserve(at:)`: a hard link, or a checked copy) without ever dropping SQLite's lock.
@Suite struct LockedStoreTests {
    struct Stop: Error {}
    typealias F = ReplacementFixtures

    private func settledStoreAndQuarantine(_ dir: TemporaryDirectory) throws -> (store: String, fresh: String, quarantine: String) {
        let store = dir.path("s.sqlite")
        try F.walStoreAtRest(at: store, rows: 3)
        let fresh = dir.path("fresh.sqlite")
        try F.newStore(at: fresh, marker: 42)
        let quarantine = dir.path("quarantine")
        try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: false)
        return (store, fresh, quarantine)
    }

    @Test(.enabled(if: F.isLocked("/proc/self/exe") != nil, "needs /proc/locks"))
    func linkingInsideWhileLockedKeepsTheLockAndTheOldBytes() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, quarantine) = try settledStoreAndQuarantine(dir)
        var lockedBefore: Bool?, lockedAfter: Bool?
        var preserved: FileMover.Move?
        try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { locked in
            lockedBefore = F.isLocked(store)
            preserved = try locked.preserve(at: quarantine + "/s.sqlite")
            lockedAfter = F.isLocked(store)
            // Another connection cannot read the store: the exclusive lock still holds.
            let other = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly, busyTimeoutMilliseconds: 0))
            #expect(throws: SQLiteError.self) { _ = try other.scalar("SELECT count(*) FROM t") }
        }
        #expect(lockedBefore == true && lockedAfter == true, "link opened and closed no descriptor of the store")
        #expect(preserved == FileMover.Move(source: store, destination: quarantine + "/s.sqlite", wasCopied: false))
        #expect(try F.values(quarantine + "/s.sqlite") == [0, 1, 2], "the old store, its WAL folded in")
        #expect(try F.values(store) == [42])
        for suffix in StoreReplacement.sidecarSuffixes { #expect(!F.exists(store + suffix) && !F.exists(quarantine + "/s.sqlite" + suffix)) }
    }

    /// The control for the test above: the check it relies on does see a dropped lock.
    @Test(.enabled(if: F.isLocked("/proc/self/exe") != nil, "needs /proc/locks"))
    func openingAndClosingThePathDropsTheLock() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, _) = try settledStoreAndQuarantine(dir)
        var locked: [Bool?] = []
        #expect(throws: Stop.self) {
            try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { _ in
                locked.append(F.isLocked(store))
                close(open(store, O_RDONLY))  // what a whileLocked check must never do
                locked.append(F.isLocked(store))
                throw Stop()
            }
        }
        #expect(locked == [true, false])
    }

    @Test func acrossFileSystemsTheBytesAreCopiedThroughTheLockedDescriptor() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, quarantine) = try settledStoreAndQuarantine(dir)
        var preserved: FileMover.Move?
        var seen: String?
        try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { locked in
            seen = try locked.sha256()
            preserved = try locked.preserve(at: quarantine + "/s.sqlite", linking: { _, _ in EXDEV })
        }
        #expect(preserved?.wasCopied == true)
        #expect(try FileDigest.of(path: quarantine + "/s.sqlite").sha256 == seen)
        #expect(try F.values(quarantine + "/s.sqlite") == [0, 1, 2])
        #expect(BackupFixtures.fileNames(in: quarantine) == ["s.sqlite"], "no temporary left")
        #expect(try F.values(store) == [42])
    }

    @Test(.enabled(if: FileMoverTests.sharedMemoryIsAnotherFileSystem, "/dev/shm is not another file system here"))
    func preservingOnAnotherFileSystemCopies() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, _) = try settledStoreAndQuarantine(dir)
        let quarantine = "/dev/shm/storerescue-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: quarantine) }
        var preserved: FileMover.Move?
        try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { preserved = try $0.preserve(at: quarantine + "/s.sqlite") }
        #expect(preserved?.wasCopied == true)
        #expect(try F.values(quarantine + "/s.sqlite") == [0, 1, 2])
        #expect(try F.values(store) == [42])
    }

    @Test func aTakenNameIsNeverOverwrittenAndNothingIsReplaced() throws {
        let dir = try TemporaryDirectory()
        let (store, fresh, quarantine) = try settledStoreAndQuarantine(dir)
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: quarantine + "/s.sqlite"))
        let error = #expect(throws: FileMoveError.self) {
            try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: fresh) { try $0.preserve(at: quarantine + "/s.sqlite") }
        }
        #expect(error?.description == "cannot move a file to \(quarantine)/s.sqlite: that name is taken; nothing was overwritten")
        #expect(try String(contentsOfFile: quarantine + "/s.sqlite", encoding: .utf8) == "someone else's")
        #expect(try F.values(store) == [0, 1, 2])
        #expect(try F.values(fresh) == [42])
    }
}
