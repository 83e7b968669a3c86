import Foundation
import Testing
@testable import StoreRescue

/// A store name that leaves no room for SQLite's `-journal` in the file system's name limit
/// (255 bytes: at most 247). `create`, `migrate` and `salvage` refused such a new store, but
/// `restore` wrote one, and `upgrade` of it then failed at the swap with exit 65 and the advice
/// for a damaged store, which failed the same way (review rv8 #7).
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct LongStoreNameTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")
    static let catalog = samples.appendingPathComponent("Journal/catalog.json").path

    /// A temporary folder, its name limit, and a backup of the Journal sample in `backups/`.
    struct Case {
        let temp: TemporaryDirectory
        let limit: Int
        let backup: String

        init() throws {
            temp = try TemporaryDirectory()
            limit = pathconf(temp.url.path, Int32(_PC_NAME_MAX))
            try #require(limit > 8, "the file system's name limit cannot be told")
            let store = temp.path("j.sqlite")
            try FileManager.default.copyItem(atPath: LongStoreNameTests.samples.appendingPathComponent("Journal/Journal.sqlite").path, toPath: store)
            let made = try CommandRunner.run(["backup", store, "--to", temp.path("backups"), "--json"])
            try #require(made.status == 0, "\(made.stdout) \(made.stderr)")
            backup = try #require(try made.json()["backup"] as? String)
        }

        /// A path in the folder whose name is `bytes` bytes long.
        func path(bytes: Int) -> String { temp.path(String(repeating: "e", count: bytes)) }
        /// The longest name a store may have: its `-journal` (8 bytes) still fits.
        var longest: Int { limit - "-journal".utf8.count }
    }

    static func error(_ result: CommandRunner.Result, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        try #require(try result.json()["error"] as? [String: Any], "\(result.stdout) \(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func restoreRefusesANameWithNoRoomForTheJournalAsCreateDoes() throws {
        let fixture = try Case()
        let target = fixture.path(bytes: fixture.longest + 1)
        let refused = try CommandRunner.run(["restore", fixture.backup, "--to", target, "--json"])
        #expect(refused.status == ExitStatus.cannotCreateOutput.rawValue, "\(refused.stdout) \(refused.stderr)")
        let error = try Self.error(refused)
        let bytes = fixture.longest + 1
        #expect(error["message"] as? String == "refusing to restore to \(target): its name is \(bytes) bytes, and with its -journal "
                + "(\(bytes + 8)) it is longer than the \(fixture.limit) this file system allows: SQLite could not write the restored store")
        // The hint `create` gives for the same name.
        #expect(error["hint"] as? String == "choose a file name of at most \(fixture.longest) bytes")
        let created = try CommandRunner.run(["create", "--catalog", Self.catalog, "--version", "V1", target, "--json"])
        #expect(try Self.error(created)["hint"] as? String == error["hint"] as? String)
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(BackupFixtures.fileNames(in: fixture.temp.url.path).sorted() == ["backups", "j.sqlite"])
        // With --force too, and the longest name that fits is restored.
        let forced = try CommandRunner.run(["restore", fixture.backup, "--to", target, "--force", "--json"])
        #expect(forced.status == ExitStatus.cannotCreateOutput.rawValue)
        let fits = try CommandRunner.run(["restore", fixture.backup, "--to", fixture.path(bytes: fixture.longest), "--json"])
        #expect(fits.status == 0, "\(fits.stdout) \(fits.stderr)")
    }

    /// A store that already has such a name (copied, renamed): read, it is a store like any
    /// other; `upgrade` and `adopt`, which write it in place, say what is wrong with it — its
    /// name — before anything, never that it is damaged.
    @Test(arguments: [["upgrade"], ["upgrade", "--on-failure", "clean"], ["adopt"]])
    func upgradeOfAStoreWithSuchANameSaysItIsTheName(command: [String]) throws {
        let fixture = try Case()
        let bytes = fixture.longest + 1
        let store = fixture.path(bytes: bytes)
        try FileManager.default.copyItem(atPath: fixture.temp.path("j.sqlite"), toPath: store)
        let before = try FileDigest.of(path: store)
        let result = try CommandRunner.run(command + [store, "--catalog", Self.catalog, "--backup-dir", fixture.temp.path("bk"), "--json"])
        #expect(result.status == ExitStatus.cannotCreateOutput.rawValue, "\(result.stdout) \(result.stderr)")
        let error = try Self.error(result)
        #expect(error["message"] as? String == "the name of \(store) is \(bytes) bytes, and with SQLite's -journal (\(bytes + 8)) "
                + "it is longer than the \(fixture.limit) this file system allows: SQLite cannot write the store where it is "
                + "(the store is not damaged); nothing was changed")
        #expect(error["hint"] as? String == "rename the store (with its -wal and -shm) to a name of at most \(fixture.longest) bytes, "
                + "and run the command on that name")
        #expect(try FileDigest.of(path: store) == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.temp.path("bk")), "nothing was backed up")
        // Text mode: the same, and no advice for a damaged store.
        let text = try CommandRunner.run(command + [store, "--catalog", Self.catalog, "--backup-dir", fixture.temp.path("bk")])
        #expect(text.status == ExitStatus.cannotCreateOutput.rawValue)
        #expect(text.stderr.contains("Try: rename the store"), "\(text.stderr)")
        #expect(!text.stderr.contains("damaged store") && !text.stderr.contains("--on-failure clean"), "\(text.stderr)")
        // Following the hint works.
        let renamed = fixture.path(bytes: fixture.longest)
        #expect(rename(store, renamed) == 0)
        let upgraded = try CommandRunner.run(command + [renamed, "--catalog", Self.catalog, "--backup-dir", fixture.temp.path("bk")])
        #expect([0, 4].contains(upgraded.status), "\(upgraded.stdout) \(upgraded.stderr)")
    }

    /// The reading commands read such a store (SQLite opens it read-only without a -journal).
    @Test func readingCommandsReadAStoreWithSuchAName() throws {
        let fixture = try Case()
        let store = fixture.path(bytes: fixture.longest + 1)
        try FileManager.default.copyItem(atPath: fixture.temp.path("j.sqlite"), toPath: store)
        for arguments in [["inspect", store, "--deep", "--counts"], ["match", store, "--catalog", Self.catalog],
                          ["backup", store, "--to", fixture.temp.path("b2")],
                          ["migrate", store, "--catalog", Self.catalog, "--out", fixture.temp.path("m.sqlite")],
                          ["salvage", store, "--out", fixture.temp.path("s.sqlite")]] {
            let result = try CommandRunner.run(arguments)
            #expect(result.status == 0, "\(arguments[0]): \(result.stdout) \(result.stderr)")
        }
    }
}
