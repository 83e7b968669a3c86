import Foundation
import Testing
@testable import StoreRescue

/// A folder the tool makes files in for SQLite (a backup's snapshot in `--to` or `--backup-dir`,
/// `verify`'s and `inspect`'s scratch copies in `$TMPDIR` or `--temp-dir`, `restore`'s staging
/// file beside `--to`) whose path, with the tool's own names in it, is past what SQLite opens
/// (512 bytes with the `-journal` it adds: 504). Until review rv10 (#2) SQLite's "unable to
/// open database file" was read as the store's fault (66, "run as a user that can read the
/// file"), a full disk (74), a good backup failing its check (`verify`: FAILED, exit 1;
/// `restore`: "failed verification", then restored unchecked with `--as-backed-up`). Now each
/// is refused up front, 73, naming the folder and the option or variable that chose it, and
/// nothing is left behind.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct SQLitePathLimitTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")
    static let journal = samples.appendingPathComponent("Journal/Journal.sqlite").path
    static let catalog = samples.appendingPathComponent("Journal/catalog.json").path
    static let limitHint = "(SQLite opens paths up to 512 bytes)"

    /// A folder inside `temp` whose full path is `length` bytes (well under `PATH_MAX`), created.
    static func longFolder(in temp: TemporaryDirectory, length: Int = 470) throws -> String {
        var folder = temp.url.path
        while folder.utf8.count < length {
            let room = length - folder.utf8.count - 1
            folder += "/" + String(repeating: "L", count: min(200, max(1, room)))
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(folder.utf8.count == length)
        return folder
    }

    /// Everything under `folder`, to show nothing was left there.
    static func contents(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder)
    }

    /// The `error` object of a `--json` run that failed with 73.
    static func refusal(_ result: CommandRunner.Result, sourceLocation: SourceLocation = #_sourceLocation) throws -> (message: String, hint: String) {
        #expect(result.status == ExitStatus.cannotCreateOutput.rawValue, "\(result.stdout) \(result.stderr)", sourceLocation: sourceLocation)
        let error = try #require(try result.json()["error"] as? [String: Any], "\(result.stdout) \(result.stderr)", sourceLocation: sourceLocation)
        return (try #require(error["message"] as? String, sourceLocation: sourceLocation),
                try #require(error["hint"] as? String, sourceLocation: sourceLocation))
    }

    static func environment(tmpdir: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = tmpdir
        return environment
    }

    /// A good backup of the Journal sample, made in `temp/backups`.
    static func goodBackup(in temp: TemporaryDirectory) throws -> String {
        let store = temp.path("j.sqlite")
        try FileManager.default.copyItem(atPath: journal, toPath: store)
        let made = try CommandRunner.run(["backup", store, "--to", temp.path("backups"), "--json"])
        try #require(made.status == 0, "\(made.stdout) \(made.stderr)")
        return try #require(try made.json()["backup"] as? String)
    }

    /// (a), (b): a store at rest without a `-wal` was 74 "check free space"; one with a `-wal`
    /// (read through a copy in the backup folder) 66 "SQLite cannot read it".
    @Test(.enabled(if: Samples.available, "needs the shared samples"),
          arguments: ["Journal", "stores/swiftdata_ResourcesManager_wal/default.store"])
    func backupIntoALongFolderIsRefusedNamingTo(store sample: String) throws {
        let temp = try TemporaryDirectory()
        let store: String
        if sample == "Journal" {
            store = temp.path("Journal.sqlite")
            try FileManager.default.copyItem(atPath: Self.journal, toPath: store)
        } else {
            store = try temp.copySample(sample)
        }
        let folder = try Self.longFolder(in: temp)
        let refused = try Self.refusal(CommandRunner.run(["backup", store, "--to", folder, "--json"]))
        // (The file's path is longer than an echoed value may be: its middle is left out.)
        #expect(refused.message.hasPrefix("cannot use the backup folder \(folder) (chosen by --to): the file SQLite must open there, "), "\(refused.message)")
        #expect(refused.message.contains("/.snapshot.storerescue-tmp-"))
        #expect(refused.message.contains("longer than the 512 bytes SQLite opens"))
        #expect(refused.hint == "choose a backup folder whose path is shorter with --to \(Self.limitHint)")
        #expect(try Self.contents(folder).isEmpty)
        // A shorter folder works.
        let made = try CommandRunner.run(["backup", store, "--to", temp.path("short"), "--json"])
        #expect(made.status == 0, "\(made.stdout) \(made.stderr)")
    }

    /// A relative `--to` counts from the current folder: its full path decides.
    @Test func aRelativeFolderUnderALongCurrentFolderIsRefused() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("j.sqlite")
        try FileManager.default.copyItem(atPath: Self.journal, toPath: store)
        let folder = try Self.longFolder(in: temp)
        let result = try CommandRunner.run(
            program: "/bin/sh", ["-c", "cd \"$1\" && exec \"$0\" backup \"$2\" --to sub --json", CommandRunner.executable.path, folder, store])
        let refused = try Self.refusal(result)
        #expect(refused.message.hasPrefix("cannot use the backup folder \(folder)/sub (chosen by --to)"), "\(refused.message)")
        #expect(try Self.contents(folder + "/sub").isEmpty)
    }

    /// (c): a good backup was FAILED, exit 1, "fails PRAGMA integrity_check: SQLite error 14".
    @Test func verifyWithALongTemporaryFolderIsRefusedNotFailed() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.goodBackup(in: temp)
        let folder = try Self.longFolder(in: temp)
        let result = try CommandRunner.run(["verify", backup, "--json"], environment: Self.environment(tmpdir: folder))
        let refused = try Self.refusal(result)
        #expect(refused.message.hasPrefix("cannot use the temporary folder \(folder) (chosen by TMPDIR)"), "\(refused.message)")
        #expect(refused.hint == "set TMPDIR to a folder whose path is shorter \(Self.limitHint)")
        #expect(try Self.contents(folder).isEmpty)
        let text = try CommandRunner.run(["verify", backup], environment: Self.environment(tmpdir: folder))
        #expect(text.status == 73)
        #expect(!text.stdout.contains("FAILED") && !text.stderr.contains("FAILED"), "\(text.stdout) \(text.stderr)")

        let given = try Self.refusal(CommandRunner.run(["verify", backup, "--temp-dir", folder, "--json"]))
        #expect(given.message.hasPrefix("cannot use the temporary folder \(folder) (chosen by --temp-dir)"), "\(given.message)")
        #expect(given.hint == "choose a temporary folder whose path is shorter with --temp-dir \(Self.limitHint)")
        #expect(try Self.contents(folder).isEmpty)
        // The same backup verifies from a shorter folder.
        try FileManager.default.createDirectory(atPath: temp.path("short-tmp"), withIntermediateDirectories: false)
        #expect(try CommandRunner.run(["verify", backup, "--temp-dir", temp.path("short-tmp")]).status == 0)
    }

    /// (c): "failed verification, nothing was replaced", advising `--as-backed-up`, which then
    /// restored the file with its check never run (exit 0).
    @Test(arguments: [false, true])
    func restoreBesideALongTargetIsRefusedNotFailedVerification(asBackedUp: Bool) throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.goodBackup(in: temp)
        let folder = try Self.longFolder(in: temp)
        let target = folder + "/s.sqlite"
        let refused = try Self.refusal(CommandRunner.run(["restore", backup, "--to", target, "--json"] + (asBackedUp ? ["--as-backed-up"] : [])))
        #expect(refused.message.hasPrefix("cannot use the target folder \(folder) (chosen by --to)"), "\(refused.message)")
        #expect(!refused.message.contains("verification"))
        #expect(refused.hint == "choose a target folder whose path is shorter with --to \(Self.limitHint)")
        #expect(try Self.contents(folder).isEmpty)
    }

    /// `restore --force` whose `--backups-dir` leaves its pre-restore backup past SQLite's
    /// limit is refused before the backup is decompressed (review rv11: it decompressed and
    /// verified a full-size temporary beside the store first). A damaged backup shows the
    /// order: refused for the folder (73), not failed verification (1).
    @Test func restoreForceWithALongBackupsFolderIsRefusedBeforeDecompressing() throws {
        let temp = try TemporaryDirectory()
        let backup = try Self.goodBackup(in: temp)
        // The backup's bytes damaged past the gzip header: verification would fail (exit 1).
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: backup))
        try handle.seek(toOffset: 200)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 64))
        try handle.close()
        let target = temp.path("app/s.sqlite")
        try FileManager.default.createDirectory(atPath: temp.path("app"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.journal, toPath: target)
        let before = try Data(contentsOf: URL(fileURLWithPath: target))
        let folder = try Self.longFolder(in: temp)
        let refused = try Self.refusal(CommandRunner.run(["restore", backup, "--to", target, "--force", "--backups-dir", folder, "--json"]))
        #expect(refused.message.contains("(chosen by --backups-dir)"), "\(refused.message)")
        #expect(try Self.contents(folder).isEmpty)
        #expect(try Self.contents(temp.path("app")) == ["s.sqlite"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == before)
    }

    /// `create` and `salvage` into a folder whose path leaves their private file past SQLite's
    /// limit said "check free space" (74): refused, 73, naming the new store's folder.
    @Test(arguments: ["create", "salvage"])
    func aNewStoreInALongFolderIsRefusedNotAFullDisk(command: String) throws {
        let temp = try TemporaryDirectory()
        let folder = try Self.longFolder(in: temp)
        let out = folder + "/new.sqlite"
        let arguments = command == "create"
            ? ["create", "--catalog", Self.catalog, "--version", "V1", out, "--json"]
            : ["salvage", Self.journal, "--out", out, "--json"]
        let refused = try Self.refusal(CommandRunner.run(arguments))
        #expect(refused.message.hasPrefix("cannot use the new store's folder \(folder) (chosen by the new store's path)"), "\(refused.message)")
        #expect(refused.hint == "set the new store's path to a folder whose path is shorter \(Self.limitHint)", "\(refused.hint)")
        #expect(try Self.contents(folder).isEmpty)
    }

    /// (d): `adopt`/`upgrade --backup-dir` on a long folder was 74 "check free space".
    @Test(arguments: ["adopt", "upgrade"])
    func adoptAndUpgradeRefuseALongBackupDirectory(command: String) throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("j.sqlite")
        try FileManager.default.copyItem(atPath: Self.journal, toPath: store)
        let before = try FileDigest.of(path: store)
        let folder = try Self.longFolder(in: temp)
        let refused = try Self.refusal(CommandRunner.run([command, store, "--catalog", Self.catalog, "--backup-dir", folder, "--json"]))
        #expect(refused.message.contains("cannot use the backup folder \(folder) (chosen by --backup-dir)"), "\(refused.message)")
        #expect(refused.hint == "choose a backup folder whose path is shorter with --backup-dir \(Self.limitHint)")
        #expect(try Self.contents(folder).isEmpty)
        #expect(try FileDigest.of(path: store) == before)
    }

    /// (e): a store with a `-wal`, read through a copy in `$TMPDIR`, was "unreadable", exit 66,
    /// "run as a user that can read the file" (`match` reads it the same way).
    @Test(.enabled(if: Samples.available, "needs the shared samples"), arguments: ["inspect", "match"])
    func readingWithALongTemporaryFolderNamesTMPDIR(command: String) throws {
        let temp = try TemporaryDirectory()
        let store = try temp.copySample("stores/swiftdata_ResourcesManager_wal/default.store")
        let folder = try Self.longFolder(in: temp)
        let arguments = [command, store, "--json"] + (command == "match" ? ["--catalog", Self.catalog] : [])
        let refused = try Self.refusal(CommandRunner.run(arguments, environment: Self.environment(tmpdir: folder)))
        #expect(refused.message.hasPrefix("cannot use the temporary folder \(folder) (chosen by TMPDIR)"), "\(refused.message)")
        #expect(refused.hint == "set TMPDIR to a folder whose path is shorter \(Self.limitHint)")
        #expect(try Self.contents(folder).isEmpty)
    }

    /// An input store of 505 to 511 bytes: SQLite refuses it too (its `-journal`'s name must fit
    /// in 512), but the hint said "run as a user that can read the file".
    @Test func anInputJustUnder512BytesIsExplained() throws {
        let temp = try TemporaryDirectory()
        let folder = try Self.longFolder(in: temp, length: 480)
        let store = folder + "/" + String(repeating: "s", count: 507 - folder.utf8.count - 1)
        #expect(store.utf8.count == 507)
        try FileManager.default.copyItem(atPath: Self.journal, toPath: store)
        let result = try CommandRunner.run(["inspect", store])
        #expect(result.status == 66)
        #expect(result.stderr.contains("longer than the 512 bytes SQLite opens"), "\(result.stderr)")
    }
}
