import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory only this process can enter (mode 0700, created with `mkdtemp`), removed with
/// everything in it when the value is deinitialised or `remove()` is called.
///
/// Named, locked and registered as `TemporaryItems` says: `<prefix>.storerescue-tmp-<pid>-<time>-<random>`,
/// locked with `flock` while it lives, so a folder left by a killed run is removed by the next run
/// that creates a temporary in the same parent, and a live one never is.
public final class PrivateTemporaryDirectory {
    public let path: String
    private var isRemoved = false
    /// Open (and locked) for the directory's whole life; given up only to remove it
    /// (`remove()`, when no other descriptor is left).
    private var descriptor: Int32
    private let registration: Int
    private let ledger: InterruptionLedger

    /// Creates the directory under `parent` (default: `$TMPDIR` or `/tmp`).
    public convenience init(parent: String? = nil, prefix: String = "storerescue") throws {
        try self.init(parent: parent, prefix: prefix, ledger: TemporaryItems.ledger)
    }

    /// `init`, registered in `ledger` (tests use one of their own).
    init(parent: String?, prefix: String, ledger: InterruptionLedger) throws {
        self.ledger = ledger
        let base = parent ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        TemporaryItems.sweepOnce(folder: base)
        var template = Array((base.hasSuffix("/") ? base : base + "/").utf8CString.dropLast())
        template += Array(TemporaryItems.name(label: prefix, random: "XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let created else {
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSFilePathErrorKey: base,
                NSLocalizedDescriptionKey: "cannot create a private temporary directory in \(base): \(String(cString: strerror(errno)))",
            ])
        }
        let descriptor = open(created, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if descriptor >= 0 { TemporaryItems.lock(descriptor) }
        guard let token = ledger.register(created, isFolder: true) else {
            // The process is ending on an interruption, which has removed its temporaries: one
            // created now would be left behind.
            rmdir(created)
            if descriptor >= 0 { close(descriptor) }
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSFilePathErrorKey: base,
                NSLocalizedDescriptionKey: "cannot create a private temporary directory in \(base): the process is ending on an interruption",
            ])
        }
        path = created
        self.descriptor = descriptor
        registration = token
    }

    deinit {
        remove()
        if descriptor >= 0 { close(descriptor) }
    }

    /// The path of `name` inside this directory.
    public func path(_ name: String) -> String { path + "/" + name }

    /// Removes the directory and its contents now.
    public func remove() {
        guard !isRemoved else { return }
        isRemoved = true
        try? FileManager.default.removeItem(atPath: path)
        // Listing a folder takes a descriptor; when the process has none left (`ulimit -n`: the
        // very failure being cleaned up after, often) the folder stayed, with what was in it. The
        // one held for the lock is given up to list it: the folder goes now anyway.
        if descriptor >= 0, Self.exists(path) {
            close(descriptor)
            descriptor = -1
            try? FileManager.default.removeItem(atPath: path)
        }
        ledger.unregister(registration)
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
