import Foundation

/// The pages of a store as SQLite would see them — the main file with the committed frames of its
/// `-wal` laid over it — read one at a time with `pread` into the caller's buffer.
///
/// Opens the main file and the `-wal` read-only, without following symbolic links and without
/// creating, locking or changing anything (no SQLite connection is involved, so no `-shm` appears).
/// Nothing is mapped or held: memory stays the same whatever the store's size.
///
/// One thread uses it: the properties read or changed for every row or page are
/// `@exclusivity(unchecked)`. The runtime's exclusivity check on them took about a tenth of a
/// salvage's time (Docs/SALVAGE.md, "Performance").
final class PageSource {
    let path: String
    let geometry: DatabaseGeometry
    let fileSize: Int64
    /// The committed WAL content laid over the main file, when a valid `-wal` exists.
    let writeAheadLog: WriteAheadLog?
    /// Why a `-wal` next to the store was not used (nil when there is none, or it was used).
    let writeAheadLogIssue: String?
    /// The database size in pages: the last WAL commit's, else the header's, else the file's.
    let pageCount: UInt32
    /// Pages that can be read: the whole pages of the main file plus pages the WAL adds. Pages
    /// numbered above this are missing.
    let availablePages: UInt32
    /// The main file's whole pages past the database's end when the `-wal`'s last commit shrank
    /// it: freed by that commit, not part of the database SQLite reads (`readPastCommit`).
    let pagesPastCommit: ClosedRange<UInt32>?

    private let mainDescriptor: Int32
    private let walDescriptor: Int32
    /// Read-ahead: consecutive pages of the main file read with one `pread`, once pages are
    /// being read in file order (the page after the last one read). A fixed 128 KiB, whatever
    /// the store's size. A page read out of order is read alone: a tree whose pages lie among
    /// another table's (rows of two tables inserted in turn) would otherwise read each window
    /// for one or two of its pages — 2.3 times the file, measured on the salvage benchmark's
    /// store, against 1.0 this way.
    @exclusivity(unchecked) private var window: [UInt8] = []
    @exclusivity(unchecked) private var windowStart: Int64 = -1
    @exclusivity(unchecked) private var lastPage: UInt32 = 0
    private static let windowBytes = 128 << 10

    /// Opens `path` (and `path-wal`).
    ///
    /// - Parameter followsSymlinks: open the store through a symbolic link at `path` (the `-wal`
    ///   never is).
    /// - Throws: `StoreAccessError.rejected` when the path is missing, a directory, a refused
    ///   symbolic link, not a regular file, unreadable, or empty with no WAL content.
    init(path: String, followsSymlinks: Bool = false) throws {
        self.path = path
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followsSymlinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw StoreAccessError.rejected(path: path, kind: .missing, reason: "no such file")
            case ELOOP: throw StoreAccessError.rejected(path: path, kind: .symlink, reason: "is a symbolic link; refusing to follow it")
            default: throw StoreAccessError.cannotOpen(path: path, code: code)
            }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw StoreAccessError.rejected(path: path, kind: .unreadable, reason: reason)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR:
            close(descriptor)
            throw StoreAccessError.rejected(path: path, kind: .directory, reason: "is a directory, not a store file")
        default:
            close(descriptor)
            throw StoreAccessError.rejected(path: path, kind: .notRegularFile, reason: "is not a regular file (FIFO, socket or device)")
        }
        mainDescriptor = descriptor
        fileSize = Int64(info.st_size)

        let opened: (Int32, WriteAheadLog?, String?)
        do { opened = try Self.openWriteAheadLog(path: path + "-wal") } catch {
            close(descriptor)
            throw error
        }
        let (walDescriptor, log, issue) = opened
        var headerBytes = [UInt8](repeating: 0, count: 100)
        let headerRead = FileReading.read(descriptor, into: &headerBytes, at: 0)
        if headerRead < 100 { headerBytes = Array(headerBytes.prefix(max(0, headerRead))) }
        let size = fileSize
        let readMain: (Int64, inout [UInt8]) -> Bool = { offset, buffer in
            offset + Int64(buffer.count) <= size && FileReading.read(descriptor, into: &buffer, at: offset) == buffer.count
        }
        var geometry = DatabaseGeometry.determine(headerBytes: headerBytes, fileSize: size, walPageSize: log?.pageSize, read: readMain)
        // The main file's header unreadable, the -wal's committed page 1 intact: SQLite reads the
        // database through that page, so its header (reserved bytes, encoding, freelist) is the
        // database's. A review's store with 40 reserved bytes per page was read as having none:
        // 458 pages damaged, 375 rows partial.
        if !geometry.isHeaderTrusted, let log, log.committedFrames > 0, let offset = log.frames[1], walDescriptor >= 0 {
            var walHeader = [UInt8](repeating: 0, count: 100)
            if FileReading.read(walDescriptor, into: &walHeader, at: offset) == 100,
               let header = SQLiteFileHeader(bytes: walHeader), header.hasValidPageSize, header.pageSize == log.pageSize
            {
                var fromLog = DatabaseGeometry.determine(headerBytes: walHeader, fileSize: size, walPageSize: log.pageSize, read: readMain)
                if fromLog.isHeaderTrusted {
                    fromLog.notes.insert("the main file's database header is unreadable; the header of page 1 as the -wal commits it is used", at: 0)
                    geometry = fromLog
                }
            }
        }
        var usedLog = log
        var walIssue = issue
        if let log, log.pageSize != geometry.pageSize {
            walIssue = "its page size (\(log.pageSize)) differs from the database's (\(geometry.pageSize))"
            usedLog = nil
        } else if let log, log.committedFrames == 0 {
            walIssue = log.validFrames == 0 ? "it holds no frame whose checksum holds" : "it holds no committed transaction"
            usedLog = nil
        }
        if usedLog == nil, walDescriptor >= 0 { close(walDescriptor) }
        self.walDescriptor = usedLog == nil ? -1 : walDescriptor
        writeAheadLog = usedLog
        writeAheadLogIssue = walIssue
        if let walIssue { geometry.notes.append("the -wal was not used: \(walIssue)") }

        let filePages = UInt32(clamping: size / Int64(geometry.pageSize))
        let partialPages: UInt32 = size % Int64(geometry.pageSize) == 0 ? 0 : 1
        var count = max(filePages + partialPages, geometry.headerPageCount ?? 0)
        var available = filePages
        var pastCommit: ClosedRange<UInt32>?
        if let usedLog, let committed = usedLog.committedPageCount {
            count = committed
            // The committed page 1 is the WAL's when it has one: its freelist head and count are
            // the current ones, where the main file's header may say an older freelist (or none).
            if let offset = usedLog.frames[1] {
                var page = [UInt8](repeating: 0, count: 100)
                if FileReading.read(walDescriptor, into: &page, at: offset) == 100 { geometry.takeCommittedHeader(page) }
            }
            // A WAL can only add as many pages as it has frames: a larger claim is not believed.
            let walPages = usedLog.frames.keys.filter { $0 <= committed }.max() ?? 0
            available = min(max(filePages, walPages), filePages + UInt32(clamping: usedLog.frames.count))
            available = min(available, committed)
            if filePages > committed {
                // As SQLite reads it, the database ends there (a transaction that shrank it, such
                // as an incremental vacuum, not yet checkpointed): what lies past it was freed.
                pastCommit = (committed + 1)...filePages
                geometry.notes.append("the -wal's last commit makes the database \(committed) pages long: "
                    + "the main file's \(filePages - committed) pages past that were read as free pages (their rows are deleted ones)")
            }
        }
        pagesPastCommit = pastCommit
        self.geometry = geometry
        pageCount = count
        availablePages = min(available, count)
        guard fileSize > 0 || usedLog != nil else {
            // Fully initialised: deinit closes the descriptors.
            throw StoreAccessError.rejected(path: path, kind: .empty, reason: "is empty (0 bytes) and has no -wal content")
        }
    }

    deinit {
        close(mainDescriptor)
        if walDescriptor >= 0 { close(walDescriptor) }
    }

    /// Opens the `-wal` beside the store when it is a regular file, and reads its committed frames.
    private static func openWriteAheadLog(path: String) throws -> (Int32, WriteAheadLog?, String?) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return (-1, nil, nil) }
        guard info.st_mode & S_IFMT == S_IFREG else { return (-1, nil, "it is not a regular file") }
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            // No descriptor left is the limit's fault, not the -wal's: read without it, the
            // salvage would leave its committed frames out with only a note.
            if code == EMFILE || code == ENFILE { throw StoreAccessError.cannotOpen(path: path, code: code) }
            return (-1, nil, "it cannot be opened: \(String(cString: strerror(code)))")
        }
        guard info.st_size > Int64(WriteAheadLog.headerSize) else {
            close(descriptor)
            return (-1, nil, nil)  // empty: SQLite has nothing to apply either
        }
        guard let log = WriteAheadLog.read(descriptor: descriptor, size: Int64(info.st_size)) else {
            close(descriptor)
            return (-1, nil, "its header is not a valid WAL header")
        }
        return (descriptor, log, nil)
    }

    /// True when page `page` comes from the WAL rather than the main file.
    func isFromWriteAheadLog(_ page: UInt32) -> Bool {
        writeAheadLog?.frames[page] != nil
    }

    /// Reads page `page` into `buffer` (resized to the page size). False when the page is missing:
    /// numbered 0 or above `availablePages`, cut short by the end of the file, or unreadable.
    func read(_ page: UInt32, into buffer: inout [UInt8]) -> Bool {
        let size = geometry.pageSize
        if buffer.count != size { buffer = [UInt8](repeating: 0, count: size) }
        guard page >= 1, page <= availablePages else { return false }
        if let log = writeAheadLog, let offset = log.frames[page] {
            return FileReading.read(walDescriptor, into: &buffer, at: offset) == size
        }
        let offset = Int64(page - 1) * Int64(size)
        guard offset + Int64(size) <= fileSize else { return false }
        let isSequential = page == lastPage &+ 1
        lastPage = page
        if windowStart < 0 || offset < windowStart || offset + Int64(size) > windowStart + Int64(window.count) {
            guard isSequential, fillWindow(at: offset) else { return FileReading.read(mainDescriptor, into: &buffer, at: offset) == size }
        }
        let start = Int(offset - windowStart)
        buffer.withUnsafeMutableBytes { target in
            window.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<start + size]))
            }
        }
        return true
    }

    /// Reads page `page` of `pagesPastCommit` from the main file into `buffer`; false for any
    /// other page or when it cannot be read.
    func readPastCommit(_ page: UInt32, into buffer: inout [UInt8]) -> Bool {
        let size = geometry.pageSize
        if buffer.count != size { buffer = [UInt8](repeating: 0, count: size) }
        guard let range = pagesPastCommit, range.contains(page) else { return false }
        return FileReading.read(mainDescriptor, into: &buffer, at: Int64(page - 1) * Int64(size)) == size
    }

    /// Reads the window of whole pages that starts at `offset` (fewer at the end of the file).
    private func fillWindow(at offset: Int64) -> Bool {
        let pages = max(1, Self.windowBytes / geometry.pageSize)
        let length = min(Int64(pages * geometry.pageSize), (fileSize - offset) / Int64(geometry.pageSize) * Int64(geometry.pageSize))
        guard length > 0 else { return false }
        if window.count != Int(length) { window = [UInt8](repeating: 0, count: Int(length)) }
        guard FileReading.read(mainDescriptor, into: &window, at: offset) == window.count else {
            windowStart = -1
            return false
        }
        windowStart = offset
        return true
    }
}
