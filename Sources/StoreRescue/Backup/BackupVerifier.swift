import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The outcome of checking one backup. A bad backup is a result, not an error: `problems` says
/// what failed, one sentence each, naming the file and the expected and actual values.
public struct BackupVerification: Sendable, Equatable {
    public var backupPath: String
    public var manifestPath: String
    /// The manifest, when it could be read.
    public var manifest: BackupManifest?
    /// Everything that failed; empty when the backup is good.
    public var problems: [String]
    /// `PRAGMA integrity_check` of the decompressed snapshot: `ok`, its findings, or nil when the
    /// snapshot could not be decompressed.
    public var integrityCheck: String?

    public var isGood: Bool { problems.isEmpty }
    /// The problems with the backup's own bytes (gzip stream, sums, size), leaving out the
    /// snapshot's `integrity_check`, which a damaged store fails however well it was backed up.
    public var problemsWithTheBytes: [String] { problems.filter { !$0.contains(" fails PRAGMA ") } }
}

/// Checks a backup end to end without touching it: the gzip stream (CRC-32 and length of every
/// member), both SHA-256 sums and sizes against the manifest, and `PRAGMA integrity_check` of the
/// decompressed snapshot in a private temporary folder that is removed afterwards.
public enum BackupVerifier {
    /// Verifies the backup at `backup` (its `.gz`, or its `.manifest.json`).
    ///
    /// - Parameter temporaryDirectory: where the snapshot is decompressed (default `$TMPDIR`).
    /// - Throws: `BackupError.backupMissing` when there is no such backup; every other failure is
    ///   reported in the result.
    public static func verify(backup: String, temporaryDirectory: String? = nil,
                              progress: ((BackupProgress) -> Void)? = nil,
                              cancellation: CancellationFlag? = nil) throws -> BackupVerification {
        let paths = try BackupPaths(backup)
        var (manifest, problems) = readManifest(paths)
        if let manifest { problems += consistencyProblems(manifest, paths: paths) }

        let staging: PrivateTemporaryDirectory
        do { staging = try PrivateTemporaryDirectory(parent: temporaryDirectory, prefix: "verify") } catch {
            // The temporary folder's own option (a review's hint sent `verify` to "--to").
            throw BackupError.destinationUnusable(path: BackupRunner.absolutePath(temporaryDirectory ?? NSTemporaryDirectory()),
                                                  reason: "cannot create a private temporary folder there",
                                                  folder: .verifyTemporaryDirectory)
        }
        defer { staging.remove() }
        let output = try SafeFileOutput(destinationPath: staging.path("snapshot.sqlite"))
        // A snapshot SQLite could not open for its path's length failed its integrity_check
        // ("unable to open database file"): a good backup reported FAILED, exit 1 (review rv10 #2).
        do {
            try SQLitePathTooLongError.check(
                output.temporaryPath, folder: temporaryDirectory ?? SafeFileOutput.folder(of: staging.path),
                chosenWith: temporaryDirectory == nil ? .temporaryDirectoryVariable : .verifyTemporaryDirectory)
        } catch {
            output.discard()
            throw error
        }
        let outcome = try decompress(paths: paths, manifest: manifest, into: output, progress: progress, cancellation: cancellation)
        problems += outcome.problems
        var integrity: String?
        if outcome.isComplete {
            problems += snapshotProblems(path: output.temporaryPath, manifest: manifest)
            let size = manifest?.snapshotSize ?? 0
            progress?(BackupProgress(phase: .verify, completedBytes: size, totalBytes: size))
            integrity = try integrityCheck(path: output.temporaryPath, cancellation: cancellation)
            if integrity != "ok" {
                problems.append("the decompressed snapshot of \(paths.backup) fails PRAGMA integrity_check: \(integrity ?? "")")
            }
        }
        output.discard()
        return BackupVerification(backupPath: paths.backup, manifestPath: paths.manifest, manifest: manifest,
                                  problems: problems, integrityCheck: integrity)
    }

    /// Verifies a backup just taken whose snapshot is still on disk (`BackupResult.snapshot`):
    /// the gzip stream and both SHA-256 sums against the manifest, as `verify` does, but without
    /// writing a second decompressed copy — the stream's SHA-256 equal to the manifest's proves
    /// it holds the snapshot's bytes — then `integrity_check` of the snapshot itself.
    ///
    /// `upgrade` runs it while it migrates (it reads nothing the migration writes) and publishes
    /// nothing unless it passes.
    public static func verify(backup: BackupResult, snapshot: RetainedSnapshot, fullIntegrityCheck: Bool = true,
                              cancellation: CancellationFlag? = nil) throws -> BackupVerification {
        let paths = try BackupPaths(backup.backupPath)
        var (manifest, problems) = readManifest(paths)
        if let manifest {
            problems += consistencyProblems(manifest, paths: paths)
            if manifest != backup.manifest { problems.append("the manifest \(paths.manifest) changed since the backup was taken") }
            if manifest.snapshotSHA256 != snapshot.sha256 {
                problems.append("the manifest's snapshot SHA-256 (\(manifest.snapshotSHA256)) is not the retained snapshot's (\(snapshot.sha256))")
            }
        }
        let outcome = try decompress(paths: paths, manifest: manifest, into: nil, progress: nil, cancellation: cancellation)
        problems += outcome.problems
        var integrity: String?
        problems += outcome.isComplete ? snapshotProblems(path: snapshot.path, manifest: manifest) : []
        if outcome.isComplete && problems.isEmpty {
            integrity = try integrityCheck(path: snapshot.path, isQuick: !fullIntegrityCheck, cancellation: cancellation)
            if integrity != "ok" {
                let pragma = fullIntegrityCheck ? "integrity_check" : "quick_check"
                problems.append("the snapshot of \(paths.backup) fails PRAGMA \(pragma): \(integrity ?? "")")
            }
        }
        return BackupVerification(backupPath: paths.backup, manifestPath: paths.manifest, manifest: manifest,
                                  problems: problems, integrityCheck: integrity)
    }

    private struct OversizeSnapshot: Error {}

    struct DecompressionOutcome {
        var problems: [String]
        /// The gzip stream was read to its end without error.
        var isComplete: Bool
    }

    /// Decompresses the backup into `output`, comparing sizes and both SHA-256 sums with `manifest`.
    static func decompress(paths: BackupPaths, manifest: BackupManifest?, into output: SafeFileOutput?,
                           progress: ((BackupProgress) -> Void)?, cancellation: CancellationFlag?) throws -> DecompressionOutcome {
        var problems: [String] = []
        let sink = HashingFileSink(output: output)
        var written: Int64 = 0
        var lastReport = Date()
        let total = manifest?.snapshotSize ?? 0
        let summary: GzipReadSummary
        let snapshotSHA: String
        do {
            summary = try GzipReader.decompress(path: paths.backup) { bytes in
                if cancellation?.isCancelled == true { throw BackupError.interrupted }
                // Never write more than the manifest announces: a hostile .gz must not fill the disk.
                if let manifest, written + Int64(bytes.count) > manifest.snapshotSize { throw OversizeSnapshot() }
                try sink.push(bytes)
                written += Int64(bytes.count)
                if let progress, Date().timeIntervalSince(lastReport) > 0.2 {
                    lastReport = Date()
                    progress(BackupProgress(phase: .decompress, completedBytes: written, totalBytes: total))
                }
            }
            snapshotSHA = try sink.finish()
        } catch let error as GzipError {
            sink.stop()
            problems.append("gzip check failed: \(error)")
            // Still say whether the file is the one the manifest describes.
            if let manifest, let digest = try? FileDigest.of(path: paths.backup), digest.sha256 != manifest.backupSHA256 {
                problems.append("the SHA-256 of \(paths.backup) does not match the manifest (manifest \(manifest.backupSHA256), file \(digest.sha256))")
            }
            return DecompressionOutcome(problems: problems, isComplete: false)
        } catch is OversizeSnapshot {
            sink.stop()
            problems.append("\(paths.backup) decompresses to more than the manifest's snapshot size (\(manifest?.snapshotSize ?? 0) bytes); decompression was stopped")
            return DecompressionOutcome(problems: problems, isComplete: false)
        } catch {
            sink.stop()
            throw error
        }
        guard let manifest else { return DecompressionOutcome(problems: problems, isComplete: true) }
        if summary.compressedSize != manifest.backupSize {
            problems.append("the size of \(paths.backup) does not match the manifest (manifest \(manifest.backupSize) bytes, file \(summary.compressedSize))")
        }
        if summary.compressedSHA256 != manifest.backupSHA256 {
            problems.append("the SHA-256 of \(paths.backup) does not match the manifest (manifest \(manifest.backupSHA256), file \(summary.compressedSHA256))")
        }
        if summary.uncompressedSize != manifest.snapshotSize {
            problems.append("the decompressed snapshot's size does not match the manifest (manifest \(manifest.snapshotSize) bytes, decompressed \(summary.uncompressedSize))")
        }
        if snapshotSHA != manifest.snapshotSHA256 {
            problems.append("the decompressed snapshot's SHA-256 does not match the manifest (manifest \(manifest.snapshotSHA256), decompressed \(snapshotSHA))")
        }
        return DecompressionOutcome(problems: problems, isComplete: true)
    }

    /// The manifest beside a backup, or why it cannot be read (as the first problem).
    private static func readManifest(_ paths: BackupPaths) -> (BackupManifest?, [String]) {
        do {
            return (try BackupManifest.read(from: paths.manifest), [])
        } catch {
            return (nil, ["\(error)"])
        }
    }

    /// Fields of the manifest that contradict each other or the backup's name.
    static func consistencyProblems(_ manifest: BackupManifest, paths: BackupPaths) -> [String] {
        var problems: [String] = []
        let actualName = (paths.backup as NSString).lastPathComponent
        if manifest.backupFileName != actualName {
            problems.append("the manifest \(paths.manifest) names the backup \"\(manifest.backupFileName)\", not \"\(actualName)\"")
        }
        // A hostile manifest may hold any numbers: multiply without trapping on overflow.
        let product = Int64(manifest.pageSize).multipliedReportingOverflow(by: Int64(manifest.pageCount))
        if product.overflow || product.partialValue != manifest.snapshotSize {
            problems.append("the manifest \(paths.manifest) is inconsistent: page size \(manifest.pageSize) × page count \(manifest.pageCount) ≠ snapshot size \(manifest.snapshotSize)")
        }
        // A store has at least one page, of a size SQLite allows: an empty "snapshot" passed
        // integrity_check (an empty file is an empty database) and a review's hand-made backup
        // replaced a store with a 0-byte file.
        if manifest.pageCount < 1 {
            problems.append("the manifest \(paths.manifest) records \(manifest.pageCount) pages: a store has at least one")
        }
        if !(512...65536).contains(manifest.pageSize) || manifest.pageSize & (manifest.pageSize - 1) != 0 {
            problems.append("the manifest \(paths.manifest) records a page size of \(manifest.pageSize): SQLite's are powers of two from 512 to 65536")
        }
        if manifest.formatVersion < 1 {
            problems.append("the manifest \(paths.manifest) has format version \(manifest.formatVersion): versions start at 1")
        }
        return problems
    }

    /// What the decompressed snapshot's own header contradicts in the manifest: no SQLite header
    /// at all, or another page size.
    static func snapshotProblems(path: String, manifest: BackupManifest?) -> [String] {
        guard let manifest else { return [] }
        guard let file = try? ReadableFile(path: path, followsSymlinks: false) else { return ["the decompressed snapshot cannot be read back"] }
        var header = [UInt8](repeating: 0, count: 100)
        let count = (try? header.withUnsafeMutableBytes { try file.read(into: $0) }) ?? 0
        guard count == 100, Array(header[0..<16]) == Array("SQLite format 3\u{0}".utf8) else {
            return ["the decompressed snapshot has no SQLite header (\(count < 100 ? "\(count) bytes" : "other bytes")): it is not a store"]
        }
        let raw = Int(header[16]) << 8 | Int(header[17])
        let pageSize = raw == 1 ? 65536 : raw
        return pageSize == manifest.pageSize ? [] : ["the snapshot's header says page size \(pageSize), the manifest \(manifest.pageSize)"]
    }

    /// `PRAGMA integrity_check` (or `quick_check`, which skips comparing indexes with their
    /// tables) of a private file, as one line: `ok` or the first findings.
    ///
    /// With `cancellation`, the check stops within about 20 ms of it being set: the b-tree check
    /// is one step of SQLite's program, which a progress handler cannot cut short (on a 600 MB
    /// snapshot `verify` ran on for a second past a SIGTERM, until the forced end), so a watcher
    /// interrupts it (`SQLiteConnection.interruptible`, as `salvage`'s and `migrate`'s checks).
    ///
    /// - Throws: `BackupError.interrupted` when the check was interrupted;
    ///   `SQLitePathTooLongError` when SQLite cannot open `path` for its length; any other
    ///   failure is the finding returned.
    static func integrityCheck(path: String, isQuick: Bool = false, cancellation: CancellationFlag? = nil) throws -> String {
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
            if let pause = TestPause.ofThisProcess { pauseOnce(pause, inside: connection) }
            let pragma = isQuick ? "quick_check" : "integrity_check"
            let rows = try connection.interruptible(by: cancellation) {
                try connection.rows("PRAGMA \(pragma)(20)", maximumRows: 20)
            }
            let lines = rows.compactMap { $0.first?.string }
            return lines.isEmpty ? "no result" : lines.joined(separator: "; ")
        } catch let error as SQLiteError where error.isInterrupt && cancellation?.isCancelled == true {
            throw BackupError.interrupted
        } catch let error as SQLitePathTooLongError {
            // Not a finding: the check never ran (callers check the path first).
            throw error
        } catch {
            return "\(error)"
        }
    }

    /// **Test hook** (`TestPause.Point.integrityCheck`): pauses the first statement `connection`
    /// runs once it is under way, at SQLite's first call of its progress handler; the handler
    /// never stops anything.
    private static func pauseOnce(_ pause: @escaping @Sendable (TestPause.Point) -> Void, inside connection: SQLiteConnection) {
        var isReached = false
        connection.setProgressHandler(every: 1_000) {
            if !isReached {
                isReached = true
                pause(.integrityCheck)
            }
            return false
        }
    }
}

/// A backup's `.gz` and `.manifest.json`, from either path.
struct BackupPaths {
    var backup: String
    var manifest: String

    init(_ given: String) throws {
        var absolute = BackupRunner.absolutePath(given)
        // A symbolic link at the path given (`latest.gz` → the newest backup) is resolved once,
        // here: the backup is its target, and the manifest is the one beside the target (a
        // review's good backup verified as bad, its manifest looked for beside the link).
        // Everything after reads the resolved path; a refusal names the link, as given.
        let named = absolute
        var info = stat()
        if lstat(absolute, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
            guard let resolved = realpath(absolute, nil) else { throw BackupError.backupMissing(path: named) }
            absolute = String(cString: resolved)
            free(resolved)
        }
        if absolute.hasSuffix(".manifest.json") {
            manifest = absolute
            backup = String(absolute.dropLast(".manifest.json".count)) + ".gz"
        } else {
            backup = absolute
            manifest = BackupManifest.manifestPath(forBackup: absolute)
        }
        // A backup must be a regular file: a FIFO would block the read and a device such as
        // /dev/zero would never end. (Named by the link given for it, if one was.)
        let refused = absolute == backup ? named : backup
        switch BoundedFile.kind(of: backup) {
        case .regularFile: break
        case .missing: throw BackupError.backupMissing(path: refused)
        case .directory: throw BackupError.backupNotARegularFile(path: refused, kind: "a folder")
        case .other: throw BackupError.backupNotARegularFile(path: refused, kind: "a FIFO, socket or device")
        }
    }
}
