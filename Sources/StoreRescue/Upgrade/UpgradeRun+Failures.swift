import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How an upgrade tells the store's failures (saved by the fallback) from the environment's,
/// and the refusals it reports for them.
extension UpgradeRun {
    // MARK: - Helpers

    /// Errors that mean the store's data cannot be carried as planned (the fallback's business),
    /// as opposed to the environment failing (disk full, interrupted, a lock).
    static func isDataFailure(_ error: any Error) -> Bool {
        if let error = error as? MigrationError {
            switch error {
            // Not `notACoreDataStore`: a healthy SQLite database with no Core Data tables is the
            // wrong file, not a store to save (a review's browser history was quarantined and
            // replaced by an empty store).
            case .valueDoesNotConvert, .constraintViolated, .refusedAfterSteps, .customStepFailed: return true
            default: return false
            }
        }
        if let error = error as? StoreAccessError { return [.empty, .notSQLite, .truncated, .damaged].contains(error.kind) }
        if let error = error as? SQLiteError { return error.isCorruption }
        if error is StoreModelError || error is ModelDecodingError { return true }
        return false
    }

    /// Failures of the catalog's custom code met while writing: a step SQLite stops, a value a
    /// custom expression computes that does not fit its attribute (the analysis checks every
    /// inferred conversion before anything is written, so one met while writing is a custom
    /// stage's).
    static func isCatalogFailure(_ error: any Error) -> Bool {
        switch error as? MigrationError {
        case .customStepFailed?, .valueDoesNotConvert?: return true
        default: return false
        }
    }

    static func failureRefusal(_ error: any Error, store: String) -> MigrationRefusal {
        let facing = StoreMigrator.operatorFacing(error, store: store)
        let code: MigrationRefusal.Code
        switch error as? MigrationError {
        case .constraintViolated?: code = .uniquenessViolated
        // The analysis's own refusal, made by the run after the custom steps it waited for.
        case .refusedAfterSteps(_, let refusal)?: code = refusal.code
        case .valueDoesNotConvert?: code = .invalidCustomStage
        // Not the catalog's fault (`refuseForTheCatalog`): the store's.
        case .notACoreDataStore?, nil: code = .storeDamaged
        case _?: code = .invalidCustomStage
        }
        return MigrationRefusal(
            code: code, hop: "", entity: nil, property: nil, rowCount: nil, message: facing.description,
            remedy: facing.recoverySuggestion ?? "")
    }

    func damagedRefusal(_ error: any Error) -> MigrationRefusal {
        damagedRefusal(message: StoreMigrator.operatorFacing(error, store: storePath).description)
    }

    /// A store that cannot be read whole, with what saves what can be read.
    func damagedRefusal(message: String) -> MigrationRefusal {
        MigrationRefusal(
            code: .storeDamaged, hop: "", entity: nil, property: nil, rowCount: nil, message: message, remedy: damagedStoreRemedy)
    }

    /// What saves a damaged store's readable rows, in options the command run has: `adopt` has
    /// no `--on-failure`, so it names `upgrade`'s.
    var damagedStoreRemedy: String {
        isAdoptOnly
            ? "run storerescue upgrade STORE --catalog CATALOG --on-failure clean to quarantine it and salvage what can be read into a clean store, or storerescue salvage STORE --out NEW"
            : "run with --on-failure clean to quarantine it and salvage what can be read into a clean store, or storerescue salvage STORE --out NEW"
    }

    /// A read that failed for a reason outside the store, as the run ends with it: the file
    /// system failing under SQLite (`isFileSystemFailure`: a full disk, the file-size limit) is
    /// an I/O error (74), not a bug; anything else keeps its own status.
    static func readFailure(_ error: any Error, store path: String) -> any Error {
        if let error = error as? SQLiteError, error.isFileSystemFailure {
            return MigrationError.readFailed(path: path, reason: "\(error.message) (code \(error.resultCode))")
        }
        return error
    }

    /// The header's file format write version (byte 18), nil when it cannot be read.
    static func headerWriteVersion(_ path: String) -> UInt8? {
        guard let bytes = try? BoundedFile.prefix(of: path, count: 20, followsSymlinks: false), bytes.count == 20 else { return nil }
        return bytes[18]
    }

    /// True when the file's header says WAL (bytes 18 and 19 are 2).
    static func isWALHeader(_ path: String) -> Bool {
        guard let bytes = try? BoundedFile.prefix(of: path, count: 20, followsSymlinks: false), bytes.count == 20 else { return true }
        return bytes[18] == 2 && bytes[19] == 2
    }

    /// Leaves `file` in the journal mode the store had (Core Data: WAL), checkpointed, closed,
    /// with no sidecar.
    static func finishFile(_ file: String, walMode: Bool) throws {
        do {
            let connection = try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .readWrite))
            let mode = try connection.setJournalMode(walMode ? "WAL" : "DELETE")
            guard mode == (walMode ? "wal" : "delete") else {
                throw MigrationError.writeFailed(path: file, reason: "SQLite would not set the journal mode")
            }
            if walMode { _ = try connection.rows("PRAGMA main.wal_checkpoint(TRUNCATE)") }
        } catch let error as SQLiteError {
            throw MigrationError.writeFailed(path: file, reason: error.message)
        }
        for suffix in StoreReplacement.sidecarSuffixes {
            var info = stat()
            if lstat(file + suffix, &info) == 0 { unlink(file + suffix) }  // our own workspace file's
        }
    }
}
