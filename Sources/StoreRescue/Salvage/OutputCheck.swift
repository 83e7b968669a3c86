import Foundation
import SRSQLite

/// SQLite's `PRAGMA quick_check` of a salvage's new file, run on a thread of its own while the
/// salvage goes on writing through SQLite.
///
/// What it checks, and why that is the check the salvage owes: salvage writes most of the new
/// file's pages itself (`PageAppender`: table and index trees, pointer-map entries, the header),
/// and SQLite must vouch for every one of them before the file is published. Once the last of
/// those pages is in the file, everything after — rows set aside, rows found by the sweep,
/// deferred `CREATE INDEX`es, the dangling-reference fix-ups, `Z_MAX`, the model cache, the
/// incremental vacuum — is SQLite's own writing, done through its b-tree code (while the check
/// reads: should it meet a bad page first, the check's verdict is still what the salvage
/// reports, `CoreDataSalvageOutput.abandon(after:)`). So the check is of the file as it stood then: the new store
/// is in WAL mode by that time, this connection's read transaction begins on the caller's thread
/// before SQLite writes anything more (`init`), and the salvage's own connection writes into the
/// `-wal`, which no checkpoint copies into the main file under this snapshot while it is read.
/// The check and SQLite's remaining work then take a core each. What it costs: SQLite's later
/// writes go through the `-wal` and a checkpoint instead of straight into the file, and the
/// final `fsync` finds those pages still to flush. On the benchmark store the salvage went from
/// 0.35 to 0.31 s, on one ten times larger from 3.29 to 2.91 s (Docs/SALVAGE.md, "Performance").
///
/// The result is what `PRAGMA quick_check(10)` returned (`["ok"]` when sound). A cancellation
/// (SIGINT, SIGTERM) while the salvage waits for it stops the check within about 20 ms, where
/// SQLite's check would not notice it (it runs in one virtual-machine step, between the progress
/// handler's calls). A salvage that fails before it waits calls `stop`: SQLite is interrupted and
/// the thread waited for, so the file can be removed.
///
/// Threads: the connection is opened and its read transaction begun on the caller's thread,
/// then used by the check's thread alone until `wait` or `stop` returns; `stop` calls only
/// `sqlite3_interrupt`, which SQLite allows from another thread while the connection is open.
final class OutputCheck: @unchecked Sendable {
    private let connection: SQLiteConnection
    private var task: BackgroundTask<[String]>?

    /// Begins a read transaction on `path` (a WAL-mode database) and starts the check of it on a
    /// thread of its own.
    ///
    /// - Throws: `SQLiteError` when the file cannot be opened or read.
    init(path: String) throws {
        connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))
        // `BEGIN` alone takes no snapshot: the first read does.
        try connection.execute("BEGIN")
        _ = try connection.scalar("SELECT count(*) FROM sqlite_schema")
        let handoff = Handoff(connection)
        task = BackgroundTask {
            guard let connection = handoff.connection else { return [] }
            // The thread lets go of the connection before its result is seen: the caller's
            // reference is then the last, and the connection closes on the caller's thread when
            // it lets go too — before the salvage's own connection closes and removes the WAL,
            // which SQLite does only when it is the last connection open on the file.
            defer {
                try? connection.execute("COMMIT")
                handoff.connection = nil
            }
            return try Self.verdict(of: connection)
        }
    }

    /// What `PRAGMA quick_check(10)` says of the database `connection` opened: `["ok"]` when it
    /// is sound. A page SQLite cannot take for a b-tree page at all stops the check with
    /// "malformed" instead of a row: that is a finding too, returned as one (not thrown, where it
    /// would read as a failure to write the file).
    ///
    /// With `cancellation`, the check stops within about 20 ms of it (`SQLiteError.isInterrupt`):
    /// the b-tree check is one step of SQLite's program, which a progress handler cannot cut
    /// short (on a 3 GB file it ran 1.6 s past a SIGTERM): `SQLiteConnection.interruptible`.
    static func verdict(of connection: SQLiteConnection, cancellation: CancellationFlag? = nil) throws -> [String] {
        do {
            return try connection.interruptible(by: cancellation) {
                try connection.rows("PRAGMA quick_check(10)").compactMap { $0.first?.string }
            }
        } catch let error as SQLiteError where error.isCorruption {
            return [error.message]
        }
    }

    /// The salvage's refusal of the file at `path` for `verdict`; nil when it is `["ok"]`.
    static func refusal(_ verdict: [String], path: String) -> SalvageError? {
        verdict == ["ok"] ? nil : .verificationFailed(path: path, reason: "quick_check: \(verdict.joined(separator: "; "))")
    }

    /// The connection, passed to the check's thread (which alone uses it until `wait` or `stop`).
    private final class Handoff: @unchecked Sendable {
        var connection: SQLiteConnection?
        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    /// Waits for the check; returns what `quick_check` said (`["ok"]` when the file is sound).
    ///
    /// - Throws: `SalvageError.interrupted` when `cancellation` is set meanwhile (the check is
    ///   stopped); `SQLiteError` when SQLite could not finish the check (it failed to read the file).
    func wait(cancellation: CancellationFlag?) throws -> [String] {
        guard let task else { preconditionFailure("waited for once") }
        if let cancellation {
            repeat {
                if cancellation.isCancelled {
                    stop()
                    throw SalvageError.interrupted
                }
            } while !task.hasEnded(waitingUntil: Date(timeIntervalSinceNow: 0.02))
        }
        self.task = nil
        return try task.wait()
    }

    /// Interrupts the check and waits for its thread to end (nothing when already waited for).
    ///
    /// The interrupt is repeated until the thread ends: one that lands before `quick_check` has
    /// begun is dropped by SQLite (it clears the flag when a statement starts on a connection
    /// running none), and the check would then run to its end.
    func stop() {
        guard let task else { return }
        self.task = nil
        repeat {
            connection.interrupt()
        } while !task.hasEnded(waitingUntil: Date(timeIntervalSinceNow: 0.005))
        _ = try? task.wait()
    }

    deinit { stop() }
}
