import Foundation
import Testing
@testable import StoreRescue

/// Moving a file StoreRescue must keep: a new name, never an overwritten one, and the source
/// gone only once its bytes are safe at the destination (checked when copied across file systems).
@Suite struct FileMoverTests {
    /// /dev/shm is usually a tmpfs: another file system than the temporary folder's.
    static var sharedMemoryIsAnotherFileSystem: Bool {
        var shm = stat(), temporary = stat()
        return stat("/dev/shm", &shm) == 0 && stat(NSTemporaryDirectory(), &temporary) == 0 && shm.st_dev != temporary.st_dev
            && access("/dev/shm", W_OK) == 0
    }

    private let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    private func source(in dir: TemporaryDirectory) throws -> String {
        let path = dir.path("s.sqlite-wal")
        try payload.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func onOneFileSystemTheNameMovesAndTheBytesStay() throws {
        let dir = try TemporaryDirectory()
        let from = try source(in: dir)
        var before = stat()
        lstat(from, &before)
        let move = try FileMover.move(from, to: dir.path("moved"))
        #expect(move == FileMover.Move(source: from, destination: dir.path("moved"), wasCopied: false))
        var after = stat()
        #expect(lstat(dir.path("moved"), &after) == 0 && after.st_ino == before.st_ino, "the same file, not a copy")
        #expect(!ReplacementFixtures.exists(from))
    }

    @Test func aTakenNameIsRefusedAndBothFilesStay() throws {
        let dir = try TemporaryDirectory()
        let from = try source(in: dir)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: dir.path("taken")))
        for sameFileSystemMove in [FileMover.linkOrRename, { _, _ in EXDEV }] {
            let error = #expect(throws: FileMoveError.self) {
                try FileMover.move(from, to: dir.path("taken"), sameFileSystemMove: sameFileSystemMove)
            }
            #expect(error == .destinationExists(path: dir.path("taken")))
            #expect(error?.description == "cannot move a file to \(dir.path("taken")): that name is taken; nothing was overwritten")
            #expect(error?.exitStatus == .cannotCreateOutput)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("taken"))) == Data("keep".utf8))
            #expect(try Data(contentsOf: URL(fileURLWithPath: from)) == payload)
        }
    }

    @Test func acrossFileSystemsTheBytesAreCopiedCheckedThenTheSourceRemoved() throws {
        let dir = try TemporaryDirectory()
        let from = try source(in: dir)
        chmod(from, 0o640)
        let destination = dir.path("elsewhere/s.sqlite-wal")
        try FileManager.default.createDirectory(atPath: dir.path("elsewhere"), withIntermediateDirectories: false)
        let move = try FileMover.move(from, to: destination, sameFileSystemMove: { _, _ in EXDEV })
        #expect(move.wasCopied)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == payload)
        #expect(!ReplacementFixtures.exists(from))
        let mode = try FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o640, "the source's permissions are kept")
        #expect(BackupFixtures.fileNames(in: dir.path("elsewhere")) == ["s.sqlite-wal"], "no temporary left")
    }

    @Test(.enabled(if: Self.sharedMemoryIsAnotherFileSystem, "/dev/shm is not another file system here"))
    func toARealOtherFileSystem() throws {
        let dir = try TemporaryDirectory()
        let from = try source(in: dir)
        let folder = "/dev/shm/storerescue-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let move = try FileMover.move(from, to: folder + "/s.sqlite-wal")
        #expect(move.wasCopied)
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/s.sqlite-wal")) == payload)
        #expect(!ReplacementFixtures.exists(from))
    }

    @Test func onlyRegularFilesAreCopiedAcrossFileSystems() throws {
        let dir = try TemporaryDirectory()
        let fifo = dir.path("s.sqlite-wal")
        #expect(mkfifo(fifo, 0o600) == 0)
        let error = #expect(throws: FileMoveError.self) {
            try FileMover.move(fifo, to: dir.path("copy"), sameFileSystemMove: { _, _ in EXDEV })
        }
        #expect(error?.description == "\(fifo) is not a regular file and cannot be copied to another file system; it was left where it was")
        #expect(ReplacementFixtures.exists(fifo) && !ReplacementFixtures.exists(dir.path("copy")))
    }

    @Test func aMissingSourceOrFolderIsAnErrnoError() throws {
        let dir = try TemporaryDirectory()
        let missing = #expect(throws: FileMoveError.self) { try FileMover.move(dir.path("absent"), to: dir.path("x")) }
        #expect(missing == .moveFailed(source: dir.path("absent"), destination: dir.path("x"), code: ENOENT))
        #expect(missing?.description == "cannot move \(dir.path("absent")) to \(dir.path("x")): No such file or directory; it was left where it was")
        let from = try source(in: dir)
        let noFolder = #expect(throws: FileMoveError.self) { try FileMover.move(from, to: dir.path("nowhere/x")) }
        #expect(noFolder == .moveFailed(source: from, destination: dir.path("nowhere/x"), code: ENOENT))
        #expect(noFolder?.recoverySuggestion == "check both folders' permissions and free space, then run the command again")
        #expect(try Data(contentsOf: URL(fileURLWithPath: from)) == payload)
    }
}
