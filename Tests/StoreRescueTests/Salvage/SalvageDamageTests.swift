import Foundation
import Testing
@testable import StoreRescue

/// Damaged files generated from a small store, swept: every byte of page 1 flipped, truncation
/// at every page boundary, pages zeroed, garbage WAL frames. For each: no crash, only a
/// documented error, the input unchanged, every row whose cell lies on an intact page recovered,
/// and no row that was not live in a live table. (The benchmark script runs bigger sweeps.)
@Suite struct SalvageDamageTests {
    /// A pristine store and its rows, built once per test.
    struct Original {
        let directory: TemporaryDirectory
        let path: String
        let rows: [String: [Int64: [SQLiteValue]]]
        let pageSize: Int
        let size: Int
        let rowCount: Int

        init(pageSize: Int, rows: Int) throws {
            rowCount = rows
            directory = try TemporaryDirectory()
            path = directory.path("original.sqlite")
            try SalvageFixtures.plainDatabase(at: path, pageSize: pageSize, rows: rows)
            self.rows = try SalvageFixtures.rows(of: path)
            self.pageSize = pageSize
            size = try Data(contentsOf: URL(fileURLWithPath: path)).count
        }
    }

    /// Salvages a damaged copy made by `damage` and checks every invariant. Returns the report,
    /// or nil when salvage refused the input with a documented error.
    @discardableResult
    static func check(_ original: Original, label: String, sourceLocation: SourceLocation = #_sourceLocation,
                      damage: (String) throws -> Void) throws -> SalvageReport? {
        let input = try TemporaryDirectory()
        let damaged = input.path("damaged.sqlite")
        try FileManager.default.copyItem(atPath: original.path, toPath: damaged)
        try damage(damaged)
        let before = try SalvageFixtures.snapshot(input.url.path)
        let out = try TemporaryDirectory()
        let output = out.path("salvaged.sqlite")
        let report: SalvageReport
        do {
            report = try Salvager.salvage(store: damaged, into: output)
        } catch let error as SalvageError {
            #expect(error.exitStatus == .notAStore, "\(label): \(error)", sourceLocation: sourceLocation)
            #expect(try SalvageFixtures.snapshot(input.url.path) == before, "\(label): input changed", sourceLocation: sourceLocation)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.url.path).isEmpty, "\(label)", sourceLocation: sourceLocation)
            return nil
        } catch let error as StoreAccessError {
            #expect([.notAStore, .noInput].contains(error.exitStatus), "\(label): \(error)", sourceLocation: sourceLocation)
            return nil
        }
        #expect(try SalvageFixtures.snapshot(input.url.path) == before, "\(label): input changed", sourceLocation: sourceLocation)
        let truth = try SalvageFixtures.intactRows(original: original.path, damaged: damaged)
        let recovered = try SalvageFixtures.rows(of: output)
        let lost = try lostAndFound(recovered)
        for (table, rowids) in truth {
            for rowid in rowids {
                // The values the record itself holds: `events` rows written before its ALTER TABLE
                // hold two (the third is the schema's default, and the schema is on page 1).
                let stored = table == "events" && rowid <= original.rowCount ? 2 : Int.max
                let want = Array(try #require(original.rows[table]?[rowid]).prefix(stored))
                // The record itself holds NULL for the INTEGER PRIMARY KEY: what is left when the
                // schema text that made `id` the rowid is damaged (the rowid is kept apart).
                let record = table == "people" ? [SQLiteValue.null] + want.dropFirst() : want
                // In its table — under its name, or under the name a damaged schema row gives it.
                let inATable = recovered.contains { name, rows in
                    guard !name.hasPrefix("lost_and_found_"), !name.hasPrefix("deleted_and_found_"), let have = rows[rowid] else { return false }
                    return Self.sameAsStored(have, want) || Self.sameAsStored(have, record)
                }
                if inATable { continue }
                // A table whose schema row is unreadable: kept by column count, values as stored
                // on disk (a REAL column's integral values are stored as integers).
                if lost[rowid]?.contains(where: { Self.sameAsStored($0, record) }) == true { continue }
                Issue.record("\(label): \(table) rowid \(rowid) whose cell is on an intact page was not recovered", sourceLocation: sourceLocation)
                return report
            }
        }
        // Nothing that was not live joins a live table: every live row recovered from an intact
        // page is the original's (rows from damaged pages may be damaged themselves).
        for (table, rows) in recovered where original.rows[table] != nil {
            for (rowid, values) in rows where truth[table]?.contains(rowid) == true {
                let stored = table == "events" && rowid <= original.rowCount ? 2 : Int.max
                let want = Array(original.rows[table]?[rowid]?.prefix(stored) ?? [])
                let record = table == "people" ? [SQLiteValue.null] + want.dropFirst() : want
                let have = Array(values.prefix(stored))
                #expect(Self.sameAsStored(have, want) || Self.sameAsStored(have, record), "\(label): \(table) \(rowid)", sourceLocation: sourceLocation)
            }
            // Nor a row of another table (a page given to the wrong table): same rowid, its values.
            for (rowid, values) in rows where original.rows[table]?[rowid] == nil {
                let misplaced = original.rows.contains { other, otherRows in
                    other != table && otherRows[rowid].map { Self.sameAsStored(values, $0) } == true
                }
                #expect(!misplaced, "\(label): \(table) \(rowid) is another table's row", sourceLocation: sourceLocation)
            }
            let deletedRange = (SalvageFixtures.lastLivePerson(rows: original.rowCount) + 1)...Int64(original.rowCount)
            let deleted = rows.keys.filter { table == "people" && deletedRange.contains($0) }
            #expect(deleted.isEmpty, "\(label): deleted people \(deleted.sorted().prefix(5)) in the live table", sourceLocation: sourceLocation)
        }
        // The report's row counts (kept as rows went in, not counted afterwards) are the tables'.
        for table in report.tables where table.disposition == "recovered" {
            #expect(table.rows.recovered == recovered[table.name]?.count ?? 0, "\(label): \(table.name) rows", sourceLocation: sourceLocation)
        }
        return report
    }

    /// Equal, allowing what a column's affinity does to a value: an integer on disk standing for
    /// an integral real (SQLite stores REAL columns' integral values as integers; without the
    /// table's affinity they come back as integers), and a number turned into text by a TEXT
    /// affinity that a damaged declared type gave a column.
    static func sameAsStored(_ found: [SQLiteValue], _ expected: [SQLiteValue]) -> Bool {
        found.count >= expected.count && zip(found, expected).allSatisfy { have, want in
            switch (have, want) {
            case (.integer(let stored), .real(let value)): return Double(stored) == value
            case (.text(let text), .integer(let value)): return text == String(value)
            default: return have == want
            }
        }
    }

    /// Rows of `lost_and_found_<n>` tables, by rowid (`id`), values from `c0` on.
    static func lostAndFound(_ recovered: [String: [Int64: [SQLiteValue]]]) throws -> [Int64: [[SQLiteValue]]] {
        var result: [Int64: [[SQLiteValue]]] = [:]
        for (table, rows) in recovered where table.hasPrefix("lost_and_found_") {
            for values in rows.values {
                guard let id = values[2].int64 else { continue }
                result[id, default: []].append(Array(values.dropFirst(3)))
            }
        }
        return result
    }

    /// Every byte of page 1 (header and schema) inverted in turn, on a store of 512-byte pages.
    @Test func everyByteOfPageOneFlipped() throws {
        let original = try Original(pageSize: 512, rows: 60)
        var refused = 0
        for offset in 0..<original.pageSize {
            let report = try Self.check(original, label: "byte \(offset) flipped") { try SalvageFixtures.flipByte(at: offset, of: $0) }
            if report == nil { refused += 1 }
        }
        #expect(refused == 0, "page 1 damage never hides the other pages")
    }

    /// A schema row whose table name changed to another valid name: the table's rows come back
    /// under the name as read, and are its own — not counted as another table's rows ("misplaced"),
    /// and not missing from the table the original named.
    @Test func renamedTableHoldsItsOwnRows() throws {
        let original = try Original(pageSize: 4096, rows: 300)
        let report = try Self.check(original, label: "events renamed") { path in
            var data = try Data(contentsOf: URL(fileURLWithPath: path))
            // The schema row's `name` value: the first "events" on page 1 not inside CREATE TABLE.
            let page = data.prefix(4096)
            let name = try #require(page.range(of: Data("tableeventsevents".utf8)))
            data.replaceSubrange(name.lowerBound + 5..<name.lowerBound + 11, with: Data("evfnts".utf8))
            try data.write(to: URL(fileURLWithPath: path))
        }
        let tables = try #require(report).tables.map(\.name)
        #expect(tables.contains("evfnts") && !tables.contains("events"), "\(tables)")
        #expect(report?.tables.first { $0.name == "evfnts" }?.rows.recovered == original.rows["events"]?.count)
    }

    /// The file cut at every page boundary (and mid-page) of a small store.
    @Test func truncatedAtEveryPageBoundary() throws {
        let original = try Original(pageSize: 4096, rows: 300)
        for cut in stride(from: 4096, to: original.size, by: 4096) {
            try Self.check(original, label: "cut at \(cut)") { try SalvageFixtures.truncate($0, to: cut) }
            try Self.check(original, label: "cut at \(cut + 1000)") { try SalvageFixtures.truncate($0, to: cut + 1000) }
        }
        // Less than a page: nothing to salvage, said clearly.
        let input = try TemporaryDirectory()
        let tiny = input.path("tiny.sqlite")
        try FileManager.default.copyItem(atPath: original.path, toPath: tiny)
        try SalvageFixtures.truncate(tiny, to: 3000)
        let error = #expect(throws: SalvageError.self) { try Salvager.salvage(store: tiny, into: input.path("out.sqlite")) }
        #expect(error?.description == "\(tiny): nothing to salvage: it holds no whole 4096-byte page")
    }

    /// Random pages zeroed, one to four at a time (seeded).
    @Test func randomPagesZeroed() throws {
        let original = try Original(pageSize: 4096, rows: 300)
        let pages = original.size / 4096
        var generator = SeededGenerator(seed: 2024)
        for round in 0..<12 {
            let chosen = (0..<(1 + round % 4)).map { _ in Int.random(in: 1...pages, using: &generator) }
            try Self.check(original, label: "pages \(chosen) zeroed") { path in
                for page in chosen { try SalvageFixtures.zeroPage(page, of: path, pageSize: 4096) }
            }
        }
    }

    /// Random bytes anywhere overwritten (seeded): damaged pages may yield damaged rows, never a
    /// crash, and intact pages still yield all theirs.
    @Test func randomBytesOverwritten() throws {
        let original = try Original(pageSize: 4096, rows: 300)
        var generator = SeededGenerator(seed: 99)
        for round in 0..<8 {
            let offsets = (0..<(5 * (round + 1))).map { _ in Int.random(in: 0..<original.size, using: &generator) }
            try Self.check(original, label: "\(offsets.count) bytes overwritten (round \(round))") { path in
                for offset in offsets {
                    try SalvageFixtures.overwrite(path, at: offset, with: Data([UInt8.random(in: 0...255, using: &generator)]))
                }
            }
        }
    }

    /// Garbage appended as WAL frames, and a real WAL with random bytes overwritten: never a
    /// crash; frames whose checksums fail are not applied.
    @Test func garbageWriteAheadLogFrames() throws {
        let directory = try TemporaryDirectory()
        let (path, rows) = try PageSourceTests.walStore(in: directory)
        let wal = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        var generator = SeededGenerator(seed: 5)
        for round in 0..<10 {
            var damaged = wal
            if round < 5 {
                damaged.append(Data(generator.bytes(4096 + 24)))  // a frame of noise after the real ones
            } else {
                for _ in 0..<round { damaged[Int.random(in: 32..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            }
            try damaged.write(to: URL(fileURLWithPath: path + "-wal"))
            let output = directory.path("out-\(round).sqlite")
            let report = try Salvager.salvage(store: path, into: output)
            let count = try SalvageFixtures.rows(of: output)["t"]?.count ?? -1
            if round < 5 {
                #expect(count == rows, "round \(round): the real frames still apply")
                #expect(report.writeAheadLog?.validFrames == report.writeAheadLog.map { $0.framesInFile - 1 })
            } else {
                #expect([0, 3, 4].contains(count), "round \(round): a committed state, never a half-applied one (\(count))")
            }
        }
    }

    /// A leaf whose cell pointers are all aimed at one large record: a page is decoded only until
    /// the records read cover what it can hold (`CellBudget`), so the record is read three times
    /// (the last two duplicates), the other pointers count as unreadable, and the page costs
    /// three decodes, not a thousand. With page 1's schema tree zeroed too, the scan of every page for schema rows
    /// is bounded the same way.
    @Test(arguments: [false, true])
    func pointersAimedAtOneRecordAreDecodedNoMoreThanThePageHolds(schemaLost: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("aimed.sqlite")
        let pageSize = 65_536
        try StoreFixtureBuilder.database(at: path, sql: """
            PRAGMA page_size = \(pageSize); PRAGMA journal_mode = DELETE; CREATE TABLE t (a BLOB);
            INSERT INTO t (a) VALUES (zeroblob(30000));
            """)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let root = try #require(try SalvageFixtures.rootPage(of: "t", in: path))
        let leaf = (root - 1) * pageSize
        #expect(bytes[leaf] == 0x0D && bytes[leaf + 3] == 0 && bytes[leaf + 4] == 1, "one cell on a table leaf")
        let pointer = Array(bytes[leaf + 8..<leaf + 10])
        let aimed = 1_000
        bytes[leaf + 3] = UInt8(aimed >> 8)
        bytes[leaf + 4] = UInt8(aimed & 0xFF)
        for index in 0..<aimed { bytes.replaceSubrange(leaf + 8 + 2 * index..<leaf + 10 + 2 * index, with: pointer) }
        if schemaLost { bytes.replaceSubrange(100..<pageSize, with: [UInt8](repeating: 0, count: pageSize - 100)) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let report = try Salvager.salvage(store: path, into: directory.path("out.sqlite"))
        // After two 30,000-byte records, 5,536 bytes of the 65,536-byte page are left: a third is
        // read, and the 997 other pointers are not.
        if schemaLost {
            // No table to name: lost and found keeps each copy read, as it keeps any row.
            #expect(report.lostAndFound.rows == 3)
            #expect(report.lostAndFound.rowsUnreadable == aimed - 3)
        } else {
            let table = try #require(report.tables.first { $0.name == "t" })
            #expect(table.rows.recovered == 1, "the record, once")
            #expect(table.rows.duplicatesResolved == 2)
            #expect(table.rows.unreadable == aimed - 3, "\(table.rows)")
        }
    }

    /// Twenty interior pages whose 583 cells each point at one page that is no leaf of the tree —
    /// a zeroed page, or another table's leaf whose rowids lie outside the bounds the cells
    /// give — under a root that points at them all. That page used to be read and judged once per
    /// pointer (11,660 times here; a 5.5 MB file built this way with 64 KiB pages took 35 s) and
    /// counted damaged each time. Now it is read once per walk and counted once: the table's
    /// damaged pages are the pages the file has, at most.
    @Test(arguments: [false, true])
    func pointersAimedAtOnePageReadItOnce(atAnotherTablesLeaf: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("aimed.sqlite")
        let pageSize = 4_096
        try StoreFixtureBuilder.database(at: path, sql: """
            PRAGMA page_size = \(pageSize); PRAGMA journal_mode = DELETE;
            CREATE TABLE victim (id INTEGER PRIMARY KEY, x TEXT); CREATE TABLE keep (id INTEGER PRIMARY KEY, x TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
            INSERT INTO keep SELECT 1000 + i, 'keep ' || i FROM n;
            """)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let keepRoot = try #require(try SalvageFixtures.rootPage(of: "keep", in: path))
        let victimRoot = try #require(try SalvageFixtures.rootPage(of: "victim", in: path))
        #expect(bytes[(keepRoot - 1) * pageSize] == 0x0D, "keep is one leaf, rowids 1001 to 1100, walked after the victim")
        func interior(children: [Int], key: Int, right: Int) -> [UInt8] {
            var page = [UInt8](repeating: 0, count: pageSize)
            page.withUnsafeMutableBytes { page in
                page[0] = 0x05
                page.storeBigEndianUInt16(children.count, at: 3)
                var position = pageSize
                for (index, child) in children.enumerated() {
                    // A four-byte child and a one-byte key: every cell the same, so the keys are
                    // out of order and each child inherits the bounds above it.
                    position -= 5
                    page.storeBigEndianUInt32(UInt32(child), at: position)
                    page[position + 4] = UInt8(key)
                    page.storeBigEndianUInt16(position, at: 12 + 2 * index)
                }
                page.storeBigEndianUInt16(position, at: 5)
                page.storeBigEndianUInt32(UInt32(right), at: 8)
            }
            return page
        }
        let pages = bytes.count / pageSize
        let zeroed = pages + 1, top = pages + 2, first = pages + 3
        let interiors = 20, cells = (pageSize - 12) / 7
        let target = atAnotherTablesLeaf ? keepRoot : zeroed
        bytes += [UInt8](repeating: 0, count: pageSize)
        bytes += interior(children: (0..<interiors - 1).map { first + $0 }, key: 7, right: first + interiors - 1)
        for _ in 0..<interiors { bytes += interior(children: Array(repeating: target, count: cells - 1), key: 7, right: target) }
        let total = bytes.count / pageSize
        bytes.withUnsafeMutableBytes { $0.storeBigEndianUInt32(UInt32(total), at: 28) }
        // The victim's root: an interior page whose only cell leads to the 20, rowids up to 100.
        bytes.replaceSubrange((victimRoot - 1) * pageSize..<victimRoot * pageSize, with: interior(children: [top], key: 100, right: zeroed))
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let report = try Salvager.salvage(store: path, into: directory.path("out.sqlite"))
        let victim = try #require(report.tables.first { $0.name == "victim" })
        #expect(victim.rows.recovered == 0)
        #expect(victim.pages.damaged <= total, "\(victim.pages) in a file of \(total) pages")
        #expect(victim.pages.read == 1 + 1 + interiors, "the root, the page above the 20, the 20")
        let keep = try #require(report.tables.first { $0.name == "keep" })
        #expect(keep.rows.recovered == 100, "keep's leaf is keep's, whatever points at it")
    }

    /// A damaged overflow link naming a leaf of a table walked later: that leaf is not taken as
    /// an overflow page (it used to be, and its 100 rows were lost); the chain breaks there.
    @Test func anOverflowLinkToALaterTablesLeafDoesNotTakeIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("linked.sqlite")
        let pageSize = 4_096
        try StoreFixtureBuilder.database(at: path, sql: """
            PRAGMA page_size = \(pageSize); PRAGMA journal_mode = DELETE;
            CREATE TABLE spill (id INTEGER PRIMARY KEY, b BLOB); CREATE TABLE later (id INTEGER PRIMARY KEY, x TEXT);
            INSERT INTO spill VALUES (1, randomblob(6000)), (2, randomblob(6000)), (3, x'00');
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) INSERT INTO later SELECT i, 'later ' || i FROM n;
            """)
        let original = try SalvageFixtures.rows(of: path)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let spillRoot = try #require(try SalvageFixtures.rootPage(of: "spill", in: path))
        let laterRoot = try #require(try SalvageFixtures.rootPage(of: "later", in: path))
        let leaf = (spillRoot - 1) * pageSize
        #expect(bytes[leaf] == 0x0D && bytes[(laterRoot - 1) * pageSize] == 0x0D, "each table one leaf")
        let first = Int(bytes[leaf + 8]) << 8 | Int(bytes[leaf + 9])
        let cell = try #require(bytes.withUnsafeBytes { TableCell.leaf(in: UnsafeRawBufferPointer(rebasing: $0[leaf..<leaf + pageSize]), at: first, usableSize: pageSize) })
        #expect(cell.firstOverflowPage != nil)
        let link = leaf + cell.localStart + cell.localSize
        bytes.withUnsafeMutableBytes { $0.storeBigEndianUInt32(UInt32(laterRoot), at: link) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: path, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["later"] == original["later"], "every row of the later table's leaf")
        #expect(report.tables.first { $0.name == "later" }?.rows.recovered == 100)
        #expect(recovered["spill"]?[2] == original["spill"]?[2] && recovered["spill"]?[3] == original["spill"]?[3])
    }
}
