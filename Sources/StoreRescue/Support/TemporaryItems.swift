import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one rule for every temporary file and folder StoreRescue creates, so that what a killed
/// run leaves behind is found and removed by the next run, and another live process's never is.
///
/// - **Name**: `<label>.storerescue-tmp-<pid>-<UTC time>-<random>`, e.g.
///   `.default.store.20250131T091500Z.gz.storerescue-tmp-4242-20261123T101500Z-k3j2h1` beside a
///   backup, `verify.storerescue-tmp-4242-20261123T101500Z-Ab12Cd/` in `$TMPDIR`.
/// - **Lock**: the creating process holds `flock(LOCK_EX)` on the item itself (the file's or the
///   folder's descriptor) for as long as the item lives; the kernel drops it when the process
///   dies, however it dies.
/// - **Sweep**: the first time a process creates a temporary in a folder (`$TMPDIR`, a backup
///   folder, a store's folder), it first removes that folder's stale ones: names of the pattern,
///   owned by this user, untouched for `staleAge`, whose lock it can take (so no live process holds
///   it). What was removed is kept in `removedStaleItems` for the command's report.
/// - **Registry**: live items are registered in `ledger`, so an interrupted command (a second
///   SIGINT, or a read that will not return) can remove them all before it exits
///   (`InterruptionLedger.terminate`); the few steps that must not be cut in half run as
///   `uninterruptible` sections, and the one that puts the command's final result in place says
///   so (`uninterruptible(publishing:)`), so that an interruption after it never reports
///   "nothing was replaced".
///
/// `SafeFileOutput` and `PrivateTemporaryDirectory` follow the rule; new code creates its
/// temporaries through them:
///
/// ```swift
/// let work = try PrivateTemporaryDirectory(parent: folder, prefix: ".salvage")  // swept, locked, registered
/// let output = try SafeFileOutput(destinationPath: folder + "/salvaged.sqlite")   // likewise
/// try output.write(bytes)
/// try TemporaryItems.uninterruptible(publishing: PublishedResult(path: output.destinationPath, description: "the salvaged store")) {
///     try output.publish()
/// }
/// print(TemporaryItems.removedStaleItems)  // what earlier, killed runs had left, now removed
/// ```
public enum TemporaryItems {
    /// The marker every temporary's name carries.
    public static let marker = ".storerescue-tmp-"
    /// How long a temporary must have been left untouched before a sweep may remove it (its
    /// lock, not this age, is what tells a live process's item from a dead one's; the age only
    /// covers the instant between creating an item and locking it).
    public static let staleAge: TimeInterval = 60

    // MARK: Names

    /// A new temporary name: `label`, the marker, this process's id, the UTC time and `random`.
    public static func name(label: String, random: String) -> String {
        "\(label)\(marker)\(getpid())-\(timestamp(Date()))-\(random)"
    }

    /// `text` cut to at most `maximumBytes` bytes of UTF-8, on a character boundary: a label for
    /// a temporary's name that leaves room for the rest within a file name's 255 bytes.
    public static func label(_ text: String, maximumBytes: Int) -> String {
        guard text.utf8.count > maximumBytes else { return text }
        var label = ""
        var bytes = 0
        for character in text {
            bytes += character.utf8.count
            guard bytes <= maximumBytes else { break }
            label.append(character)
        }
        return label
    }

    /// The owner process id of a temporary's name, or nil for a name that is not one.
    public static func ownerProcess(ofName name: String) -> Int32? {
        guard let range = name.range(of: marker, options: .backwards) else { return nil }
        let parts = name[range.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, let pid = Int32(parts[0]), parts[1].count == 16, parts[1].hasSuffix("Z"),
              !parts[2].isEmpty, parts[2].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { return nil }
        return pid
    }

    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    // MARK: Locks

    /// Takes the item's lock on `descriptor` (a file's or a folder's) without waiting.
    @discardableResult
    static func lock(_ descriptor: Int32) -> Bool {
        flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    // MARK: Sweeping

    nonisolated(unsafe) private static var sweptFolders: Set<String> = []
    nonisolated(unsafe) private static var removed: [String] = []
    private static let state = NSLock()

    /// Stale temporaries removed by this process so far (paths), oldest sweep first.
    public static var removedStaleItems: [String] {
        state.lock()
        defer { state.unlock() }
        return removed
    }

    /// Sweeps `folder` unless this process already has. Called before creating a temporary there.
    static func sweepOnce(folder: String) {
        let key = URL(fileURLWithPath: folder).standardizedFileURL.path
        state.lock()
        let isFirst = sweptFolders.insert(key).inserted
        state.unlock()
        if isFirst { sweep(folder: folder) }
    }

    /// Removes the stale temporaries in `folder` (see the type's discussion) and returns them.
    @discardableResult
    public static func sweep(folder: String, olderThan age: TimeInterval = staleAge, now: Date = Date()) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var swept: [String] = []
        for name in names where ownerProcess(ofName: name) != nil {
            let path = (folder as NSString).appendingPathComponent(name)
            if removeIfStale(path, olderThan: age, now: now) { swept.append(path) }
        }
        if !swept.isEmpty {
            state.lock()
            removed += swept
            state.unlock()
        }
        return swept
    }

    private static func removeIfStale(_ path: String, olderThan age: TimeInterval, now: Date) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_uid == geteuid() else { return false }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFDIR else { return false }  // never a link a stranger planted
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        guard now.timeIntervalSince1970 - modified >= age else { return false }
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (type == S_IFDIR ? O_DIRECTORY : 0))
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard lock(descriptor) else { return false }  // a live process holds it
        if type == S_IFDIR {
            return (try? FileManager.default.removeItem(atPath: path)) != nil
        }
        return unlink(path) == 0
    }

    // MARK: Live items

    /// The process's interruption bookkeeping: its live temporaries, its publish sections, its
    /// final result once in place, and who reports its outcome (`InterruptionLedger`).
    public static let ledger = InterruptionLedger(pause: TestPause.ofThisProcess)

    /// Records a live temporary; returns the token that `unregister` takes, or nil once the
    /// process is ending on an interruption (the caller removes what it created and throws).
    static func register(_ path: String, isFolder: Bool) -> Int? {
        ledger.register(path, isFolder: isFolder)
    }

    static func unregister(_ token: Int) {
        ledger.unregister(token)
    }

    /// The live temporaries of this process (paths).
    public static var liveItems: [String] { ledger.liveItems }

    /// Runs `body` so that an interruption waits for it to finish (a publish: link, rename,
    /// removing a replaced store's stale sidecars), then lets it go on.
    ///
    /// - Parameter result: for the step that puts the command's final result in place: recorded
    ///   when `body` returns, after which an interruption lets the command report
    ///   (`InterruptionLedger.uninterruptible(publishing:_:)`).
    public static func uninterruptible<Result>(publishing result: PublishedResult? = nil, _ body: () throws -> Result) rethrows -> Result {
        try ledger.uninterruptible(publishing: result, body)
    }

    /// Removes every live temporary now (a process ending normally: what is still registered
    /// is garbage; a published item is not registered). Returns the paths removed.
    @discardableResult
    public static func removeLiveItems() -> [String] {
        ledger.removeLiveItemsNow()
    }
}
