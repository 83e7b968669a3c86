import Foundation
import Testing
@testable import StoreRescue

/// Nothing a file holds or is named reaches the terminal raw: control characters from file
/// names and from names inside models are escaped in text output, and runaway values are cut.
@Suite struct TerminalSafetyTests {
    static let clearScreen = "\u{1B}[2J"

    @Test func controlCharactersAreEscapedAndLineBreaksKeptOnlyInReports() {
        #expect(TerminalText.sanitized("a\u{1B}[2Jb\u{7}\u{9B}c\u{202E}d", keepingLineBreaks: false)
                == "a\\u{1B}[2Jb\\u{7}\\u{9B}c\\u{202E}d")
        #expect(TerminalText.sanitized("one\ntwo\tthree\r", keepingLineBreaks: true) == "one\ntwo\\u{9}three\\u{D}")
        #expect(TerminalText.sanitized("one\ntwo", keepingLineBreaks: false) == "one\\u{A}two")
        #expect(TerminalText.sanitized("Zürich 总计 ✓", keepingLineBreaks: false) == "Zürich 总计 ✓")
    }

    /// Review rv10: a report keeps its own line breaks, so a line feed inside a value used to
    /// start a line of its own. Every line, field, heading and cell a report writes is one line.
    @Test func aValueIsOneLineWhereverAReportPutsIt() {
        #expect(TerminalText.oneLine("new\nline\t\r.sqlite") == "new\\u{A}line\\u{9}\\u{D}.sqlite")
        #expect(TerminalText.oneLine("Zürich 总计 ✓") == "Zürich 总计 ✓")
        #expect("Backed up \(oneLine: "a\nb"): done" == "Backed up a\\u{A}b: done")
        var writer = TextTableWriter()
        writer.line("x\ny")
        writer.section("Differences from V1\nFindings")
        writer.field("Catalog", "App\n  info  all-clear")
        writer.table([["  ZZ\n\nFindings\n", "entity"], ["  Z\tX", "other"]])
        let lines = writer.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines == ["x\\u{A}y", "", "Differences from V1\\u{A}Findings", "  Catalog         App\\u{A}  info  all-clear",
                          "  ZZ\\u{A}\\u{A}Findings\\u{A}  entity", "  Z\\u{9}X                    other", ""])
    }

    @Test func longValuesKeepTheirEndsAndSayWhatWasLeftOut() {
        let digits = String(repeating: "7", count: 1_000_000)
        let capped = TerminalText.capped("formatVersion: \(digits) is newer")
        #expect(capped.count < 700)
        #expect(capped.hasPrefix("formatVersion: 777"))
        #expect(capped.hasSuffix("777 is newer"))
        #expect(capped.contains("…[999488 characters left out]…"))
        let path = "/" + String(repeating: "folder/", count: 40) + "store.sqlite"
        #expect(TerminalText.capped("cannot read \(path)") == "cannot read \(path)", "a long but ordinary path is kept")
        let words = Array(repeating: "word", count: 5000).joined(separator: " ")
        #expect(TerminalText.capped(words).hasSuffix("…[20903 more characters]"))
    }

    @Test func errorSummariesAreCappedForTextAndJSON() {
        let summary = ErrorSummary(message: "x: " + String(repeating: "9", count: 100_000), hint: "try " + String(repeating: "h", count: 10_000), exitStatus: 65)
        #expect(summary.message.count < 700)
        #expect((summary.hint?.count ?? 0) < 700)
    }

    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func fileNamesWithEscapesDoNotReachTheTerminal() throws {
        let dir = try TemporaryDirectory()
        let name = dir.path("evil\(Self.clearScreen)\u{7}.sqlite")
        #expect(FileManager.default.createFile(atPath: name, contents: Data()))
        for command in [["inspect", name], ["backup", name, "--to", dir.path("b")], ["verify", name], ["catalog", "show", name]] {
            let result = try CommandRunner.run(command, timeout: 30)
            #expect(result.status != 0 && result.status != 70, "\(command[0]): \(result.status)")
            #expect(!result.stderr.contains("\u{1B}") && !result.stderr.contains("\u{7}"), "\(command[0]) printed a raw control character")
            #expect(result.stderr.contains("evil\\u{1B}[2J\\u{7}.sqlite"), "\(command[0]): \(result.stderr)")
            // An error is two lines (Error:, Try:); verify's FAILED report lists each problem on its own line.
            #expect(command[0] == "verify" || result.stderr.split(separator: "\n").count <= 2)
        }
    }

    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func entityNamesFromAModelAreEscapedInReports() throws {
        let dir = try TemporaryDirectory()
        let catalog = dir.path("catalog.json")
        let json = """
            {"formatVersion": 1, "app": "Evil\\u001b[2J", "versions": [{"name": "V1\\u0007", "entities": [
              {"name": "Item\\u001b]0;pwned\\u0007", "attributes": [{"name": "title", "type": "String"}]}]}]}
            """
        try Data(json.utf8).write(to: URL(fileURLWithPath: catalog))
        let result = try CommandRunner.run(["catalog", "show", catalog], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("\u{1B}") && !result.stdout.contains("\u{7}"))
        #expect(result.stdout.contains("Item\\u{1B}]0;pwned\\u{7}"))
        let asJSON = try CommandRunner.run(["catalog", "show", "--json", catalog], timeout: 30)
        #expect(!asJSON.stdout.contains("\u{1B}"), "JSON escapes control characters itself")
        #expect((try asJSON.json()["app"] as? String) == "Evil\u{1B}[2J", "JSON keeps the value exact")
    }

    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func aMillionDigitFormatVersionGivesAShortMessage() throws {
        let dir = try TemporaryDirectory()
        let catalog = dir.path("catalog.json")
        let digits = String(repeating: "9", count: 1_000_000)
        try Data("{\"formatVersion\": \(digits), \"app\": \"A\", \"versions\": []}".utf8).write(to: URL(fileURLWithPath: catalog))
        let text = try CommandRunner.run(["catalog", "show", catalog], timeout: 60)
        #expect(text.status == 65)
        #expect(text.stdout.utf8.count + text.stderr.utf8.count < 2000, "\(text.stdout.utf8.count + text.stderr.utf8.count) bytes printed")
        #expect((text.stdout + text.stderr).contains("characters left out"))
        let json = try CommandRunner.run(["catalog", "show", "--json", catalog], timeout: 60)
        #expect(json.status == 65)
        #expect(json.stdout.utf8.count < 3000)
        let error = try #require(try json.json()["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("characters left out") == true)
    }

    /// Found by the campaign: a model-cache entity named with a million characters padded every
    /// row of inspect's tables to its width (35 s, 300 MB, killed). Cells are capped first.
    @Test func aHugeCellDoesNotWidenEveryRowOfATable() {
        var writer = TextTableWriter()
        writer.table([[String(repeating: "N", count: 1_000_000), "hash"]] + (0..<100).map { ["E\($0)", "hash"] })
        #expect(writer.text.count < 101 * 600, "at most a capped width per row, not a million")
        #expect(writer.text.contains("characters left out"))
        #expect(writer.text.contains("E99  "), "ordinary rows are still aligned")
    }

    /// Review rv10: a table named `ZZ⏎⏎Findings⏎  info  all-clear  …⏎` made `inspect` print a
    /// Findings block of the table's making. The name is now one line of the Tables section.
    @Test(.enabled(if: CommandRunner.isAvailable, "the storerescue executable is not built"))
    func aTableNameCannotForgeAFindingsBlock() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("forge.sqlite")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Damaged/Notes.sqlite"), toPath: store)
        do {
            let writer = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try writer.execute("CREATE TABLE \"ZZ\n\nFindings\n  info  all-clear  verified healthy by storerescue\n\" (x)")
        }
        let result = try CommandRunner.run(["inspect", store], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0 == "Findings" }.count == 1, "one Findings heading, the tool's own: \(result.stdout)")
        #expect(!lines.contains { $0.contains("all-clear") && !$0.hasPrefix("  ZZ") }, "\(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("  ZZ\\u{A}\\u{A}Findings\\u{A}  info  all-clear  verified healthy by storerescue\\u{A}") })
    }

    /// Review rv10: a store named with a line feed was printed over two lines by `inspect`,
    /// `match`, `backup` (and its `--to`), `verify`'s `OK:` line and `catalog learn`, a version
    /// learned with `--name` holding one by `catalog show`.
    @Test(.enabled(if: CommandRunner.isAvailable && Samples.available, "needs the built executable and ../shared/samples"))
    func aLineFeedInANameStaysOnItsLine() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("new\nline.sqlite")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Journal/Journal.sqlite"), toPath: store)
        let backups = dir.path("b\nk")
        let learned = dir.path("learned.json")
        // A store with a model cache, to learn from (the Journal sample has none).
        let reference = try dir.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite", as: "sync\nmeta.sqlite")
        var runs: [(String, CommandRunner.Result)] = [
            ("inspect", try CommandRunner.run(["inspect", "--counts", store], timeout: 60)),
            ("match", try CommandRunner.run(["match", store, "--catalog", CatalogTestSupport.projectSample("Journal/catalog.json")], timeout: 60)),
            ("backup", try CommandRunner.run(["backup", store, "--to", backups], timeout: 60)),
            ("learn", try CommandRunner.run(["catalog", "learn", reference, "--catalog", learned, "--name", "bad\nname", "--app", "Journal"], timeout: 60)),
        ]
        let gz = try #require(try FileManager.default.contentsOfDirectory(atPath: backups).first { $0.hasSuffix(".gz") })
        runs.append(("verify", try CommandRunner.run(["verify", backups + "/" + gz], timeout: 60)))
        runs.append(("catalog show", try CommandRunner.run(["catalog", "show", learned], timeout: 60)))
        for (command, result) in runs {
            #expect(result.status == 0, "\(command): \(result.status) \(result.stderr)")
            let lines = (result.stdout + result.stderr).split(separator: "\n")
            #expect(!lines.contains { $0.hasPrefix("line.sqlite") || $0.hasPrefix("k/") || $0.hasPrefix("name") || $0.hasPrefix("meta.sqlite") },
                    "\(command) broke a name over two lines: \(result.stdout)")
            #expect(["learn", "catalog show"].contains(command) || result.stdout.contains("new\\u{A}line.sqlite"), "\(command): \(result.stdout)")
        }
        #expect(runs[2].1.stdout.contains("b\\u{A}k/new\\u{A}line.sqlite"))
        #expect(runs[3].1.stdout.contains("\"bad\\u{A}name\""))
        #expect(runs[5].1.stdout.contains("bad\\u{A}name"))
    }
}
