// A child process for the backup tests that must run under limits the test process itself
// cannot take on (a file-size limit set with `ulimit -f`): it calls the library exactly as the
// CLI does and reports like it: `Error: …` / `Try: …` on stderr, the error's exit status.
//
//   storerescue-backup-probe backup STORE DIR
//   storerescue-backup-probe restore BACKUP TARGET
import Foundation
import StoreRescue

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: storerescue-backup-probe backup STORE DIR | restore BACKUP TARGET\n".utf8))
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
