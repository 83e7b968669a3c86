import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store's main file as it was before it was read in place (`immutable=1`), kept open so that
/// a write to it afterwards is seen — even when the file is renamed meanwhile.
///
/// Reading in place assumes nothing writes the store. A rollback-journal (`DELETE`, `TRUNCATE`,
/// `PERSIST`) app holds no lock between transactions, so it may open the store and begin one at
/// any moment: SQLite then reads pages part way through being rewritten and reports "database
/// disk image is malformed", or reads a mix of two states without a word. Either way the read
/// is the app's work in progress, not the store, and a reader must take it again (through a
/// private copy, where SQLite rolls the journal back, or through the locks) instead of calling
/// a healthy store damaged.
///
/// What counts as a write: the main file's size, modification time or header change counter
/// (bytes 24–27, which every commit increments, however coarse the file system's clock) changed,
/// a `-journal` came, went or changed, a `-journal` holds a live header now (a transaction is
/// part way through: its pages may already be in the main file), or the reader opened another
/// file than the one watched (`checkOpenedByName`: the store was replaced by a rename between the
/// watch and the open). Renaming or deleting the file after the open does not count: the
/// reader goes on reading the file it opened, which is the one watched — unless it opens the
/// store by its path again later, as `migrate`'s write does (`pathNamesWatchedFile`). A WAL app's commits go to the
/// `-wal` and leave the main file — and so an in-place read, which sees the last checkpoint —
/// whole; its checkpoints change the main file and count.
final class MainFileWatch {
    let path: String
    private let file: ReadableFile
    private let state: [Int64]
    /// The probe that chose how to read the store found a hot `-journal` (a crashed app's, read
    /// through a private copy): one that is still there, unchanged, is not a transaction in
    /// progress. Set by a caller that probes after the watch begins.
    var journalHadData: Bool
    private var openedAnotherFile = false

    /// Looks at `path` (the main file, not through a symbolic link) now; nil when it cannot be
    /// opened (the read that follows fails on its own).
    init?(path: String, journalHadData: Bool = false) {
        guard let file = try? ReadableFile(path: path, followsSymlinks: false) else { return nil }
        self.path = path
        self.file = file
        self.journalHadData = journalHadData
        state = Self.state(of: file, path: path)
    }

    /// True when the store was written to since `init`, or a transaction is part way through now.
    var writtenToSince: Bool {
        if openedAnotherFile || Self.state(of: file, path: path) != state { return true }
        return !journalHadData && StoreFileSet.discover(mainPath: path).sidecar("-journal")?.holdsData == true
    }

    /// To be called right after a reader opened the store by its path: when the path names
    /// another file than the one watched (a rename since the watch began), what the reader reads
    /// is not what is watched, and counts as written to. (The path naming the watched file after
    /// the open means the reader opened it, short of a rename there and back in between.)
    func checkOpenedByName() {
        if !pathNamesWatchedFile { openedAnotherFile = true }
    }

    /// True when the path names the watched file now. A reader that opens the store by its path
    /// again later (`migrate` attaches the original for its write) reads another file otherwise.
    var pathNamesWatchedFile: Bool {
        var named = stat()
        var watched = stat()
        return lstat(path, &named) == 0 && fstat(file.descriptor, &watched) == 0
            && named.st_dev == watched.st_dev && named.st_ino == watched.st_ino
    }

    private static func state(of file: ReadableFile, path: String) -> [Int64] {
        var info = stat()
        guard fstat(file.descriptor, &info) == 0 else { return [-1] }
        var counter = [UInt8](repeating: 0, count: 4)
        let counterRead = pread(file.descriptor, &counter, 4, 24) == 4
        var journal = stat()
        let hasJournal = lstat(path + "-journal", &journal) == 0
        return [Int64(info.st_size), Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec),
                counterRead ? counter.reduce(0) { $0 << 8 | Int64($1) } : -1,
                hasJournal ? Int64(journal.st_size) : -1, hasJournal ? Int64(journal.st_mtim.tv_sec) : -1,
                hasJournal ? Int64(journal.st_mtim.tv_nsec) : -1]
    }
}
