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
