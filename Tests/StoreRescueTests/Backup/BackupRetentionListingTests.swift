import Foundation
import Testing
@testable import StoreRescue

extension BackupRetentionTests {
    /// A backup folder that cannot be listed when `--keep` prunes (no file descriptor left:
    /// `ulimit -n`, or the system's table full) pruned nothing and said nothing (a review): the
    /// listing is now a note for the report, the backups all kept, and nothing thrown — the
    /// backup it follows succeeded.
    @Test func aListingWithNoFileDescriptorLeftIsANoteNotASilentKeep() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try BackupFixtures.makeStore(at: store, rows: 20)
        let folder = temp.path("b")
        _ = try Self.takeBackups(of: store, into: folder, reasons: ["manual", "manual", "manual"])
        let source = try SourceFile(path: store).path
        let listing = BackupRetention.listing(in: folder, of: source, listingNames: { _ throws(BoundedFile.Failure) in throw .tooManyOpenFiles })
        #expect(listing.entries.isEmpty)
        #expect(listing.notes == [
            "cannot list \(folder) to remove old backups: no file descriptor left (Too many open files); none were removed (raise the limit on open files, ulimit -n, for --keep to remove them)",
        ])
        // Listed as usual: three backups, no note.
        let listed = BackupRetention.listing(in: folder, of: source)
        #expect(listed.entries.count == 3 && listed.notes.isEmpty)
        // A folder that cannot be listed at all (here: a file) says why, and prunes nothing.
        let file = temp.path("not-a-folder")
        FileManager.default.createFile(atPath: file, contents: Data())
        let pruning = try BackupRetention.prune(folder: file, sourcePath: source, keep: 1)
        #expect(pruning.removed.isEmpty)
        #expect(pruning.notes.count == 1 && pruning.notes[0].hasPrefix("cannot list \(file) to remove old backups: cannot be read: Not a directory"), "\(pruning.notes)")
    }
}
