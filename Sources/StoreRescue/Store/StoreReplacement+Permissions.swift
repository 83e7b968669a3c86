import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether this process may replace a store in place: write its main file and sidecars (settling
/// opens it read-write, folds its `-wal` in, locks it) and its folder (the new file is written
/// there and renamed over it).
extension StoreReplacement {
    /// What stops this process from replacing the store in place, in words, or nil. Asked of
    /// the kernel as the process is (`faccessat` with the effective ids: root may write a 0444
    /// file, and does; a read-only file system stops everyone). A file that is missing is not
    /// this check's business (the probe says so).
    ///
    /// A store the user may not write used to reach SQLite, which opens it read only without a
    /// word: it made a `-wal` and `-shm` beside it, then failed to settle it, and the run said
    /// the store was damaged and advised `--on-failure clean` (a review, exit 65).
    public static func permissionProblem(storePath: String) -> String? {
        var info = stat()
        guard lstat(storePath, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        if let denied = denied(storePath, R_OK | W_OK) {
            return "it is not writable by you (\(describe(info)); \(denied))"
        }
        for suffix in sidecarSuffixes {
            var sidecar = stat()
            guard lstat(storePath + suffix, &sidecar) == 0, sidecar.st_mode & S_IFMT == S_IFREG else { continue }
            if let denied = denied(storePath + suffix, R_OK | W_OK) {
                return "its \(suffix) is not writable by you (\(describe(sidecar)); \(denied))"
            }
        }
        let folder = SafeFileOutput.folder(of: storePath)
        var folderInfo = stat()
        if stat(folder, &folderInfo) == 0, let denied = denied(folder, W_OK | X_OK) {
            return "its folder \(folder) is not writable by you (\(describe(folderInfo)); \(denied)): the new store is written there and renamed over it"
        }
        return nil
    }

    /// The reason `faccessat` refuses `mode` on `path` for a permission, or nil (allowed, or
    /// another failure: not this check's).
    private static func denied(_ path: String, _ mode: Int32) -> String? {
        guard faccessat(AT_FDCWD, path, mode, AT_EACCESS) != 0 else { return nil }
        let code = errno
        guard [EACCES, EPERM, EROFS].contains(code) else { return nil }
        return String(cString: strerror(code))
    }

    /// `mode 0444, owner uid 501`.
    private static func describe(_ info: stat) -> String {
        "mode \(String(info.st_mode & 0o7777, radix: 8).leftPadded(to: 4)), owner uid \(info.st_uid)"
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
