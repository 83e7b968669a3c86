/// Why a migration stopped after it started writing (a refusal decided beforehand is not an
/// error: it is in the report, with exit status `refused`).
public enum MigrationError: OperatorFacingError, Equatable {
    /// `--from` or `--to` names a version the catalog does not have.
    case unknownVersion(name: String, role: String, known: [String])
    /// `--from` names a version the store's hashes contradict: they are exactly those of each
    /// version in `found`.
    case notThatVersion(path: String, requested: String, found: [String])
    /// The store is not a Core Data store (or could not be read as one).
    case notACoreDataStore(path: String, reason: String)
    /// A value computed or converted on the way does not fit its attribute (named, with the
    /// object's `Z_PK` and the value): the catalog's expression or the data must change.
    case valueDoesNotConvert(path: String, detail: String)
    /// A check the analysis left to the run until the custom steps before a hop's copy had run
    /// (values that must convert) refuses what those steps left: the refusal, worded as the
    /// analysis words it, `(checked after … ran)`, with what to correct.
    case refusedAfterSteps(path: String, refusal: MigrationRefusal)
    /// The data breaks a constraint of a version on the way (a new uniqueness constraint).
    case constraintViolated(path: String, version: String, detail: String)
    /// A custom stage's step or expression failed on the data (SQLite's message).
    case customStepFailed(path: String, stage: String, detail: String)
    /// Writing the new store failed part way (disk full, file-size limit, I/O error).
    case writeFailed(path: String, reason: String)
    /// The store (or a version written on the way) could not be read while writing.
    case readFailed(path: String, reason: String)
    /// The written store failed its checks; nothing was published. A bug in StoreRescue.
    case verificationFailed(path: String, problems: [String])
    /// The written store lacks required values it did not lack before, and the catalog's custom
    /// steps ran: they made the gap (on the device, saving the stage's changes fails validation).
    case customStepsLeftRequiredValuesMissing(path: String, stages: [String], problems: [String])
    /// The written store lacks required values it did not lack before because links were
    /// cleared: the objects they named are not of the relationship's kind at the target (an
    /// entity moved out of a hierarchy or removed). Core Data's migration fails validation (134110).
    case clearedLinksLeftRequiredValuesMissing(path: String, cleared: [String: Int64], problems: [String])
    /// The store changed while it was being migrated (another process wrote it).
    case storeChanged(path: String)
    /// SIGINT/SIGTERM or a cancellation flag stopped it.
    case interrupted(path: String)

    public var description: String {
        switch self {
        case .unknownVersion(let name, let role, let known):
            return "the catalog has no version \"\(name)\" (\(role)); it has \(known.map { "\"\($0)\"" }.joined(separator: ", "))"
        case .notThatVersion(let path, let requested, let found):
            let versions = found.count == 1 ? "\(found[0])'s" : "those of " + found.joined(separator: ", ")
            return "\(path) is not \(requested) (--from): its hashes are exactly \(versions); nothing was written"
        case .notACoreDataStore(let path, let reason): return "\(path) is not a Core Data store: \(reason)"
        case .valueDoesNotConvert(let path, let detail): return "migrating \(path) stopped: \(detail)"
        case .refusedAfterSteps(let path, let refusal): return "migrating \(path) stopped: \(refusal.message)"
        case .constraintViolated(let path, let version, let detail):
            return "migrating \(path) stopped: the data breaks a constraint of \(version): \(detail)"
        case .customStepFailed(let path, let stage, let detail): return "migrating \(path) stopped in \(stage): \(detail)"
        case .writeFailed(let path, let reason): return "writing \(path) failed: \(reason); nothing was left there"
        case .readFailed(let path, let reason): return "reading \(path) failed while migrating it: \(reason); nothing was written"
        case .verificationFailed(let path, let problems):
            return "the migrated store failed its checks (\(problems.prefix(5).joined(separator: "; "))\(problems.count > 5 ? "; …" : "")); nothing was written to \(path)"
        case .customStepsLeftRequiredValuesMissing(let path, let stages, let problems):
            let named = stages.count == 1 ? "the custom stage \(stages[0])" : "the custom stages \(stages.joined(separator: ", "))"
            return "migrating \(path) stopped: after \(named), \(problems.prefix(5).joined(separator: "; "))\(problems.count > 5 ? "; …" : ""); nothing was written"
        case .clearedLinksLeftRequiredValuesMissing(let path, let cleared, let problems):
            let links = cleared.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "migrating \(path) stopped: links had to be cleared (\(links)) because the objects they named are not of the relationship's kind at the target, and \(problems.prefix(5).joined(separator: "; "))\(problems.count > 5 ? "; …" : "") (134110); nothing was written"
        case .storeChanged(let path): return "\(path) changed while it was being migrated; nothing was written"
        case .interrupted(let path): return "migrating to \(path) was interrupted; nothing was written"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .unknownVersion: return "pass a version the catalog lists (storerescue catalog show CATALOG)"
        case .notThatVersion(_, _, let found):
            return found.count == 1
                ? "leave out --from: the store is \(found[0]); --from names the version of a store whose hashes do not tell it (ambiguous, or none)"
                : "pass --from with one of \(found.joined(separator: ", ")), the versions its hashes fit equally"
        case .notACoreDataStore: return "check the path: `storerescue inspect STORE` says what the file is"
        case .valueDoesNotConvert: return "correct the custom stage's expression, or add a willMigrate step that fixes the value first"
        case .refusedAfterSteps(_, let refusal): return refusal.remedy
        case .constraintViolated: return "add a willMigrate step that removes the duplicates before the constraint applies"
        case .customStepFailed: return "correct the step in the catalog (names are the model's, expressions SQLite's)"
        case .writeFailed: return "free disk space or raise the file-size limit (ulimit -f), then run the command again"
        case .readFailed: return "check that the store is still there and readable (storerescue inspect --deep STORE)"
        case .verificationFailed: return "report a bug with the command line, the catalog and (if you can) the store"
        case .customStepsLeftRequiredValuesMissing:
            return "correct the stage's steps so every object keeps a value for its required properties (on the device the stage's save would fail validation), or make the property optional in the next version"
        case .clearedLinksLeftRequiredValuesMissing:
            return "make the relationship optional in the target version, keep its destination's hierarchy, or add a custom stage whose didMigrate step links those objects again"
        case .storeChanged: return "close the app that uses the store and run the command again"
        case .interrupted: return "run the command again"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .unknownVersion: return .usage
        case .notACoreDataStore: return .notAStore
        case .notThatVersion, .valueDoesNotConvert, .refusedAfterSteps, .constraintViolated, .customStepFailed, .customStepsLeftRequiredValuesMissing,
            .clearedLinksLeftRequiredValuesMissing: return .refused
        case .writeFailed, .readFailed: return .ioError
        case .verificationFailed: return .internalError
        case .storeChanged, .interrupted: return .temporaryFailure
        }
    }
}

extension MigrationError {
    /// The same error with every path inside `folder` (the private workspace the new store and
    /// the versions on the way are written in, removed when the run ends) replaced by `path`,
    /// the NEW_STORE the operator named: a message never names a file that no longer exists.
    func naming(_ path: String, insteadOfFilesIn folder: String) -> MigrationError {
        func rename(_ file: String) -> String { file == folder || file.hasPrefix(folder + "/") ? path : file }
        switch self {
        case .unknownVersion: return self
        case .notThatVersion(let file, let requested, let found): return .notThatVersion(path: rename(file), requested: requested, found: found)
        case .notACoreDataStore(let file, let reason): return .notACoreDataStore(path: rename(file), reason: reason)
        case .valueDoesNotConvert(let file, let detail): return .valueDoesNotConvert(path: rename(file), detail: detail)
        case .refusedAfterSteps(let file, let refusal): return .refusedAfterSteps(path: rename(file), refusal: refusal)
        case .constraintViolated(let file, let version, let detail): return .constraintViolated(path: rename(file), version: version, detail: detail)
        case .customStepFailed(let file, let stage, let detail): return .customStepFailed(path: rename(file), stage: stage, detail: detail)
        case .writeFailed(let file, let reason): return .writeFailed(path: rename(file), reason: reason)
        case .readFailed(let file, let reason): return .readFailed(path: rename(file), reason: reason)
        case .verificationFailed(let file, let problems): return .verificationFailed(path: rename(file), problems: problems)
        case .customStepsLeftRequiredValuesMissing(let file, let stages, let problems):
            return .customStepsLeftRequiredValuesMissing(path: rename(file), stages: stages, problems: problems)
        case .clearedLinksLeftRequiredValuesMissing(let file, let cleared, let problems):
            return .clearedLinksLeftRequiredValuesMissing(path: rename(file), cleared: cleared, problems: problems)
        case .storeChanged(let file): return .storeChanged(path: rename(file))
        case .interrupted(let file): return .interrupted(path: rename(file))
        }
    }
}
