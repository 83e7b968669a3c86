import Foundation
import Testing
@testable import StoreRescue

/// `inspect` of a store with a `-wal` (read through a private copy in `$TMPDIR`) with TMPDIR set
/// to a folder that does not exist (review rv10): exit 74 as before, but the report no longer
/// calls the store `unreadable` — `kind` is `notRead`, and the message and hint name TMPDIR and
/// its value, where the fault is.
@Suite struct InspectTemporaryFolderTests {
    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func aMissingTMPDIRIsNamedAndTheStoreIsNotCalledUnreadable() throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        let missing = directory.path("no-such-folder")
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = missing
        let json = try CommandRunner.run(["inspect", "--json", store], environment: environment)
        #expect(json.status == 74, "\(json.stdout) \(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(report["kind"] as? String == "notRead", "\(json.stdout)")
        let error = try #require(report["error"] as? [String: Any])
        #expect((error["message"] as? String)?.hasPrefix("\(store): cannot make a private copy to read in $TMPDIR (\(missing)): ") == true, "\(error)")
        #expect(error["hint"] as? String == "point TMPDIR at a folder that exists and that you may write to (it is \(missing)), or free space there, or raise the file-size limit (ulimit -f)")

        let text = try CommandRunner.run(["inspect", store], environment: environment)
        #expect(text.status == 74)
        #expect(text.stderr.contains("Try: point TMPDIR at a folder that exists"), "\(text.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing))
    }
}
