/// What an input path turned out to be. The raw values are part of the JSON contract (`kind`).
public enum StoreKind: String, Sendable, Codable, CaseIterable {
    /// An SQLite database with Core Data's bookkeeping tables (`Z_METADATA`, `Z_PRIMARYKEY`).
    case coreDataStore
    /// A readable SQLite database that is not a Core Data / SwiftData store.
    case sqliteDatabase
    /// A file that does not start with the SQLite header.
    case notSQLite
    /// A zero-length file (with no WAL content either).
    case empty
    /// An SQLite file shorter than its own header says it is.
    case truncated
    /// An SQLite file whose pages or schema SQLite cannot read, or that fails `quick_check`.
    case damaged
    /// Nothing at the path.
    case missing
    /// A directory, not a file.
    case directory
    /// A file this process may not read.
    case unreadable
    /// A symbolic link, refused because `--follow-symlinks` was not given.
    case symlink
    /// A FIFO, socket or device: never opened, as reading one could block forever.
    case notRegularFile
    /// Not read, for a reason outside the input (review rv10: it was called `unreadable`): the
    /// private copy could not be made (`$TMPDIR` missing or full, the file-size limit), no file
    /// descriptor was left, or it kept changing while copied. The report's `error` says which.
    case notRead

    /// The exit status `inspect` ends with for an input of this kind.
    public var exitStatus: ExitStatus {
        switch self {
        case .coreDataStore, .sqliteDatabase: return .success
        case .notSQLite, .empty, .truncated, .damaged: return .notAStore
        case .missing, .directory, .unreadable, .symlink, .notRegularFile: return .noInput
        case .notRead: return .ioError
        }
    }

    /// True when the input was read as a database (findings or not).
    public var isReadable: Bool { exitStatus == .success }
}
