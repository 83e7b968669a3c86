import Foundation
import Testing
@testable import StoreRescue

/// Names compared byte for byte, as the file system and SQLite compare them (`String+Bytes`):
/// review rv7's findings, each failing before its fix.
@Suite struct ByteLevelNameTests {
    /// its pre-upgrade one (the way back from a failed upgrade).
    @Test func keepNeverPrunesAnotherStoresBackupsWhoseNameIsCanonicallyEquivalent() throws {
        let temp = try TemporaryDirectory()
        let nfc = temp.path("Caf\u{E9}.sqlite")
        let nfd = temp.path("Cafe\u{301}.sqlite")
        #expect(Array(nfc.utf8) != Array(nfd.utf8))
        try BackupFixtures.makeStore(at: nfc, rows: 20)
        try BackupFixtures.makeStore(at: nfd, rows: 20)
        let folder = temp.path("b")
        let other = try BackupRunner.run(store: nfd, options: .testing(folder, reason: "pre-upgrade", at: BackupRetentionTests.day(1)))
        _ = try BackupRunner.run(store: nfc, options: .testing(folder, reason: "pre-upgrade", at: BackupRetentionTests.day(2)))
        let last = try BackupRunner.run(store: nfc, options: .testing(folder, keep: 1, at: BackupRetentionTests.day(3)))
        #expect(!last.prunedBackups.contains(other.backupPath), "pruned another store's backup: \(last.prunedBackups)")
        #expect(FileManager.default.fileExists(atPath: other.backupPath))
    }

    /// store vanished on `sqlite3 s\u{600} 'SELECT …'`).
    @Test func aNewStoreIsNeverTheWALOfAStoreWhoseNameEndsInAPrependCharacter() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s\u{600}")
        #expect(FileManager.default.createFile(atPath: store, contents: Data("x".utf8)))
        #expect(CreationTarget.storeWhoseSidecar(store + "-wal") == store)
        #expect(throws: (any Error).self) { try CreationTarget(path: store + "-wal") }
    }

    /// combining mark is not one to Swift, though the file system splits there.
    @Test func theFolderOfAPathIsWhereTheFileSystemPutsIt() {
        #expect(CreationTarget.folder(of: "a/b/\u{301}x") == "a/b")
    }

    /// stop (exit 3) with "object name reserved for internal use", blaming the catalog's step.
    @Test func aTableWhoseNameSQLiteReservesIsInternal() {
        #expect(PhysicalSchema.category(ofTable: "sqlite_\u{301}x") == .sqliteInternal)
    }

    /// A table is found by name as SQLite finds it: ASCII letters without case, every other
    /// byte as it is (review rv9: `caseInsensitiveCompare` took an app's `ZPOſT`, made first,
    /// for Core Data's `ZPOST`), and a name that only Swift's `uppercased()` folds to a
    /// bookkeeping table's is another table.
    @Test func aTableIsFoundByNameAsSQLiteFindsIt() throws {
        let temp = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: temp.path("s.sqlite"), options: SQLiteOpenOptions(mode: .create))
        try connection.execute("CREATE TABLE \"ZPO\u{17F}T\" (app); CREATE TABLE ZPOST (Z_PK INTEGER PRIMARY KEY, ZTITLE)")
        let schema = try PhysicalSchema.read(from: connection)
        #expect(schema.table(named: "ZPOST")?.columns.map(\.name) == ["Z_PK", "ZTITLE"])
        #expect(schema.table(named: "zpost")?.name == "ZPOST")
        #expect(schema.table(named: "ZPO\u{17F}T")?.columns.map(\.name) == ["app"])
        #expect(PhysicalSchema.category(ofTable: "Z_PR\u{131}MARYKEY") == .other)
        #expect(PhysicalSchema.category(ofTable: "z_primarykey") == .bookkeeping)
    }

}
