import Foundation
import Testing
@testable import StoreRescue

@Suite struct BoundedFileTests {
    @Test func prefixReadsUpToCountAndRefusesLinksWhenAskedTo() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path("data.bin")
        #expect(FileManager.default.createFile(atPath: file, contents: Data((0..<200).map { UInt8($0) })))
        #expect(try BoundedFile.prefix(of: file, count: 100) == (0..<100).map { UInt8($0) })
        #expect(try BoundedFile.prefix(of: file, count: 500).count == 200)
        try FileManager.default.createSymbolicLink(atPath: dir.path("link"), withDestinationPath: file)
        #expect(try BoundedFile.prefix(of: dir.path("link"), count: 4) == [0, 1, 2, 3])
        #expect(throws: BoundedFile.Failure.symbolicLink) { try BoundedFile.prefix(of: dir.path("link"), count: 4, followsSymlinks: false) }
        #expect(BoundedFile.Failure.symbolicLink.description == "is a symbolic link; refusing to follow it")
    }

    /// A link swapped in after the probe's lstat is still refused by the open itself.
    @Test func inputProbePrefixRefusesALinkAsASymlinkKind() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.database(at: dir.path("real.sqlite"), sql: "CREATE TABLE t(x);")
        try FileManager.default.createSymbolicLink(atPath: dir.path("link.sqlite"), withDestinationPath: dir.path("real.sqlite"))
        do {
            _ = try InputProbe.readPrefix(path: dir.path("link.sqlite"), followsSymlinks: false, count: 100)
            Issue.record("a symbolic link was read")
        } catch let error as StoreAccessError {
            #expect(error.kind == .symlink)
            #expect(error.description.contains("symbolic link"))
        }
        #expect(try InputProbe.readPrefix(path: dir.path("link.sqlite"), followsSymlinks: true, count: 16) == SQLiteFileHeader.magic)
    }

    @Test func contentsAreBoundedAndSpecialFilesRefused() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path("big")
        #expect(FileManager.default.createFile(atPath: file, contents: Data(count: 200_000)))
        #expect(try BoundedFile.contents(of: file, limit: 200_000).count == 200_000)
        #expect(throws: BoundedFile.Failure.tooLarge(size: 200_000, limit: 1000)) { try BoundedFile.contents(of: file, limit: 1000) }
        #expect(mkfifo(dir.path("fifo"), 0o600) == 0)
        #expect(throws: BoundedFile.Failure.notARegularFile) { try BoundedFile.contents(of: dir.path("fifo"), limit: 10) }
        #expect(throws: BoundedFile.Failure.directory) { try BoundedFile.prefix(of: dir.url.path, count: 10) }
    }
}
