import Foundation
import Testing
@testable import StoreRescue

/// A manifest `--keep` cannot read, named as a backup of the store being backed up (review
/// rv10: `{bad` in `default.store.20000101T000000Z.manifest.json`): its files are kept, as
/// before, and now said so — a `retentionNotes` entry naming the file and why, and a `Warning:`
/// line — as JSON-OUTPUT.md promised. Until then `retentionNotes` was `[]` and nothing was said.
@Suite struct RetentionUnreadableManifestTests {
    @Test func anUnreadableManifestOfTheStoreIsKeptAndNoted() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20)
        let folder = temp.path("b")
        _ = try BackupRetentionTests.takeBackups(of: store, into: folder, reasons: ["manual"])
        let bad = folder + "/s.sqlite.20000101T000000Z.manifest.json"
        try Data("{bad".utf8).write(to: URL(fileURLWithPath: bad))
        FileManager.default.createFile(atPath: folder + "/s.sqlite.20000101T000000Z.gz", contents: Data())
        // Another store's name, or another tool's file: not a candidate, nothing to say.
        try Data("{bad".utf8).write(to: URL(fileURLWithPath: folder + "/other.sqlite.20000101T000000Z.manifest.json"))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: folder + "/notes.manifest.json"))
        // A store whose name begins with this one's (`s.sqlite.bak`) is another store (review
        // rv11: a prefix match took its unreadable manifest for one of `s.sqlite`'s).
        try Data("{bad".utf8).write(to: URL(fileURLWithPath: folder + "/s.sqlite.bak.20000101T000000Z.manifest.json"))
        try Data("{bad".utf8).write(to: URL(fileURLWithPath: folder + "/s.sqlite.manifest.json"))
        // A second backup of the same second is `-1`: still this store's.
        let second = folder + "/s.sqlite.20000101T000000Z-1.manifest.json"
        try Data("{bad".utf8).write(to: URL(fileURLWithPath: second))

        let result = try BackupRunner.run(store: store, options: .testing(folder, keep: 1, at: BackupRetentionTests.day(9)))
        #expect(result.prunedBackups.count == 1)
        // Sorted: `-1.manifest` before `.manifest`.
        #expect(result.retentionNotes.sorted() == [
            "cannot read \(second) to weigh its backup for removal: it is not valid JSON; it and its backup were kept (repair or remove them by hand)",
            "cannot read \(bad) to weigh its backup for removal: it is not valid JSON; it and its backup were kept (repair or remove them by hand)",
        ], "\(result.retentionNotes)")
        #expect(FileManager.default.fileExists(atPath: bad))
        #expect(FileManager.default.fileExists(atPath: folder + "/s.sqlite.20000101T000000Z.gz"))
    }

    @Test(.enabled(if: StoreRescueExecutable.hasBackupCommands, "storerescue does not register backup yet"))
    func theCommandWarnsAndListsItInJSON() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("default.store")
        try BackupFixtures.makeStore(at: store, rows: 20)
        let folder = temp.path("BK")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let bad = folder + "/default.store.20000101T000000Z.manifest.json"
        try Data("{bad\n".utf8).write(to: URL(fileURLWithPath: bad))
        FileManager.default.createFile(atPath: folder + "/default.store.20000101T000000Z.gz", contents: Data())

        let json = try BackupCommandEndToEndTests.storerescue(["backup", store, "--to", folder, "--keep", "1", "--json"])
        #expect(json.status == 0, "\(json.standardError)")
        let notes = try #require(try BackupCommandEndToEndTests.json(json.standardOutput)["retentionNotes"] as? [String])
        #expect(notes.count == 1 && notes[0].hasPrefix("cannot read \(bad) to weigh its backup for removal: it is not valid JSON"), "\(notes)")
        #expect(json.standardError.contains("Warning: cannot read \(bad) to weigh its backup for removal"), "\(json.standardError)")

        let text = try BackupCommandEndToEndTests.storerescue(["backup", store, "--to", folder, "--keep", "1"])
        #expect(text.status == 0)
        #expect(text.standardError.contains("Warning: cannot read \(bad)"), "\(text.standardError)")
        #expect(FileManager.default.fileExists(atPath: bad))
    }
}
