import Foundation

/// **Test hook** — inert unless `STORERESCUE_TEST_PAUSE` is set; never set it in production.
///
/// `STORERESCUE_TEST_PAUSE=<point>:<marker path>` stops the process's command at `point`
/// (`before-final-publish` or `after-final-publish`: just before the section that puts the
/// command's final result in place starts, or just after it has returned; `integrity-check`:
/// inside the SQLite check of a backup's snapshot, once it has begun): the hook creates the
/// marker file, then waits until the test removes it (at most 60 s). The end-to-end tests send
/// their signals there, which puts a run deterministically in the window between a publish and
/// the report of it (`FinalPublishInterruptionTests`), or in the middle of a check
/// (`IntegrityCheckInterruptionTests`).
enum TestPause {
    enum Point: String, Sendable {
        case beforeFinalPublish = "before-final-publish"
        case afterFinalPublish = "after-final-publish"
        /// `BackupVerifier.integrityCheck` is running its `PRAGMA`: reached from SQLite's first
        /// call of its progress handler, so the check is provably under way (and held there).
        case integrityCheck = "integrity-check"
        /// `InterruptionLedger.terminate` holds new sections and starts waiting (unit tests only).
        case terminationWaiting = "termination-waiting"
        /// `InterruptionLedger.terminate` found the final result in place and starts waiting for
        /// the command to claim the outcome (unit tests only).
        case commandAwaited = "command-awaited"
    }

    /// The hook this process's `STORERESCUE_TEST_PAUSE` asks for, read once; nil in the normal case.
    static let ofThisProcess = fromEnvironment()

    /// The hook `STORERESCUE_TEST_PAUSE` asks for, or nil (the normal case).
    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> (@Sendable (Point) -> Void)? {
        guard let value = environment["STORERESCUE_TEST_PAUSE"], let colon = value.firstIndex(of: ":"),
              let point = Point(rawValue: String(value[..<colon])), [.beforeFinalPublish, .afterFinalPublish, .integrityCheck].contains(point)
        else { return nil }
        let marker = String(value[value.index(after: colon)...])
        guard !marker.isEmpty else { return nil }
        return { reached in
            guard reached == point else { return }
            guard FileManager.default.createFile(atPath: marker, contents: nil) else { return }
            let deadline = Date().addingTimeInterval(60)
            while FileManager.default.fileExists(atPath: marker), Date() < deadline { usleep(5_000) }
        }
    }
}
