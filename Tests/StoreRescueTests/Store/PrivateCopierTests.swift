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
        let store = directory.path("busy.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2)")
        }
        // A journal that holds data: a header with the magic and a page record's worth of bytes.
        var journal = Data([0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7])
        journal.append(Data(repeating: 1, count: 4096))
        try journal.write(to: URL(fileURLWithPath: store + "-journal"))
        let probe = try InputProbe(path: store)
        #expect(probe.files.sidecars.contains { $0.suffix == "-journal" })
        try FileManager.default.removeItem(atPath: store + "-journal")
        let copy = try PrivateCopier.copy(probe: probe, followsSymlinks: false, parent: directory.path("."))
        defer { copy.remove() }
        #expect(FileManager.default.fileExists(atPath: copy.path(PrivateCopier.storeName)))
        #expect(!FileManager.default.fileExists(atPath: copy.path(PrivateCopier.storeName + "-journal")))
        let rows = try SQLiteConnection(path: copy.path(PrivateCopier.storeName), options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT count(*) FROM t")
        #expect(rows == .integer(2))
    }
}
