import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether some connection has a store open right now, told from SQLite's own locks.
///
/// SQLite takes POSIX advisory locks: every connection to a WAL store holds a shared lock on
/// byte 128 of the `-shm` (and one on the main file's shared range) for as long as it is open;
/// a rollback-journal connection holds locks on the main file while it reads or writes. On Linux
/// `/proc/locks` lists every lock with its file's device and inode, so the answer is read without
/// opening the store or its sidecars at all (opening and closing a file would drop this process's
/// own POSIX locks on it). Elsewhere each file is asked with `F_GETLK`.
///
/// A rollback-journal store that an app has open but is not reading at this instant holds no
/// lock: it looks at rest. Callers that read such a store in place check afterwards that it did
/// not change while they read it.
///
/// ```swift
/// if StoreLocks.isInUse(StoreFileSet.discover(mainPath: path)) { /* online backup */ }
/// ```
public enum StoreLocks {
    /// True when any process (this one included) holds a lock on the store's main file or its `-shm`.
    public static func isInUse(_ files: StoreFileSet) -> Bool {
        var paths = [files.mainPath]
        if let shm = files.sidecar("-shm"), shm.irregularKind == nil { paths.append(shm.path) }
        let identities = paths.compactMap(FileIdentity.init(path:))
        guard !identities.isEmpty else { return false }
        if let locked = lockedFiles() {
            return identities.contains { locked.contains($0) }
        }
        return paths.contains(where: hasConflictingLock)
    }

    /// Device and inode of a file, as `/proc/locks` names it.
    struct FileIdentity: Hashable {
        var major: UInt64
        var minor: UInt64
        var inode: UInt64

        init?(path: String) {
            var info = stat()
            guard lstat(path, &info) == 0 else { return nil }
            let device = UInt64(info.st_dev)
            major = ((device >> 8) & 0xFFF) | ((device >> 32) & ~UInt64(0xFFF))
            minor = (device & 0xFF) | ((device >> 12) & ~UInt64(0xFF))
            inode = UInt64(info.st_ino)
        }

        init(major: UInt64, minor: UInt64, inode: UInt64) {
            self.major = major
            self.minor = minor
            self.inode = inode
        }
    }

    /// Every file holding a lock, from `/proc/locks`; nil when that file cannot be read.
    static func lockedFiles(table: String = "/proc/locks") -> Set<FileIdentity>? {
        guard let data = try? BoundedFile.contents(of: table, limit: 64 << 20) else { return nil }
        return parse(String(decoding: data, as: UTF8.self))
    }

    /// Lines such as `1: POSIX  ADVISORY  READ 17236 fe:00:16244946 128 128` (waiters carry a
    /// `->` before the type): the field `MAJOR:MINOR:INODE`, the first two in hexadecimal.
    static func parse(_ table: String) -> Set<FileIdentity> {
        var result: Set<FileIdentity> = []
        for line in table.split(separator: "\n") {
            for field in line.split(separator: " ") where field.filter({ $0 == ":" }).count == 2 {
                let parts = field.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 3, let major = UInt64(parts[0], radix: 16), let minor = UInt64(parts[1], radix: 16),
                      let inode = UInt64(parts[2]) else { continue }
                result.insert(FileIdentity(major: major, minor: minor, inode: inode))
            }
        }
        return result
    }

    /// `F_GETLK` over the whole file: would a write lock conflict with another process's lock?
    private static func hasConflictingLock(_ path: String) -> Bool {
        guard let file = try? ReadableFile(path: path, followsSymlinks: false) else { return false }
        var query = flock()
        query.l_type = Int16(F_WRLCK)
        query.l_whence = Int16(SEEK_SET)
        query.l_start = 0
        query.l_len = 0
        guard fcntl(file.descriptor, F_GETLK, &query) == 0 else { return false }
        return query.l_type != Int16(F_UNLCK)
    }
}
