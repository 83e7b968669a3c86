import Foundation
import Testing
@testable import StoreRescue

/// `verify` of a bad backup (review rv10): the `FAILED:` report and its problems, then the
/// `Error:`/`Try:` pair CLI.md promises every failing command prints on stderr — before, a job
/// grepping stderr for `Error:` missed a bad backup's report (only `FAILED:` and `Try:`).
@Suite(.enabled(if: StoreRescueExecutable.hasBackupCommands, "storerescue does not register verify yet"))
struct VerifyFailureReportTests {
    @Test func aBadBackupEndsWithErrorAndTry() throws {
        let temp = try TemporaryDirectory()
        let backup = try BackupVerifierTests.makeBackup(temp)
        let data = try Data(contentsOf: URL(fileURLWithPath: backup.backupPath))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: backup.backupPath))
        let verify = try BackupCommandEndToEndTests.storerescue(["verify", backup.backupPath])
        #expect(verify.status == 1)
        let lines = verify.standardError.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "FAILED: \(backup.backupPath)")
        #expect(lines.dropFirst().prefix { $0.hasPrefix("  - ") }.count >= 2, "\(lines)")
        let problems = lines.filter { $0.hasPrefix("  - ") }.count
        #expect(lines.suffix(3) == [
            "Error: the backup \(backup.backupPath) failed verification (\(problems) problems, listed above)",
            "Try: restore from another backup; run `storerescue verify` on each to find a good one",
            "",
        ], "\(lines)")
        #expect(verify.standardOutput.isEmpty)
    }
}
