// A child process for the backup tests that must run under limits the test process itself
// cannot take on (a file-size limit set with `ulimit -f`): it calls the library exactly as the
// CLI does and reports like it: `Error: …` / `Try: …` on stderr, the error's exit status.
//
//   storerescue-backup-probe backup STORE DIR
//   storerescue-backup-probe restore BACKUP TARGET
//   storerescue-backup-probe upgrade STORE CATALOG DIR KEEP
//
// `upgrade` runs `StoreUpgrader` with `keepBackups` (which the CLI does not offer): the report's
// JSON on stdout, its text on stderr, its exit status. Run as another user (setpriv) by tests
// whose condition root does not meet (a backup folder it may write but not list).
import Foundation
import StoreRescue

let arguments = CommandLine.arguments
if arguments.count == 6, arguments[1] == "upgrade", let keep = Int(arguments[5]) {
    let report = StoreUpgrader.upgrade(
        store: arguments[2], catalogAt: arguments[3], options: UpgradeOptions(backupDirectory: arguments[4], keepBackups: keep))
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    FileHandle.standardOutput.write((try? encoder.encode(report)) ?? Data())
    FileHandle.standardError.write(Data(report.renderText().utf8))
    exit(report.exitStatus.rawValue)
}
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: storerescue-backup-probe backup STORE DIR | restore BACKUP TARGET | upgrade STORE CATALOG DIR KEEP\n".utf8))
    exit(ExitStatus.usage.rawValue)
}
do {
    switch arguments[1] {
    case "backup":
        let result = try BackupRunner.run(store: arguments[2], options: BackupOptions(destinationDirectory: arguments[3]))
        print(result.backupPath)
    case "restore":
        let result = try BackupRestorer.restore(backup: arguments[2], options: RestoreOptions(targetPath: arguments[3]))
        print(result.restoredPath)
    default:
        exit(ExitStatus.usage.rawValue)
    }
} catch let error as any OperatorFacingError {
    FileHandle.standardError.write(Data("Error: \(error)\nTry: \(error.recoverySuggestion ?? "")\n".utf8))
    exit(error.exitStatus.rawValue)
} catch {
    FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
    exit(ExitStatus.internalError.rawValue)
}
