import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A 64 KiB tmpfs mounted for one test: a disk that fills up at once. Needs root with
/// CAP_SYS_ADMIN (the project's machines and CI have it); tests skip when mounting is refused.
final class FullDisk {
    let path: String
    private var isMounted = false

    static let isAvailable: Bool = {
        guard geteuid() == 0, let probe = try? FullDisk(at: NSTemporaryDirectory() + "storerescue-mount-probe-\(getpid())") else {
            return false
        }
        probe.unmount()
        return true
    }()

    init(at path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = try BackupFixtures.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", path])
        guard result.status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw CocoaError(.fileWriteNoPermission)
        }
        isMounted = true
    }

    func unmount() {
        guard isMounted else { return }
        isMounted = false
        _ = try? BackupFixtures.run("/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }

    deinit { unmount() }
}

/// A folder nobody may create files in for the length of a test: mode 0500 for an ordinary
/// user; for root, who ignores modes, the immutable attribute (`chattr +i`).
final class UnwritableFolder {
    let path: String
    let expectedReason: String
    private var isLocked = false
    private let isRoot = geteuid() == 0

    init(_ path: String) throws {
        self.path = path
        if isRoot {
            let result = try BackupFixtures.run("/usr/bin/chattr", ["+i", path])
            try #require(result.status == 0, "chattr +i failed: \(result.standardError)")
            expectedReason = "Operation not permitted"
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: path)
            expectedReason = "Permission denied"
        }
        isLocked = true
    }

    func restore() {
        guard isLocked else { return }
        isLocked = false
        if isRoot {
            _ = try? BackupFixtures.run("/usr/bin/chattr", ["-i", path])
        } else {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
    }

    deinit { restore() }
}
