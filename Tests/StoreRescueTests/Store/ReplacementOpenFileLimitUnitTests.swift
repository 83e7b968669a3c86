import Foundation
import Testing
@testable import StoreRescue

/// The pieces of a replacement's "no file descriptor left" reached only inside the library:
/// SQLite's refusal while settling, and the folder opened for the `fsync` (`FolderSync`).
@Suite struct ReplacementOpenFileLimitUnitTests {
    /// SQLite refusing to open the store or its `-wal`/`-shm` while settling, for want of a
    /// descriptor (`SQLITE_CANTOPEN` with `EMFILE`), is the limit's (74), not a store that
    /// cannot be checkpointed (65, "a damaged store is saved with --on-failure clean").
    @Test func settlingWithNoFileDescriptorLeftIsTheLimitNotTheStore() {
        let replacement = StoreReplacement(storePath: "/data/default.store")
        let refused = SQLiteError(resultCode: 14, message: "unable to open database file", systemErrno: EMFILE)
        let error = replacement.notSettled(refused, reason: refused.message)
        #expect(error == .cannotRead(path: "/data/default.store", code: EMFILE))
        #expect(error.exitStatus == .ioError)
        #expect(error.description.contains("no file descriptor left"))
        let damaged = SQLiteError(resultCode: 11, message: "database disk image is malformed")
        #expect(replacement.notSettled(damaged, reason: "malformed") == .cannotSettle(path: "/data/default.store", reason: "malformed"))
    }

    /// A folder opened for the `fsync` that makes a new name durable: no descriptor left throws
    /// (the caller fails the write before the name is made); another failure does not.
    @Test func aFolderSyncWithNoFileDescriptorLeftThrows() throws {
        let temp = try TemporaryDirectory()
        let error = #expect(throws: POSIXFailure.self) {
            try FolderSync(temp.url.path, opening: { _ in errno = EMFILE; return -1 })
        }
        #expect(error?.code == EMFILE)
        #expect(error?.description == "open folder \(temp.url.path): Too many open files")
        let unreadable = try FolderSync(temp.url.path, opening: { _ in errno = EACCES; return -1 })
        unreadable.sync()  // best effort: nothing to sync, nothing thrown
        try FolderSync(temp.url.path).sync()
    }
}
