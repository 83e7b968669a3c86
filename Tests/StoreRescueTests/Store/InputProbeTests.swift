import Foundation
import Testing
@testable import StoreRescue

@Suite struct InputProbeTests {
    private func rejectedKind(_ path: String, followsSymlinks: Bool = false) -> (StoreKind?, String) {
        do {
            _ = try InputProbe(path: path, followsSymlinks: followsSymlinks)
            return (nil, "")
        } catch let error as StoreAccessError {
            return (error.kind, error.description)
        } catch {
            return (nil, "\(error)")
        }
    }

    @Test func missingFile() throws {
        let dir = try TemporaryDirectory()
        let (kind, message) = rejectedKind(dir.path("nope.sqlite"))
        #expect(kind == .missing)
        #expect(message.contains("nope.sqlite") && message.contains("no such file"))
    }

    @Test func emptyFile() throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.path("empty.sqlite"), contents: Data()))
        let (kind, message) = rejectedKind(dir.path("empty.sqlite"))
        #expect(kind == .empty)
        #expect(message.contains("is empty"))
    }

    @Test func randomBytesAndText() throws {
        let dir = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        let random = Data((0..<5000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        #expect(FileManager.default.createFile(atPath: dir.path("random.bin"), contents: random))
        #expect(FileManager.default.createFile(atPath: dir.path("notes.txt"), contents: Data(String(repeating: "hello store\n", count: 100).utf8)))
        #expect(rejectedKind(dir.path("random.bin")).0 == .notSQLite)
        let (kind, message) = rejectedKind(dir.path("notes.txt"))
        #expect(kind == .notSQLite)
        #expect(message.contains("not an SQLite database"))
    }

    @Test func truncatedHeaderAndTruncatedPages() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("whole.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: "CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(20000));")
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(FileManager.default.createFile(atPath: dir.path("head.sqlite"), contents: whole.prefix(50)))
        // Cut mid-page: certainly short of its pages.
        #expect(FileManager.default.createFile(atPath: dir.path("half.sqlite"), contents: whole.prefix(whole.count / 2 + 100)))
        let (headKind, headMessage) = rejectedKind(dir.path("head.sqlite"))
        #expect(headKind == .truncated)
        #expect(headMessage.contains("shorter than the 100-byte SQLite header"))
        let (halfKind, halfMessage) = rejectedKind(dir.path("half.sqlite"))
        #expect(halfKind == .truncated)
        #expect(halfMessage.contains("its header says"))
    }

    /// A file of whole pages shorter than its header says was cut at a page boundary, or has one
    /// damaged byte in its page count: neither is certain, so it is not called "truncated".
    @Test func fileOfWholePagesShorterThanItsHeaderIsDamagedNotTruncated() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("whole.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: "CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(20000));")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[28] ^= 0x01  // one flipped bit in the high byte of the page count
        #expect(FileManager.default.createFile(atPath: dir.path("flipped.sqlite"), contents: bytes))
        let (kind, message) = rejectedKind(dir.path("flipped.sqlite"))
        #expect(kind == .damaged)
        #expect(message.contains("page count (bytes 28-31) is damaged or the file was cut at a page boundary"))
        let error = StoreAccessError.rejected(path: "x", kind: kind ?? .missing, reason: message)
        #expect(error.recoverySuggestion?.contains("the copy is incomplete") == false)
    }

    @Test func oneFlippedByteInTheSignatureIsADamagedHeader() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("whole.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: "CREATE TABLE t(x);")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[3] ^= 0x20  // "SQLite" -> "SQlite"
        #expect(FileManager.default.createFile(atPath: dir.path("flipped.sqlite"), contents: bytes))
        let (kind, message) = rejectedKind(dir.path("flipped.sqlite"))
        #expect(kind == .damaged)
        #expect(message.contains("has a damaged SQLite header: byte 3 of the \"SQLite format 3\" signature differs"))
    }

    @Test func impossiblePageSizeIsDamaged() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("db.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: "CREATE TABLE t(x);")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[16] = 0x03; bytes[17] = 0x00  // 768: not a power of two
        try bytes.write(to: URL(fileURLWithPath: path))
        let (kind, message) = rejectedKind(path)
        #expect(kind == .damaged)
        #expect(message.contains("impossible page size (768)"))
    }

    @Test func directoryFifoAndSymlink() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path("folder"), withIntermediateDirectories: false)
        #expect(rejectedKind(dir.path("folder")).0 == .directory)
        #expect(mkfifo(dir.path("pipe"), 0o600) == 0)
        #expect(rejectedKind(dir.path("pipe")).0 == .notRegularFile)
        try StoreFixtureBuilder.database(at: dir.path("real.sqlite"), sql: "CREATE TABLE t(x);")
        try FileManager.default.createSymbolicLink(atPath: dir.path("link.sqlite"), withDestinationPath: dir.path("real.sqlite"))
        let (kind, message) = rejectedKind(dir.path("link.sqlite"))
        #expect(kind == .symlink)
        #expect(message.contains("symbolic link"))
        let probe = try InputProbe(path: dir.path("link.sqlite"), followsSymlinks: true)
        #expect(probe.header?.pageSize == 4096)
        try FileManager.default.createSymbolicLink(atPath: dir.path("dangling"), withDestinationPath: dir.path("gone"))
        #expect(rejectedKind(dir.path("dangling"), followsSymlinks: true).0 == .missing)
    }

    /// A followed link is probed as its target: the sidecars are the target's (SQLite opens the
    /// target's `-wal`), and the store opened through it reads the rows that live only there.
    @Test func followedSymlinkIsReadWithTheTargetsSidecars() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path("real"), withIntermediateDirectories: false)
        let real = dir.path("real/store.sqlite")
        try ReplacementFixtures.walStoreAtRest(at: real, rows: 4)
        try FileManager.default.createSymbolicLink(atPath: dir.path("link.sqlite"), withDestinationPath: real)
        // A link to a link: resolved all the way.
        try FileManager.default.createSymbolicLink(atPath: dir.path("link2.sqlite"), withDestinationPath: dir.path("link.sqlite"))
        for link in [dir.path("link.sqlite"), dir.path("link2.sqlite")] {
            let probe = try InputProbe(path: link, followsSymlinks: true)
            #expect(probe.path == link, "messages name the path given")
            #expect(probe.files.mainPath == URL(fileURLWithPath: real).resolvingSymlinksInPath().path)
            #expect(probe.files.sidecar("-wal")?.holdsData == true, "the target's -wal, not one beside the link")
            let store = try OpenedStore(path: link, options: StoreOpenOptions(followsSymlinks: true))
            #expect(store.accessMethod == .privateCopy)
            #expect(try store.connection.scalar("SELECT count(*) FROM t")?.int64 == 4)
        }
    }

    @Test(.enabled(if: getuid() != 0, "root reads any file")) func unreadableFile() throws {
        let dir = try TemporaryDirectory()
        try StoreFixtureBuilder.database(at: dir.path("locked.sqlite"), sql: "CREATE TABLE t(x);")
        chmod(dir.path("locked.sqlite"), 0)
        #expect(rejectedKind(dir.path("locked.sqlite")).0 == .unreadable)
    }

    @Test func headerFieldsOfARealStore() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("db.sqlite")
        try StoreFixtureBuilder.database(at: path, sql: "PRAGMA journal_mode=WAL; PRAGMA user_version=7; CREATE TABLE t(x);")
        let probe = try InputProbe(path: path)
        let header = try #require(probe.header)
        #expect(header.pageSize == 4096)
        #expect(header.journalMode == "wal")
        #expect(header.userVersion == 7)
        #expect(header.textEncodingName == "UTF-8")
    }

    @Test func sidecarsAreClassifiedWithoutOpening() throws {
        let dir = try TemporaryDirectory()
        let main = dir.path("s.sqlite")
        #expect(FileManager.default.createFile(atPath: main, contents: Data(count: 10)))
        #expect(FileManager.default.createFile(atPath: main + "-wal", contents: Data(count: 32)))  // header only: no frames
        #expect(FileManager.default.createFile(atPath: main + "-journal", contents: Data(count: 512)))  // zeroed header: not hot
        let files = StoreFileSet.discover(mainPath: main)
        #expect(files.presentSuffixes == ["-wal", "-journal"])
        #expect(!files.sidecarsHoldData)
        #expect(FileManager.default.createFile(atPath: main + "-journal", contents: Data([0xD9, 0xD5, 0x05, 0xF9] + [UInt8](repeating: 1, count: 508))))
        #expect(FileManager.default.createFile(atPath: main + "-wal", contents: Data(count: 33)))
        let live = StoreFileSet.discover(mainPath: main)
        #expect(live.sidecar("-journal")?.holdsData == true)
        #expect(live.sidecar("-wal")?.holdsData == true)
    }
}
