import Foundation
import SRSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The fallback's journal: written into the quarantine folder before the store set is moved, so
/// that a run killed in the middle of the swap is finished (or undone) by the next run with the
/// same backup folder, and reported.
///
/// The swap moves the store's sidecars (only when SQLite cannot settle the store), then links the
/// main file into the quarantine and renames the clean store over it. After a kill:
/// - the clean store (its device and inode are recorded) is at the path: the swap happened; the
///   incident is marked complete;
/// - the original main file is still at the path: the swap did not happen; sidecars already moved
///   are moved back beside it (the store is again exactly as found), a link of the main file in
///   the quarantine is removed (the file itself stays at its path), and the attempt is marked
///   abandoned. The new run then starts from the original.
struct FallbackIntent: Codable, Equatable {
    struct Move: Codable, Equatable {
        var from: String
        var to: String
    }

    static let fileName = "intent.json"
    var formatVersion = 1
    var store: String
    var quarantine: String
    /// The clean store's device and inode (it keeps them when renamed into place).
    var cleanDevice: UInt64
    var cleanInode: UInt64
    /// Sidecars moved into the quarantine, in order (only when the store could not be settled).
    var sidecarMoves: [Move]
    /// The main file's move.
    var mainMove: Move
    /// `preparing` (the quarantine folder is made; nothing has moved), `replacing`, `done`,
    /// `abandoned`.
    var state: String
    var createdAt: String
    /// The main file as it was under the lock, once preserved and before any sidecar moved
    /// (size, modification time in nanoseconds): an undo puts moved sidecars back only beside
    /// that same, unchanged file. An app that opened the store after a kill there wrote to the
    /// main file without its `-wal`; putting the old `-wal` back then would mix two states (a
    /// review's rerun did).
    var mainSize: Int64?
    var mainModified: Int64?
    /// The copy of the main file a damaged store's `-wal` was folded into
    /// (`StoreReplacement.Fold`), recorded before it took the store's name. Found at the path
    /// after a kill, it is the store's content as SQLite read it, whatever sidecars moved: it
    /// stays, and so do they.
    var foldedDevice: UInt64?
    var foldedInode: UInt64?

    /// The size and modification time (ns) of the file at `path`, not following a link.
    static func state(of path: String) -> (size: Int64, modified: Int64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    func write(into folder: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        try Self.writeFile(folder + "/" + Self.fileName, data + Data("\n".utf8))
    }

    /// Writes a small file in one piece (temporary, fsync, rename), replacing an older one.
    static func writeFile(_ path: String, _ data: Data) throws {
        do {
            let output = try SafeFileOutput(destinationPath: path)
            try output.write([UInt8](data))
            try output.publish(replacingExisting: true)
        } catch {
            throw UpgradeError.quarantineFailed(path: path, reason: "\(error)")
        }
    }

    /// Finds unfinished fallbacks of `store` under `backupFolder/quarantine/` and finishes or
    /// undoes each; returns one line per fallback dealt with.
    static func finishInterrupted(store: String, backupFolder: String) throws -> [String] {
        let root = backupFolder + "/quarantine"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        var lines: [String] = []
        for name in names.sorted() {
            let folder = root + "/" + name
            guard let lock = QuarantineLock(folder: folder) else { continue }  // a live run's
            defer { lock.release() }
            if let line = try finish(folder: folder, store: store) { lines.append(line) }
        }
        return lines
    }

    /// Finishes or undoes the unfinished fallback of `store` recorded in `folder` (the caller
    /// holds the folder: `QuarantineLock`); nil when there is none. Also what a run whose swap
    /// failed (not killed) does at once for its own folder.
    static func finish(folder: String, store: String) throws -> String? {
        let path = folder + "/" + fileName
        if !FileManager.default.fileExists(atPath: path), IncidentFiles.state(in: folder) == nil {
            // A run killed between making its quarantine folder and publishing its journal (a
            // CI run's kill landed there): nothing moved into it and nothing says what it was.
            // Its journal's partial temporary goes (the folder is held: no process writes it),
            // then the folder, if that left it empty; a folder holding anything else stays.
            _ = TemporaryItems.sweep(folder: folder, olderThan: 0)
            guard (try? FileManager.default.contentsOfDirectory(atPath: folder))?.isEmpty == true, rmdir(folder) == 0 else { return nil }
            return "removed an empty quarantine folder a fallback left when it was stopped before its first record (nothing had moved): \(folder)"
        }
        guard let data = try? BoundedFile.contents(of: path, limit: 1 << 20, followsSymlinks: false),
              var intent = try? JSONDecoder().decode(FallbackIntent.self, from: data),
              intent.store == store, intent.state != "abandoned"
        else { return nil }
        if intent.state == "preparing" {
            // Stopped before anything moved: the store was never touched. Its partial
            // salvage temporaries go (no process holds them); what it published stays.
            _ = TemporaryItems.sweep(folder: folder, olderThan: 0)
            intent.state = "abandoned"
            try intent.write(into: folder)
            try IncidentFiles.mark("abandoned", in: folder)
            return "found a fallback that stopped while it prepared, before anything was moved (the store was not touched); its folder is kept, marked abandoned: \(folder)"
        }
        if intent.state == "done", IncidentFiles.state(in: folder) == "pending" {
            // Killed after the swap and its journal, before the incident's last rewrite.
            try IncidentFiles.mark("complete", in: folder)
            return "finished an interrupted fallback's records: the clean store was in place; its incident is now marked complete: \(folder)"
        }
        guard intent.state == "replacing" else { return nil }
        var info = stat()
        let isClean = lstat(store, &info) == 0 && UInt64(info.st_dev) == intent.cleanDevice && UInt64(info.st_ino) == intent.cleanInode
        if isClean {
            intent.state = "done"
            try intent.write(into: folder)
            try IncidentFiles.mark("complete", in: folder)
            return "finished an interrupted fallback: the clean store was already in place; incident in \(folder)"
        }
        if let device = intent.foldedDevice, let inode = intent.foldedInode,
           StoreReplacement.FileIdentity(path: store) == StoreReplacement.FileIdentity(device: device, inode: inode)
        {
            // Killed after the -wal (or a hot -journal) was folded into a copy of the main file now at the path:
            // that copy holds the store's content as SQLite read it, so the store is left as
            // it is; a sidecar still beside it adds nothing (its frames are in the copy), one
            // moved stays in the quarantine with the original main file.
            intent.state = "abandoned"
            try intent.write(into: folder)
            try IncidentFiles.mark("abandoned", in: folder)
            let kept = intent.sidecarMoves.map(\.to).filter { FileManager.default.fileExists(atPath: $0) }
            return "undid an interrupted fallback: the store's -wal (or hot -journal) had been folded into a copy of its main file, which is in the store's place "
                + "and holds its content as it was; the store stays so\(kept.isEmpty ? "" : "; the sidecars moved then stay in \(folder) (\(kept.map { ($0 as NSString).lastPathComponent }.joined(separator: ", "))) with the original main file"); "
                + "the original as it was is also the backup \(folder)/incident.json names"
        }
        // Not swapped: put back what moved, then drop the quarantine's link to the main file.
        // Only beside the main file as it was when they moved: one written since (an app
        // opened the store without its -wal) keeps the moved sidecars out of its way.
        if let size = intent.mainSize, let modified = intent.mainModified, let now = Self.state(of: store),
           now.size != size || now.modified != modified
        {
            intent.state = "abandoned"
            try intent.write(into: folder)
            try IncidentFiles.mark("abandoned", in: folder)
            let kept = intent.sidecarMoves.map(\.to).filter { FileManager.default.fileExists(atPath: $0) }
            return "undid an interrupted fallback, but the store was written after it stopped (its main file changed): "
                + "its sidecars moved then stay in \(folder) (\(kept.map { ($0 as NSString).lastPathComponent }.joined(separator: ", "))), "
                + "never put back beside a file they no longer belong to; the original as it was is the backup \(folder)/incident.json names"
        }
        for move in intent.sidecarMoves.reversed() {
            var there = stat(), here = stat()
            guard lstat(move.to, &there) == 0, lstat(move.from, &here) != 0 else { continue }
            do {
                try FileMover.move(move.to, to: move.from)
            } catch {
                throw UpgradeError.interruptedFallback(path: store, intent: path, detail: "cannot move \(move.to) back: \(error)")
            }
        }
        var linked = stat(), original = stat()
        if lstat(intent.mainMove.to, &linked) == 0, lstat(store, &original) == 0,
           linked.st_dev == original.st_dev, linked.st_ino == original.st_ino {
            unlink(intent.mainMove.to)  // a second name of the store's own file, not a copy
        } else if lstat(intent.mainMove.to, &linked) == 0 {
            // A copy (the quarantine is on another file system) of a file still at its path.
            let kept = intent.mainMove.to + ".incomplete-copy"
            rename(intent.mainMove.to, kept)
        }
        intent.state = "abandoned"
        try intent.write(into: folder)
        try IncidentFiles.mark("abandoned", in: folder)
        return "undid an interrupted fallback (the store had not been replaced; moved sidecars put back): \(folder)"
    }
}

/// A quarantine folder a live run is using: an exclusive `flock` on the folder, held until the
/// run's fallback ends, or the process dies (the kernel releases it then). `finishInterrupted`
/// leaves a folder whose lock it cannot take: a second run of the same store, started while
/// the first prepares or swaps, must not undo the first's work as if it had been killed.
final class QuarantineLock {
    private var descriptor: Int32

    /// Nil when another process holds the folder (or it cannot be opened).
    init?(folder: String) {
        let opened = open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard opened >= 0 else { return nil }
        guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
            close(opened)
            return nil
        }
        descriptor = opened
    }

    deinit { release() }

    func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }
}

/// The incident's two files in a quarantine folder.
enum IncidentFiles {
    static let json = "incident.json"
    static let text = "incident.txt"

    static func write(_ incident: IncidentReport, into folder: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try FallbackIntent.writeFile(folder + "/" + json, try encoder.encode(incident) + Data("\n".utf8))
        try FallbackIntent.writeFile(folder + "/" + text, Data(incident.renderText().utf8))
    }

    /// The `state` `incident.json` records (nil when there is none, or it cannot be read).
    static func state(in folder: String) -> String? {
        guard let bytes = try? BoundedFile.contents(of: folder + "/" + json, limit: 16 << 20, followsSymlinks: false),
              let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
        else { return nil }
        return object["state"] as? String
    }

    /// Rewrites `incident.json`'s state: `complete` after a resumed swap or a resumed record,
    /// `abandoned` after an undone one (the store was not replaced; `incident.txt` keeps the
    /// text of the attempt).
    static func mark(_ state: String, in folder: String) throws {
        let path = folder + "/" + json
        guard let bytes = try? BoundedFile.contents(of: path, limit: 16 << 20, followsSymlinks: false),
              var object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
        else { return }
        object["state"] = state
        // The text's state paragraph too (`IncidentReport.stateLine`).
        let textPath = folder + "/" + text
        if let old = try? BoundedFile.contents(of: textPath, limit: 16 << 20, followsSymlinks: false),
           var body = String(data: old, encoding: .utf8)
        {
            if body.hasPrefix("State: "), let end = body.range(of: "\n\n") { body = String(body[end.upperBound...]) }
            try FallbackIntent.writeFile(textPath, Data(((IncidentReport.stateLine(state).map { $0 + "\n\n" } ?? "") + body).utf8))
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try FallbackIntent.writeFile(path, data + Data("\n".utf8))
    }
}

/// A path quoted for a POSIX shell.
enum ShellQuote {
    static func quote(_ text: String) -> String {
        let safe = text.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "/._-+:@%".unicodeScalars.contains($0) }
        return safe && !text.isEmpty ? text : "'" + text.replacingLiterally("'", with: "'\\''") + "'"
    }
}
