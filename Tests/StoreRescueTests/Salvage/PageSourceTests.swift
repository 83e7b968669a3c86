import Foundation
import Testing
@testable import StoreRescue

/// The page reader: geometry from the header or the pages, files cut short, and the `-wal` laid
/// over the main file only where its frames' checksums hold.
@Suite struct PageSourceTests {
    @Test(arguments: [512, 4096, 65536])
    func pageSizeComesFromTheHeaderOrFromThePages(pageSize: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("p.sqlite")
        try SalvageFixtures.plainDatabase(at: path, pageSize: pageSize, rows: 200)
        let source = try PageSource(path: path)
        #expect(source.geometry.pageSize == pageSize)
        #expect(source.geometry.pageSizeSource == .header)
        #expect(source.geometry.isHeaderTrusted)
        #expect(source.geometry.isAutoVacuum == true)

        try SalvageFixtures.overwrite(path, at: 0, with: Data(count: 100))
        let guessed = try PageSource(path: path)
        #expect(guessed.geometry.pageSize == pageSize)
        #expect(guessed.geometry.pageSizeSource == .guessed)
        #expect(!guessed.geometry.isHeaderTrusted)
        #expect(guessed.geometry.notes.contains("the database header is unreadable; page size \(pageSize) guessed from the pages"))
    }

    /// A header whose page size is a valid but wrong power of two is overruled by the pages.
    @Test func wrongButValidPageSizeInTheHeaderIsOverruled() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("p.sqlite")
        try SalvageFixtures.plainDatabase(at: path, pageSize: 4096, rows: 400)
        try SalvageFixtures.overwrite(path, at: 16, with: Data([0x04, 0x00]))  // 1024
        let source = try PageSource(path: path)
        #expect(source.geometry.pageSize == 4096)
        #expect(source.geometry.notes.first == "the header's page size 1024 does not fit the pages; using 4096, which does")
    }

    @Test func fileCutShortHasMissingPages() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("p.sqlite")
        try SalvageFixtures.plainDatabase(at: path, rows: 300)
        let pages = try PageSource(path: path).pageCount
        try SalvageFixtures.truncate(path, to: 5 * 4096 + 100)
        let source = try PageSource(path: path)
        #expect(source.pageCount == pages, "the header still says how many pages there should be")
        #expect(source.availablePages == 5, "the sixth page is cut short")
        var buffer: [UInt8] = []
        #expect(source.read(5, into: &buffer))
        #expect(!source.read(6, into: &buffer))
        #expect(!source.read(0, into: &buffer))
        #expect(!source.read(UInt32.max, into: &buffer))
    }

    /// Builds a WAL store with two committed transactions in its `-wal` (3 rows, then 1), which
    /// the main file lacks.
    static func walStore(in directory: TemporaryDirectory) throws -> (path: String, walRows: Int) {
        let path = directory.path("w.sqlite")
        let writer = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try writer.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (v TEXT); PRAGMA wal_checkpoint(TRUNCATE)")
        try writer.execute("INSERT INTO t VALUES ('a'), ('b'), ('c')")
        try writer.execute("INSERT INTO t VALUES ('d')")
        // Copy the main file and WAL while the writer still holds them (no checkpoint at close).
        try FileManager.default.copyItem(atPath: path, toPath: directory.path("copy.sqlite"))
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: directory.path("copy.sqlite-wal"))
        return (directory.path("copy.sqlite"), 4)
    }

    /// A `-wal` whose last commit shrank the database (rows deleted in an auto-vacuum store, not
    /// yet checkpointed; `secure_delete` off, as Apple's SQLite has it, where Debian's zeroes
    /// freed pages): the main file's pages past the committed size are not part of the
    /// database SQLite reads, but they were freed by that commit — their rows are deleted ones,
    /// recoverable, as on free pages. They used to be skipped without a word.
    @Test func pagesPastTheLastCommitAreReadAsFreePages() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("w.sqlite")
        let writer = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
        try writer.execute("""
            PRAGMA auto_vacuum = FULL; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
            CREATE TABLE big (v TEXT); CREATE TABLE small (v TEXT, n INTEGER);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO big SELECT printf('%.100c', 'x') FROM n;
            INSERT INTO small VALUES ('kept', 1);
            PRAGMA wal_checkpoint(TRUNCATE);
            PRAGMA secure_delete = OFF; DELETE FROM big;
            """)
        try FileManager.default.copyItem(atPath: path, toPath: directory.path("copy.sqlite"))
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: directory.path("copy.sqlite-wal"))
        let source = try PageSource(path: directory.path("copy.sqlite"))
        let committed = try #require(source.writeAheadLog?.committedPageCount)
        let filePages = UInt32(source.fileSize / Int64(source.geometry.pageSize))
        #expect(committed < filePages)
        #expect(source.geometry.notes.contains(
            "the -wal's last commit makes the database \(committed) pages long: the main file's \(filePages - committed) pages past that were read as free pages (their rows are deleted ones)"))
        var buffer: [UInt8] = []
        #expect(!source.read(committed + 1, into: &buffer) && source.readPastCommit(committed + 1, into: &buffer))
        #expect(!source.readPastCommit(committed, into: &buffer) && !source.readPastCommit(filePages + 1, into: &buffer))
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: directory.path("copy.sqlite"), into: output)
        #expect(report.notes.contains { $0.hasPrefix("the -wal's last commit makes the database") })
        let rows = try SalvageFixtures.rows(of: output)
        #expect(rows["small"]?.count == 1 && rows["big"]?.isEmpty != false, "the live tables as SQLite reads them")
        // The deleted rows that lay on the freed pages come back as deleted ones.
        let big = try #require(report.tables.first { $0.name == "big" })
        #expect(big.rows.deleted == 2_000)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        var deleted = 0
        for table in report.lostAndFound.tables where table.hasPrefix("deleted_and_found_") {
            deleted += Int(try connection.scalar("SELECT count(*) FROM \(table.quotedSQLIdentifier) WHERE likely_table = 'big'")?.int64 ?? 0)
        }
        #expect(deleted == big.rows.deleted)
    }

    @Test func committedFramesAreLaidOverTheMainFile() throws {
        let directory = try TemporaryDirectory()
        let (path, rows) = try Self.walStore(in: directory)
        let source = try PageSource(path: path)
        let log = try #require(source.writeAheadLog)
        #expect(log.committedFrames > 0)
        #expect(log.validFrames == log.framesInFile)
        #expect(source.writeAheadLogIssue == nil)
        let output = directory.path("out.sqlite")
        try Salvager.salvage(store: path, into: output)
        #expect(try SalvageFixtures.rows(of: output)["t"]?.count == rows)
    }

    /// A frame whose bytes changed after it was written fails its checksum: it and every frame
    /// after it are ignored, as SQLite ignores them — here the second transaction's commit frame.
    @Test func framesAfterABadChecksumAreIgnored() throws {
        let directory = try TemporaryDirectory()
        let (path, _) = try Self.walStore(in: directory)
        let walSize = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
        try SalvageFixtures.flipByte(at: walSize - 10, of: path + "-wal")
        let source = try PageSource(path: path)
        let log = try #require(source.writeAheadLog)
        #expect(log.validFrames == log.framesInFile - 1)
        #expect(log.committedFrames < log.validFrames || log.committedFrames == log.validFrames)
        let output = directory.path("out.sqlite")
        try Salvager.salvage(store: path, into: output)
        #expect(try SalvageFixtures.rows(of: output)["t"]?.count == 3, "the first transaction only")
    }

    @Test(arguments: ["garbage", "header"])
    func garbageWriteAheadLogIsIgnored(kind: String) throws {
        let directory = try TemporaryDirectory()
        let (path, _) = try Self.walStore(in: directory)
        if kind == "garbage" {
            var generator = SeededGenerator(seed: 3)
            try Data(generator.bytes(9000)).write(to: URL(fileURLWithPath: path + "-wal"))
        } else {
            try SalvageFixtures.flipByte(at: 12, of: path + "-wal")  // the checkpoint sequence: header checksum fails
        }
        let before = try SalvageFixtures.snapshot(directory.url.path)
        let source = try PageSource(path: path)
        #expect(source.writeAheadLog == nil)
        #expect(source.writeAheadLogIssue == "its header is not a valid WAL header")
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: path, into: output)
        #expect(report.writeAheadLog?.used == false)
        #expect(try SalvageFixtures.rows(of: output)["t"]?.count == 0, "the main file alone has the table but no rows")
        var after = try SalvageFixtures.snapshot(directory.url.path)
        after["out.sqlite"] = nil
        #expect(after == before, "nothing next to the store changed")
    }

    /// A WAL header's page size is the size itself (65536 included): a 1 there — the database
    /// header's way of writing 65536, not the WAL's — makes SQLite ignore the log, and so it is
    /// ignored here (a review's crafted log was folded and salvaged as 64 KiB pages).
    @Test func aWALHeaderPageSizeOfOneIsNotAPageSize() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("s.sqlite-wal")
        func be(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func header(pageSize: UInt32) -> [UInt8] {
            let start = be(0x377F_0682) + be(3_007_000) + be(pageSize) + be(0) + be(7) + be(9)
            let sum = start.withUnsafeBytes { WriteAheadLog.Checksum.compute($0, seed: (0, 0), bigEndian: false) }
            return start + be(sum.0) + be(sum.1)
        }
        for (size, valid) in [(UInt32(1), false), (65536, true), (4096, true)] {
            try Data(header(pageSize: size) + [UInt8](repeating: 0, count: 64)).write(to: URL(fileURLWithPath: path))
            let descriptor = open(path, O_RDONLY)
            defer { close(descriptor) }
            #expect((WriteAheadLog.read(descriptor: descriptor, size: 96) != nil) == valid, "page size field \(size)")
        }
    }

    @Test func pointerMapNamesTheRootOfAnyPage() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("p.sqlite")
        try SalvageFixtures.plainDatabase(at: path, rows: 2000)
        let source = try PageSource(path: path)
        var map = PointerMap(usableSize: 4096, pageSize: 4096, pageCount: source.pageCount)
        #expect(map.isMapPage(2))
        #expect(!map.isMapPage(3))
        // 4096 / 5 = 819 entries: page 2 maps pages 3…821, page 822 is the next map page.
        #expect(map.mapPage(for: 821) == 2)
        #expect(map.isMapPage(822))
        #expect(map.mapPage(for: 823) == 822)
        let root = try #require(try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'people'")?.int64)
        // Every leaf of `people` leads back to its root.
        var leaves = 0
        var buffer: [UInt8] = []
        for page in UInt32(3)...source.availablePages {
            guard source.read(page, into: &buffer),
                let header = buffer.withUnsafeBytes({ BTreePageHeader(page: $0, pageNumber: page, usableSize: 4096) }),
                header.kind == .tableLeaf, map.root(of: page, source: source) == UInt32(root)
            else { continue }
            leaves += 1
        }
        #expect(leaves > 10)
        #expect(PointerMap.looksPresent(in: source, usableSize: 4096))
    }
}
