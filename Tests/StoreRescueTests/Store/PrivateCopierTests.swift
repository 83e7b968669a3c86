import Foundation
import Testing
@testable import StoreRescue

/// The private copy a store is read through when its sidecars hold data, made while a writer
/// may be committing beside it.
@Suite struct PrivateCopierTests {
    /// A rollback journal seen when the store was probed and gone by the time it is copied (the
    /// writer committed): the copy is made of what is there now, not refused as unreadable.
    /// (Before: "cannot make a private copy to read: cannot open …-journal", exit 74 — one run in
    /// four of a backup taken beside a busy writer in DELETE mode.)
    @Test func aJournalThatVanishesAfterTheProbeIsNotAnError() throws {
        let directory = try TemporaryDirectory()
        let store = try Self.busyStore(in: directory)
        let probe = try InputProbe(path: store)
        #expect(probe.files.sidecars.contains { $0.suffix == "-journal" })
        try FileManager.default.removeItem(atPath: store + "-journal")
        let copy = try PrivateCopier.copy(probe: probe, parent: directory.path("."))
        defer { copy.remove() }
        #expect(FileManager.default.fileExists(atPath: copy.path(PrivateCopier.storeName)))
        #expect(!FileManager.default.fileExists(atPath: copy.path(PrivateCopier.storeName + "-journal")))
        let rows = try SQLiteConnection(path: copy.path(PrivateCopier.storeName), options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT count(*) FROM t")
        #expect(rows == .integer(2))
    }

    /// A store in DELETE mode with a journal that holds data — a header with the magic and a
    /// page record's worth of bytes — so it is copied, not read in place.
    static func busyStore(in directory: TemporaryDirectory) throws -> String {
        let store = directory.path("busy.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2)")
        }
        var journal = Data([0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7])
        journal.append(Data(repeating: 1, count: 4096))
        try journal.write(to: URL(fileURLWithPath: store + "-journal"))
        return store
    }

    /// What a commit does to page 1: its change counter (bytes 24–27) goes up by one, in place.
    static func bumpChangeCounter(of store: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: store))
        try handle.seek(toOffset: 24)
        let counter = try #require(try handle.read(upToCount: 4)).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        try handle.seek(toOffset: 24)
        try handle.write(contentsOf: withUnsafeBytes(of: (counter &+ 1).bigEndian) { Data($0) })
        try handle.close()
    }

    /// A writer commits while the main file is copied, in the same tick of the file system's
    /// clock (its size and modification time unchanged): the header's change counter tells, and
    /// the copy is taken again. (Before: the torn copy was kept — "database disk image is
    /// malformed", now and then, for a backup beside a busy writer in DELETE mode.)
    @Test func aCommitThatKeepsSizeAndTimeIsStillSeen() throws {
        let directory = try TemporaryDirectory()
        let store = try Self.busyStore(in: directory)
        let probe = try InputProbe(path: store)
        var attempts: [Int] = []
        let copy = try PrivateCopier.copy(probe: probe, parent: directory.path(".")) { attempt in
            attempts.append(attempt)
            guard attempt == 1 else { return }
            var info = stat()
            #expect(lstat(store, &info) == 0)
            // The commit: page 1's change counter goes up by one, in place; then the time is put back.
            try Self.bumpChangeCounter(of: store)
            var times = [info.st_atim, info.st_mtim]
            #expect(utimensat(AT_FDCWD, store, &times, 0) == 0)
        }
        defer { copy.remove() }
        #expect(attempts == [1, 2], "the first copy is refused, the second kept")
        #expect(try Data(contentsOf: URL(fileURLWithPath: copy.path(PrivateCopier.storeName))) == Data(contentsOf: URL(fileURLWithPath: store)))
    }

    /// A store that changes during every copy (an app committing many times a second: `inspect`
    /// gave exit 75 in 27 of 30 runs beside a python writer) is copied once more through SQLite's
    /// locks, as one committed state; what the failed attempts copied (here a `-journal` that
    /// came and went) is not left beside that copy to be rolled back into it. Without the
    /// fallback (`backup`, which takes such a store through its locks itself), it is refused.
    @Test(arguments: [true, false])
    func aStoreThatKeepsChangingIsCopiedThroughItsLocks(throughLocks: Bool) throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2), (3)")
        }
        let journal = directory.path("s.sqlite-journal")
        let probe = try InputProbe(path: store)
        var attempts: [Int] = []
        let copying = {
            try PrivateCopier.copy(probe: probe, parent: directory.path("."), throughLocksWhenBusy: throughLocks) { attempt in
                attempts.append(attempt)
                try Self.bumpChangeCounter(of: store)
                // A transaction's journal, there for the next attempt to copy, then gone.
                if attempt == 1 {
                    var bytes = Data([0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7])
                    bytes.append(Data(repeating: 1, count: 4096))
                    try bytes.write(to: URL(fileURLWithPath: journal))
                } else if attempt == 3 {
                    try FileManager.default.removeItem(atPath: journal)
                }
            }
        }
        guard throughLocks else {
            let error = #expect(throws: StoreAccessError.self) { _ = try copying() }
            #expect(error == .changedWhileCopying(path: store))
            #expect(attempts == [1, 2, 3])
            #expect(!FileManager.default.fileExists(atPath: journal))
            return
        }
        let copy = try copying()
        defer { copy.remove() }
        #expect(attempts == [1, 2, 3])
        let names = try FileManager.default.contentsOfDirectory(atPath: copy.path)
        #expect(names == [PrivateCopier.storeName], "nothing of the failed attempts beside the copy: \(names)")
        let connection = try SQLiteConnection(path: copy.path(PrivateCopier.storeName), options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try connection.scalar("SELECT group_concat(a) FROM t") == .text("1,2,3"))
        #expect(try connection.scalar("PRAGMA integrity_check") == .text("ok"))
        // Nothing was created beside the store by reading it through its locks.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path(".")).filter { $0.hasPrefix("s.sqlite") }.sorted() == ["s.sqlite"])
    }

    /// A journal that appears while the copy is made (a transaction began writing the main
    /// file): the copy is taken again, the journal with it.
    @Test func aJournalThatAppearsDuringTheCopyIsTakenAgainWithIt() throws {
        let directory = try TemporaryDirectory()
        let store = try Self.busyStore(in: directory)
        let probe = try InputProbe(path: store)
        let journal = try Data(contentsOf: URL(fileURLWithPath: store + "-journal"))
        try FileManager.default.removeItem(atPath: store + "-journal")
        var attempts: [Int] = []
        let copy = try PrivateCopier.copy(probe: probe, parent: directory.path(".")) { attempt in
            attempts.append(attempt)
            if attempt == 1 { try journal.write(to: URL(fileURLWithPath: store + "-journal")) }
        }
        defer { copy.remove() }
        #expect(attempts == [1, 2])
        #expect(try Data(contentsOf: URL(fileURLWithPath: copy.path(PrivateCopier.storeName + "-journal"))) == journal)
    }
}
