import Foundation

/// A file SQLite was to open whose full path is longer than SQLite opens.
///
/// SQLite's Unix file layer works with full paths of at most 512 bytes (`MAX_PATHNAME`), and
/// refuses a database whose full path leaves no room in them for its `-journal`: 504 bytes is
/// the longest it opens. Past that it says only "unable to open database file" (code 14), which
/// read as an unreadable store, a failed `integrity_check` of a good backup, or "check free
/// space" — for a file in a folder this tool chose: a backup folder, `$TMPDIR`, the folder of a
/// restored store (review rv10 #2). `SQLiteConnection` refuses such a path with this error
/// before SQLite sees it, and the places that make files for SQLite check the longest one first
/// (`check(_:folder:chosenWith:)`), so nothing is created.
///
/// ```swift
/// try SQLitePathTooLongError.check(staging.path("snapshot.sqlite"), folder: "/backups", chosenWith: .backupDestination)
/// ```
public struct SQLitePathTooLongError: OperatorFacingError, Equatable {
    /// SQLite's `MAX_PATHNAME`: a full path and the `-journal` SQLite adds to it fit in it.
    public static let pathLimit = 512
    /// The longest full path SQLite opens a database at: `pathLimit` less `-journal`.
    public static let longestPath = pathLimit - 8

    /// The file's full path (its folder's links resolved, as SQLite resolves them).
    public var path: String
    /// The folder the tool chose for the file (nil: the path is the operator's own).
    public var folder: String?
    /// What that folder is for, and the option or environment variable that chose it.
    public var folderOption: FolderOption?

    public init(path: String, folder: String? = nil, folderOption: FolderOption? = nil) {
        self.path = path
        self.folder = folder
        self.folderOption = folderOption
    }

    /// The full path SQLite works with for `path`: made absolute against the current folder, its
    /// folder's symbolic links resolved (`SQLiteConnection` passes SQLite the same).
    public static func fullPath(of path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return SQLiteConnection.resolvingFolder(of: absolute)
    }

    /// Whether SQLite would refuse to open `path` for its length.
    public static func isPastLimit(_ path: String) -> Bool {
        fullPath(of: path).utf8.count > longestPath
    }

    /// Throws when SQLite could not open `path` for its length, naming `folder` and the option
    /// that chose it.
    public static func check(_ path: String, folder: String? = nil, chosenWith option: FolderOption? = nil) throws {
        let full = fullPath(of: path)
        guard full.utf8.count > longestPath else { return }
        throw SQLitePathTooLongError(path: full, folder: folder.map(BackupRunner.absolutePath), folderOption: option)
    }

    /// This error, naming `folder` and `option` when it names no folder yet.
    public func chosen(in folder: String, by option: FolderOption) -> SQLitePathTooLongError {
        guard self.folder == nil else { return self }
        return SQLitePathTooLongError(path: path, folder: BackupRunner.absolutePath(folder), folderOption: option)
    }

    private var bytes: Int { path.utf8.count }

    public var description: String {
        let limit = "longer than the \(Self.pathLimit) bytes SQLite opens (with the -journal it adds: at most \(Self.longestPath))"
        guard let folder, let folderOption else { return "\(path): its full path is \(bytes) bytes, \(limit)" }
        return "cannot use the \(folderOption.role) \(folder) (chosen by \(folderOption.option)): the file SQLite must open there, "
            + "\(path), has a full path of \(bytes) bytes, \(limit); nothing was changed"
    }

    public var recoverySuggestion: String? {
        let limit = "(SQLite opens paths up to \(Self.pathLimit) bytes)"
        guard let folderOption else { return "move or copy the file to a folder whose path is shorter \(limit)" }
        if folderOption.option.hasPrefix("-") {
            return "choose a \(folderOption.role) whose path is shorter with \(folderOption.option) \(limit)"
        }
        return "set \(folderOption.option) to a folder whose path is shorter \(limit)"
    }

    /// 73: an output location that cannot be used; an input store past the limit is reported by
    /// `StoreAccessError` (66) instead.
    public var exitStatus: ExitStatus { .cannotCreateOutput }
}
