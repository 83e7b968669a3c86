import Foundation
import Testing

/// A file name that begins with `-` (review rv10 #1): no command has a short option but `-h`, so
/// argument-parser read `-hourly.store` as `-h -o -u …` and printed the help, exiting 0 — a cron
/// job's `backup -hourly.store` "succeeded" without a backup, and `--json` printed an error
/// object with `exitStatus` 0. Such a word is now refused (64) with the way to give the name;
/// `./-hourly.store` and `-- -hourly.store` back it up.
@Suite(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
struct DashOperandTests {
    private func store(in dir: TemporaryDirectory) throws -> String {
        let path = dir.path("-hourly.store")
        try FileManager.default.copyItem(atPath: UsageErrorJSONTests.journal, toPath: path)
        return path
    }

    private func shell(_ script: String, in dir: TemporaryDirectory) throws -> CommandRunner.Result {
        let words: [String] = ["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", dir.url.path, CommandRunner.executable.path]
        return try CommandRunner.run(program: "/bin/sh", words + script.split(separator: " ").map { String($0) })
    }

    private func backups(_ dir: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path("out"))) ?? []).filter { $0.hasSuffix(".gz") }
    }

    @Test func aDashNameIsRefusedNotTakenForHelp() throws {
        let dir = try TemporaryDirectory()
        _ = try store(in: dir)
        let text = try shell("backup -hourly.store --to out", in: dir)
        #expect(text.status == 64, "\(text.status) \(text.stdout.prefix(200)) \(text.stderr)")
        #expect(text.stdout.isEmpty, "no help on stdout: \(text.stdout.prefix(200))")
        #expect(text.stderr.contains("Error: '-hourly.store' is not an option") && text.stderr.contains("Try: give a file name that begins with '-' as ./-hourly.store"), "\(text.stderr)")
        #expect(backups(dir).isEmpty)

        let json = try shell("verify -h.gz --json", in: dir)
        #expect(json.status == 64, "\(json.status) \(json.stderr)")
        let error = try #require(try json.json()["error"] as? [String: Any], "\(json.stdout)")
        #expect(error["exitStatus"] as? Int == 64)
        #expect((error["message"] as? String)?.contains("'-h.gz' is not an option") == true, "\(error)")
    }

    @Test func aDashNameGivenAsAPathOrAfterTheTerminatorIsBackedUp() throws {
        let dir = try TemporaryDirectory()
        _ = try store(in: dir)
        let dotted = try shell("backup ./-hourly.store --to out", in: dir)
        #expect(dotted.status == 0, "\(dotted.status) \(dotted.stderr)")
        #expect(backups(dir).count == 1, "\(backups(dir))")
        let terminated = try shell("backup --to out -- -hourly.store", in: dir)
        #expect(terminated.status == 0, "\(terminated.status) \(terminated.stderr)")
        #expect(backups(dir).count == 2, "\(backups(dir))")
    }

    /// An option's value that begins with '-' goes as `--reason=-nightly`: the hint says so
    /// when the word follows an option (review rv11: it offered only `./-nightly`).
    @Test func aDashValueAfterAnOptionGetsTheEqualsForm() throws {
        let dir = try TemporaryDirectory()
        _ = try store(in: dir)
        let refused = try shell("backup ./-hourly.store --to out --reason -nightly", in: dir)
        #expect(refused.status == 64 && refused.stderr.contains("Try: if it is the value of --reason, write --reason=-nightly;"), "\(refused.stderr)")
        #expect(backups(dir).isEmpty)
        let given = try shell("backup ./-hourly.store --to out --reason=-nightly", in: dir)
        #expect(given.status == 0 && backups(dir).count == 1, "\(given.stderr)")
    }

    @Test func helpAfterAnOperandIsHelpEvenWithJSON() throws {
        let help = try CommandRunner.run(["backup", "x", "--help", "--json"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE:") && (try? help.json()) == nil, "help, not JSON: \(help.stdout.prefix(200))")
        // `-h` itself and `-help` are still help; a number is a value, not a word to refuse.
        #expect(try CommandRunner.run(["inspect", "-h"]).status == 0)
        #expect(try CommandRunner.run(["inspect", "-help"]).status == 0)
        let dir = try TemporaryDirectory()
        let negative = try CommandRunner.run(["backup", UsageErrorJSONTests.journal, "--to", dir.path("out"), "--keep", "-30"])
        #expect(negative.status == 64 && !negative.stderr.contains("is not an option of storerescue"), "\(negative.stderr)")
    }
}
