import Foundation
import Testing
@testable import StoreRescue

/// `UpgradeOptions.keepBackups` prunes the store's older backups after the pre-upgrade one, as
/// `backup --keep` does; what the pruning removed and what it could not do reach the upgrade's
/// notes (JSON `notes`, text `note:` lines) as they reach `backup`'s report (`pruned`,
/// `retentionNotes`). The upgrade dropped both (a review). The CLI's `upgrade` has no `--keep`:
/// only the library prunes.
@Suite struct UpgradeBackupRetentionTests {
    @Test func theBackupsAnUpgradePrunesAreInItsNotes() throws {
        let fixture = try UpgradeFixture()
        let store = try fixture.journalStore()
        let older = try BackupRetentionTests.takeBackups(of: store, into: fixture.backups, reasons: ["manual", "manual"])
        var options = fixture.options()
        options.keepBackups = 1
        let report = StoreUpgrader.upgrade(store: store, catalog: try fixture.journalCatalog, options: options)
        #expect(report.status == .upgraded, "\(report.error?.message ?? "")")
        let removed = older.map { "removed an older backup of the store (keep 1): \($0.backupPath)" }
        #expect(Set(report.notes.filter { $0.hasPrefix("removed an older backup") }) == Set(removed), "\(report.notes)")
        #expect(older.allSatisfy { !FileManager.default.fileExists(atPath: $0.backupPath) })
        let text = report.renderText()
        for line in removed { #expect(text.contains("  note: \(line)\n"), "\(text)") }
    }

    /// A backup folder this user may write but not list (mode 0300): the backup is written, the
    /// pruning cannot weigh anything, and says so. Root lists any folder, so the upgrade runs as
    /// `nobody` (setpriv) through the probe, which calls the library with `keepBackups`.
    @Test(.enabled(if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv to run as nobody when run as root"))
    func aPruningThatCannotListTheFolderIsANoteOfTheUpgrade() throws {
        let fixture = try UnwritableStoreTests.Fixture()
        chmod(fixture.backups, 0o300)
        defer { chmod(fixture.backups, 0o700) }
        let arguments = ["upgrade", fixture.store, fixture.catalog, fixture.backups, "1"]
        let result = geteuid() == 0
            ? try CommandRunner.run(program: "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", BackupFixtures.probePath] + arguments)
            : try CommandRunner.run(program: BackupFixtures.probePath, arguments)
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let report = try result.json()
        #expect(report["status"] as? String == "upgraded")
        let note = "cannot list \(fixture.backups) to remove old backups: cannot be read: Permission denied; none were removed"
        #expect((report["notes"] as? [String])?.contains(note) == true, "\(report["notes"] ?? "")")
        #expect(result.stderr.contains("  note: \(note)\n"), "\(result.stderr)")
    }
}
