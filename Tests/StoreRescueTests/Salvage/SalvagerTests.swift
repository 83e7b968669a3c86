import Foundation
import SRSQLite
import Testing
@testable import StoreRescue

/// Plain-mode salvage: what an undamaged or damaged database becomes, row for row.
@Suite struct SalvagerTests {
    /// An undamaged database comes back whole: every row of every table with its storage class
    /// and bytes, rowids kept, the column added later filled with its default in older rows.
    @Test func undamagedDatabaseComesBackWhole() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let before = try SalvageFixtures.snapshot(directory.url.path)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let original = try SalvageFixtures.rows(of: store)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(Set(recovered.keys) == Set(original.keys).union(report.lostAndFound.tables), "the tables, and deleted_and_found_<n>")
        #expect(report.lostAndFound.tables == ["deleted_and_found_4"])
        for (table, rows) in original { #expect(recovered[table] == rows, "table \(table)") }
        #expect(original["events"]?[1] == [.text("logout"), .integer(1000), .text("app")], "the ALTER TABLE default in an old row")
        #expect(report.mode == .plain)
        #expect(report.schemaSource == "sqlite_schema")
        #expect(report.version == nil)
        #expect(report.metadata == nil)
        #expect(report.totals.recovered == original.values.reduce(0) { $0 + $1.count })
        #expect(report.totals.unreadable == 0)
        #expect(report.pages.damaged == 0)
        #expect(report.pages.missing == 0)
        let people = try #require(report.tables.first { $0.name == "people" })
        #expect(people.identifiedBy.schemaTree > 0 && people.identifiedBy.pointerMap == 0 && people.identifiedBy.recordShape == 0)
        #expect(people.rows.deleted > 0, "the deleted rows on free pages are reported")
        #expect(people.rows.recovered == original["people"]?.count)
        // people's 150 rows and the one events row written after the ALTER TABLE are copied page
        // by page; the 300 older events rows are short, their added column's default is not
        // NULL, so they go in through SQLite with the default filled in.
        #expect(report.rowsCopiedPageByPage == 151)
        var after = try SalvageFixtures.snapshot(directory.url.path)
        after["out.sqlite"] = nil
        #expect(after == before, "the store was not changed and nothing was created beside it")
        let check = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable)).scalar("PRAGMA integrity_check")
        #expect(check?.string == "ok")
    }

    /// SQLite keeps any value in any column: an app's `''` in an INTEGER column, `'N/A'` in a REAL
    /// one, a blob in a TEXT one. Leaves its tree reaches are the table's, whatever their values;
    /// a review's undamaged store had 224 of 500 rows sent to lost and found, a page called damaged.
    @Test func valuesOtherThanTheDeclaredTypesStayInTheirTable() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, c TEXT, r REAL, n INTEGER, d DATETIME);
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3000)
            INSERT INTO t SELECT i, CASE WHEN i BETWEEN 100 AND 900 THEN randomblob(20) ELSE 'txt' || i END,
              CASE WHEN i BETWEEN 1000 AND 2000 THEN 'N/A' ELSE i * 1.5 END, CASE WHEN i % 2 = 0 THEN '' ELSE i END,
              CASE WHEN i > 2500 THEN x'00ff' ELSE datetime(1700000000 + i * 60, 'unixepoch') END FROM k;
            """)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(try SalvageFixtures.rows(of: output)["t"] == SalvageFixtures.rows(of: store)["t"])
        #expect(report.lostAndFound.tables.isEmpty && report.pages.damaged == 0, "\(report.lostAndFound.tables) \(report.pages.damaged)")
        let table = try #require(report.tables.first { $0.name == "t" })
        #expect(table.rows.recovered == 3000 && table.identifiedBy.recordShape == 0 && table.pages.damaged == 0)
    }

    /// Zeroed leaves a tree leads to are its table's damage and zeroed pages of the file, counted
    /// once in the file's damage (a review's report said 6 damaged pages for 3).
    @Test func aZeroedLeafIsOneDamagedPage() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT);
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 20000) INSERT INTO t SELECT i, printf('v%d v%d v%d', i, i, i), i FROM k;
            """)
        for page in [20, 30, 40] { try SalvageFixtures.zeroPage(page, of: store, pageSize: 4096) }
        let report = try Salvager.salvage(store: store, into: directory.path("out.sqlite"))
        let table = try #require(report.tables.first { $0.name == "t" })
        #expect(table.pages.damaged == 3 && report.pages.zeroed == 3)
        #expect(report.pages.damaged == 3, "\(report.pages)")
    }

    /// The main file's header zeroed, page 1 committed in the `-wal`: SQLite reads the database
    /// through that page, and so does salvage — its 40 reserved bytes per page, not Core Data's
    /// none (a review's: 458 pages damaged, 375 rows partial, 9 unreadable).
    @Test func theWALsPageOneGivesTheHeaderTheMainFileLost() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            var reserve: Int32 = 40
            #expect(sqlite3_file_control(connection.handle, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) == SQLITE_OK)
            try connection.execute("""
                CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, b BLOB);
                WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 400)
                INSERT INTO t SELECT i, 'v' || i, zeroblob(i * 13 % 9000) FROM k;
                VACUUM;
                """)
            _ = try connection.scalar("PRAGMA journal_mode = WAL")
            try connection.disableCheckpointOnClose()
            try connection.execute("PRAGMA wal_autocheckpoint = 0; CREATE TABLE u (x); INSERT INTO u VALUES (1)")
        }
        #expect(FileManager.default.fileExists(atPath: store + "-wal"))
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let report = try Salvager.salvage(store: store, into: directory.path("out.sqlite"))
        #expect(report.totals.recovered == 401 && report.totals.partial == 0 && report.totals.unreadable == 0, "\(report.totals)")
        #expect(report.pages.damaged == 0, "\(report.pages)")
        #expect(report.notes.contains { $0.contains("the header of page 1 as the -wal commits it is used") }, "\(report.notes)")
    }

    /// A table name holding a NUL (SQLite reads a statement's text up to it): the table is written
    /// with U+FFFD for it, and noted. It used to end the salvage with "unrecognized token"
    /// (exit 74), every other table's rows with it.
    @Test func aTableNameWithANulIsWrittenWithAReplacementCharacter() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let original = try SalvageFixtures.rows(of: store)
        try SalvageFixtures.editSchema(of: store, """
            UPDATE sqlite_schema SET name = 'peo' || char(0) || 'ple', tbl_name = 'peo' || char(0) || 'ple' WHERE name = 'people';
            """)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["peo\u{FFFD}ple"] == original["people"])
        #expect(recovered["events"] == original["events"])
        #expect(report.tables.first { $0.name == "peo\u{FFFD}ple" }?.rows.recovered == original["people"]?.count)
        #expect(report.notes.contains("table peo\u{FFFD}ple: its name holds NUL characters or noncharacters, written as U+FFFD"))
    }

    /// A noncharacter (U+FFFF, U+FFFE) in a UTF-16 store's schema row, as damage leaves it:
    /// SQLite makes it U+FFFD when it writes the new table, so the column is written so named.
    /// A review's salvage ended there for every table (exit 74, "no column named z\u{FFFF}REAL").
    @Test(arguments: [0xFFFF, 0xFFFE] as [UInt16])
    func aNoncharacterInAUTF16SchemaIsWrittenAsAReplacementCharacter(scalar: UInt16) throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("u.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            PRAGMA encoding = 'UTF-16le'; CREATE TABLE alt (x INT, z REAL DEFAULT 2.5);
            WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 99) INSERT INTO alt SELECT i, i FROM k;
            """)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: store))
        let needle = Data("z REAL".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let at = try #require(bytes.range(of: needle)).lowerBound
        bytes[at + 2] = UInt8(scalar & 0xFF)
        bytes[at + 3] = UInt8(scalar >> 8)
        try bytes.write(to: URL(fileURLWithPath: store))
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["alt"]?.count == 100 && report.totals.recovered == 100)
        #expect(report.notes.contains("table alt: the name of its column 2 holds noncharacters, written as U+FFFD"), "\(report.notes)")
    }

    /// A UTF-16 database comes back in its own encoding, its records copied as they are (the
    /// text's bytes unchanged), and reads back the same.
    @Test(arguments: ["UTF-16le", "UTF-16be"])
    func utf16DatabaseKeepsItsEncodingAndItsText(encoding: String) throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("u.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("PRAGMA encoding = '\(encoding)'; CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, note)")
            try connection.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
                + "INSERT INTO t SELECT i, 'nom ' || i || ' é✓😀', printf('%.*c', i % 900, 'ß') FROM n")
        }
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.rowsCopiedPageByPage == 3000)
        let check = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try check.scalar("PRAGMA encoding") == .text(encoding))
        #expect(try SalvageFixtures.rows(of: output)["t"] == SalvageFixtures.rows(of: store)["t"])
        #expect(try check.scalar("PRAGMA integrity_check") == .text("ok"))
    }

    /// The header's text-encoding byte (56) damaged — to another encoding or to none — on a UTF-8
    /// and a UTF-16le store: the schema's own text says which encoding the file is in, so every
    /// table and every text comes back. A wrong valid value used to lose the schema (every row in
    /// lost and found) and read all text in the wrong encoding.
    @Test(arguments: ["UTF-8", "UTF-16le"])
    func aDamagedEncodingByteIsToldByTheSchema(encoding: String) throws {
        let directory = try TemporaryDirectory()
        let pristine = directory.path("pristine.sqlite")
        try StoreFixtureBuilder.database(at: pristine, sql: """
            PRAGMA encoding = '\(encoding)';
            CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE notes (body TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
            INSERT INTO people SELECT i, 'Zoë ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
            INSERT INTO notes SELECT 'note ✓ ' || i FROM n;
            """)
        let original = try SalvageFixtures.rows(of: pristine)
        let actual: UInt8 = encoding == "UTF-8" ? 1 : 2
        for value: UInt8 in [0, 1, 2, 3, 7] where value != actual {
            let store = directory.path("byte\(value).sqlite")
            try FileManager.default.copyItem(atPath: pristine, toPath: store)
            try SalvageFixtures.overwrite(store, at: 56, with: Data([0, 0, 0, value]))
            let output = directory.path("out\(value).sqlite")
            let report = try Salvager.salvage(store: store, into: output)
            #expect(report.schemaSource == "sqlite_schema", "byte \(value)")
            #expect(try SalvageFixtures.rows(of: output) == original, "byte \(value)")
            #expect(report.lostAndFound.rows == 0, "byte \(value)")
            #expect(report.notes.contains { $0.contains("the schema's text is \(encoding == "UTF-8" ? "UTF-8" : "UTF-16le")") }, "byte \(value): \(report.notes)")
        }
    }

    /// The text report's lost-and-found line says where such rows went, and never "not written"
    /// in plain mode, which writes them all.
    @Test func lostAndFoundLineSaysWhereRowsWent() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let clean = directory.path("clean.sqlite")
        let connection = try SQLiteConnection(path: clean, options: SQLiteOpenOptions(mode: .create))
        try connection.execute("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2)")
        let cleanReport = try Salvager.salvage(store: clean, into: directory.path("clean-out.sqlite"))
        #expect(cleanReport.renderText().contains("  Lost and found  0 live rows, 0 deleted rows of no known table\n"))
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let report = try Salvager.salvage(store: store, into: directory.path("out.sqlite"))
        let text = report.renderText()
        #expect(text.contains("  Lost and found  \(report.lostAndFound.rows) live rows, \(report.lostAndFound.deletedRows) deleted rows in lost_and_found_"))
        #expect(!text.contains("not written"))
    }

    /// Rows from free pages never join the live table: they go to `deleted_and_found_<n>`, named
    /// by the table they most likely came from.
    @Test func deletedRowsAreKeptApart() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store, rows: 300)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        let last = SalvageFixtures.lastLivePerson()
        #expect(recovered["people"]?.count == Int(last))
        #expect(recovered["people"]?.keys.allSatisfy { $0 <= last } == true, "no deleted row among the live ones")
        let loose = report.lostAndFound.tables.filter { $0.hasPrefix("deleted_and_found_") }
        #expect(!loose.isEmpty)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        var deletedIDs: [Int64] = []
        for table in loose {
            deletedIDs += try connection.rows("SELECT id FROM \(table.quotedSQLIdentifier) WHERE likely_table = 'people'").compactMap { $0[0].int64 }
        }
        #expect(!deletedIDs.isEmpty)
        #expect(deletedIDs.allSatisfy { $0 > last }, "only rows that were deleted")
        #expect(Set(deletedIDs).count == deletedIDs.count)
        #expect(report.tables.first { $0.name == "people" }?.rows.deleted == deletedIDs.count)
    }

    /// What the pointer map calls a free page is read as one, its rows deleted ones — never
    /// mixed into a live table, and never lost. Live leaves whose map entries were set to free
    /// (`people`'s root zeroed, so no tree vouches for them) are such a case: their rows land in
    /// `deleted_and_found`, kept (a first fix that read them as live put deleted rows back into
    /// live tables in other cases; Docs/SALVAGE.md, Limits). Really free leaves whose freelist
    /// trunk is gone are deleted rows, through the map.
    @Test func whatThePointerMapCallsFreeIsDeletedAndKept() throws {
        let directory = try TemporaryDirectory()
        let pristine = directory.path("pristine.sqlite")
        try SalvageFixtures.plainDatabase(at: pristine)
        let original = try SalvageFixtures.rows(of: pristine)
        let data = try Data(contentsOf: URL(fileURLWithPath: pristine))
        let root = try #require(try SalvageFixtures.rootPage(of: "people", in: pristine))
        // Page 2 is the first pointer map: five bytes per page from page 3 (type, parent).
        let leaves = (3...data.count / 4096).filter { page in
            data[4096 + 5 * (page - 3)] == 5 && SalvageFixtures.u32(data, at: 4096 + 5 * (page - 3) + 1) == root
        }
        #expect(leaves.count >= 2)

        let lying = directory.path("lying.sqlite")
        try data.write(to: URL(fileURLWithPath: lying))
        try SalvageFixtures.zeroPage(root, of: lying, pageSize: 4096)
        for page in leaves { try SalvageFixtures.overwrite(lying, at: 4096 + 5 * (page - 3), with: Data([2, 0, 0, 0, 0])) }
        let lyingReport = try Salvager.salvage(store: lying, into: directory.path("lying-out.sqlite"))
        // Every live person, by id and name: in `people`, or among the deleted rows.
        let out = try SQLiteConnection(path: directory.path("lying-out.sqlite"), options: SQLiteOpenOptions(mode: .immutable))
        var kept = Set(try out.rows("SELECT id, name FROM people").map { "\($0[0].int64 ?? 0) \($0[1].string ?? "")" })
        for table in lyingReport.lostAndFound.tables where table.hasPrefix("deleted_and_found_") {
            for row in try out.rows("SELECT id, c1 FROM \(table.quotedSQLIdentifier) WHERE likely_table = 'people'") {
                kept.insert("\(row[0].int64 ?? 0) \(row[1].string ?? "")")
            }
        }
        let live = try SQLiteConnection(path: pristine, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT id, name FROM people").map { "\($0[0].int64 ?? 0) \($0[1].string ?? "")" }
        #expect(live.count == 150 && live.allSatisfy { kept.contains($0) }, "every live row kept, as live or deleted")
        #expect(lyingReport.tables.first { $0.name == "people" }?.rows.deleted ?? 0 > 0)

        // The freelist's first trunk zeroed: its leaves are listed nowhere but in the map.
        let trunk = SalvageFixtures.u32(data, at: 32)
        #expect(trunk > 0 && SalvageFixtures.u32(data, at: (trunk - 1) * 4096 + 4) > 0, "the fixture has free leaves")
        let broken = directory.path("broken.sqlite")
        try data.write(to: URL(fileURLWithPath: broken))
        try SalvageFixtures.zeroPage(trunk, of: broken, pageSize: 4096)
        let brokenReport = try Salvager.salvage(store: broken, into: directory.path("broken-out.sqlite"))
        #expect(try SalvageFixtures.rows(of: directory.path("broken-out.sqlite"))["people"] == original["people"])
        #expect(brokenReport.tables.first { $0.name == "people" }?.rows.deleted ?? 0 > 0, "still deleted rows")
        #expect(!brokenReport.notes.contains { $0.contains("table leaves free") })
    }

    /// The header's freelist fields zeroed and one live leaf of the table zeroed too: the free
    /// leaves (rows 501–1,500, deleted) lie where the table's tree was read whole, so they stay
    /// deleted; only a leaf whose rowids fall in the lost leaf's range could be its orphan. They
    /// used to go back into the live table (905 deleted rows), the tree being "damaged".
    @Test func deletedRowsStayDeletedBesideADamagedLeaf() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            PRAGMA auto_vacuum = INCREMENTAL; PRAGMA secure_delete = OFF;
            CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO t SELECT i, printf('row %d %.100c', i, 'x') FROM n;
            DELETE FROM t WHERE id BETWEEN 501 AND 1500;
            """)
        let original = try #require(try SalvageFixtures.rows(of: store)["t"])
        let data = try Data(contentsOf: URL(fileURLWithPath: store))
        let root = try #require(try SalvageFixtures.rootPage(of: "t", in: store))
        let leaf = try #require(SalvageFixtures.firstChild(ofInteriorPage: root, in: data))
        try SalvageFixtures.overwrite(store, at: 32, with: Data(count: 8))
        try SalvageFixtures.zeroPage(leaf, of: store, pageSize: 4096)
        let report = try Salvager.salvage(store: store, into: directory.path("out.sqlite"))
        let recovered = try #require(try SalvageFixtures.rows(of: directory.path("out.sqlite"))["t"])
        #expect(recovered.keys.allSatisfy { $0 <= 500 || $0 > 1500 }, "no deleted row in the live table")
        #expect(recovered.allSatisfy { original[$0.key] == $0.value })
        #expect(recovered.count > 900 && recovered.count < original.count, "every live row but the zeroed leaf's")
        #expect(report.tables.first { $0.name == "t" }?.rows.deleted ?? 0 > 800)
    }

    /// A copy of a live leaf of a 1,500-column table that no tree reaches (its old place, after
    /// the table's root page was rewritten elsewhere): telling a second copy from another row
    /// asks SQLite about every column, and a chain of 1,500 `AND`s is past its expression depth
    /// of 1,000 — the salvage used to end there, exit 74. The same copy is a duplicate.
    @Test func aDuplicateInAVeryWideTableIsToldApart() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        let columns = (1...1_500).map { "c\($0)" }
        try StoreFixtureBuilder.database(at: store, sql: """
            PRAGMA page_size = 65536; PRAGMA auto_vacuum = 0;
            CREATE TABLE w (id INTEGER PRIMARY KEY, \(columns.joined(separator: ", ")));
            INSERT INTO w (id, c1, c1500) VALUES (1, 'one', 1500), (2, 'two', 3000);
            """)
        let original = try SalvageFixtures.rows(of: store)
        // Copy the table's one leaf (its root) to a new page at the end: a stale copy no tree reaches.
        let root = try #require(try SalvageFixtures.rootPage(of: "w", in: store))
        let data = try Data(contentsOf: URL(fileURLWithPath: store))
        let leaf = data[(root - 1) * 65536 ..< root * 65536]
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: store))
        try handle.seekToEnd()
        try handle.write(contentsOf: leaf)
        try handle.close()
        let report = try Salvager.salvage(store: store, into: directory.path("out.sqlite"))
        #expect(try SalvageFixtures.rows(of: directory.path("out.sqlite"))["w"] == original["w"])
        let w = try #require(report.tables.first { $0.name == "w" })
        #expect(w.rows.duplicatesResolved == 2, "the same rows again: duplicates, not kept apart")
        #expect(report.lostAndFound.rows == 0)
        #expect(SalvageRowWriter.allOf(["a", "b", "c"]) == "(a AND (b AND c))")
    }

    /// Really free leaves that only the pointer map lists stay deleted: with the header's freelist
    /// head and count zeroed (one 8-byte hit), and in an undamaged WAL store whose current header
    /// (page 1) is in the `-wal` while the main file's says no free page. Both used to be read as
    /// live (the count leaving "no room"): deleted rows put back into their live table.
    @Test func freeLeavesOfAWholeTableStayDeleted() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let original = try SalvageFixtures.rows(of: store)
        try SalvageFixtures.overwrite(store, at: 32, with: Data(count: 8))
        let report = try Salvager.salvage(store: store, into: directory.path("out.sqlite"))
        #expect(try SalvageFixtures.rows(of: directory.path("out.sqlite"))["people"] == original["people"])
        #expect(report.tables.first { $0.name == "people" }?.rows.deleted ?? 0 > 0)
        #expect(!report.notes.contains { $0.contains("read as live pages") })

        let wal = directory.path("w.sqlite")
        let writer = try SQLiteConnection(path: wal, options: SQLiteOpenOptions(mode: .create))
        try writer.execute("""
            PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
            CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO t SELECT i, printf('%.60c', 'v') FROM n;
            PRAGMA wal_checkpoint(TRUNCATE);
            PRAGMA secure_delete = OFF; DELETE FROM t WHERE id <= 2000;
            """)
        let live = try writer.rows("SELECT id, v FROM t ORDER BY id")
        let freePages = try #require(try writer.scalar("PRAGMA freelist_count")?.int64)
        try FileManager.default.copyItem(atPath: wal, toPath: directory.path("copy.sqlite"))
        try FileManager.default.copyItem(atPath: wal + "-wal", toPath: directory.path("copy.sqlite-wal"))
        // The freelist as committed: the -wal's page 1, not the main file's (which says none).
        #expect(freePages > 0)
        #expect(try PageSource(path: directory.path("copy.sqlite")).geometry.freelistPageCount == UInt32(freePages))
        let walReport = try Salvager.salvage(store: directory.path("copy.sqlite"), into: directory.path("wal-out.sqlite"))
        let written = try SQLiteConnection(path: directory.path("wal-out.sqlite"), options: SQLiteOpenOptions(mode: .immutable))
        #expect(try written.rows("SELECT id, v FROM t ORDER BY id") == live, "the table as SQLite reads it")
        #expect(walReport.tables.first { $0.name == "t" }?.rows.deleted ?? 0 > 0)
    }

    /// Orphaned leaves of `notes` (its root zeroed, no pointer map) whose records were written
    /// before `ALTER TABLE … ADD COLUMN` fit `tags` better by shape, and `tags` already holds their
    /// rowids with other values: they are not second copies, so they go to lost and found. They
    /// used to be counted as `tags`' duplicates and written nowhere: 300 of 300 notes lost.
    @Test func anOrphanWhoseRowidIsTakenByAnotherRowIsKept() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            PRAGMA page_size = 1024; PRAGMA auto_vacuum = 0;
            CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT);
            CREATE TABLE tags (id INTEGER PRIMARY KEY, label TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO notes SELECT i, 'note ' || i FROM n;
            ALTER TABLE notes ADD COLUMN body TEXT;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO tags SELECT i, 'tag ' || i FROM n;
            """)
        let original = try SalvageFixtures.rows(of: store)
        let root = try #require(try SalvageFixtures.rootPage(of: "notes", in: store))
        try SalvageFixtures.zeroPage(root, of: store, pageSize: 1024)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["tags"] == original["tags"])
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        var notes: [Int64: SQLiteValue] = [:]
        for table in report.lostAndFound.tables where table.hasPrefix("lost_and_found_") {
            for row in try connection.rows("SELECT id, c1 FROM \(table.quotedSQLIdentifier)") { notes[row[0].int64 ?? 0] = row[1] }
        }
        notes.merge(try #require(recovered["notes"]).mapValues { $0[1] }) { kept, _ in kept }
        #expect(notes == (original["notes"] ?? [:]).mapValues { $0[1] }, "every note, in notes or in lost and found")
        #expect(report.notes.contains { $0.hasSuffix("rows whose rowid their table already held with other values were kept in lost and found") })
        #expect(report.tables.first { $0.name == "tags" }?.rows.duplicatesResolved == 0)
    }

    /// A stale copy of a live leaf on a free page (what an update that moves rows leaves behind),
    /// its text changed: the tree's copy wins, the other is counted as a duplicate resolved —
    /// never written, never taken for deleted rows.
    @Test func staleCopyOnAFreePageLosesToTheTree() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let original = try SalvageFixtures.rows(of: store)
        var data = try Data(contentsOf: URL(fileURLWithPath: store))
        let root = try #require(try SalvageFixtures.rootPage(of: "people", in: store))
        let leaf = try #require(SalvageFixtures.firstChild(ofInteriorPage: root, in: data))
        #expect(data[(leaf - 1) * 4096] == 13, "a table leaf")
        let cells = SalvageFixtures.u16(data, at: (leaf - 1) * 4096 + 3)
        let trunk = SalvageFixtures.u32(data, at: 32)
        #expect(trunk > 0 && SalvageFixtures.u32(data, at: (trunk - 1) * 4096 + 4) > 0, "the fixture has free leaves")
        let free = SalvageFixtures.u32(data, at: (trunk - 1) * 4096 + 8)
        var copy = data.subdata(in: (leaf - 1) * 4096..<leaf * 4096)
        var replaced = 0
        while let range = copy.range(of: Data("person ".utf8)) {
            copy.replaceSubrange(range, with: Data("PERSON ".utf8))
            replaced += 1
        }
        #expect(replaced == cells)
        data.replaceSubrange((free - 1) * 4096..<free * 4096, with: copy)
        try data.write(to: URL(fileURLWithPath: store))

        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["people"] == original["people"], "the tree's copies, not the stale ones")
        let people = try #require(report.tables.first { $0.name == "people" })
        #expect(people.rows.duplicatesResolved == cells)
        #expect(report.totals.duplicatesResolved == cells)
        let stale = recovered.filter { $0.key.hasPrefix("deleted_and_found_") }.values.flatMap(\.values)
            .filter { $0.contains { $0.string?.hasPrefix("PERSON ") == true } }
        #expect(stale.isEmpty, "a stale copy is not a deleted row")
    }

    /// The root page of `people` (an interior page) zeroed: its leaves are orphans, still live
    /// data, named by the pointer map; every live row comes back in its table, and a note — in
    /// the text report and the JSON one — says the root was lost and where the rows were found
    /// instead (nothing said so before stop 25: the table read as intact).
    @Test func orphanedLeavesAreStillRecovered() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let original = try SalvageFixtures.rows(of: store)
        let root = try #require(try SalvageFixtures.rootPage(of: "people", in: store))
        try SalvageFixtures.zeroPage(root, of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(try SalvageFixtures.rows(of: output)["people"] == original["people"])
        let people = try #require(report.tables.first { $0.name == "people" })
        #expect(people.identifiedBy.schemaTree == 0)
        #expect(people.identifiedBy.pointerMap > 0)
        #expect(people.pages.damaged == 1)
        let found = people.identifiedBy.pointerMap + people.identifiedBy.recordShape
        let note = "table people: its root page \(root) is zeroed; \(found) leaf pages of its rows found without it "
            + "(by pointer map \(people.identifiedBy.pointerMap), by row shape \(people.identifiedBy.recordShape))"
        #expect(report.notes.contains(note), "\(report.notes)")
        #expect(report.renderText().contains("  - \(note)\n"))
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any]
        #expect((json?["notes"] as? [String])?.contains(note) == true)
        #expect(!report.notes.contains { $0.hasPrefix("table events:") }, "a root that was read is not noted")
    }

    /// Two kinds of rowid table the parser once misread, undamaged: `INTEGER PRIMARY KEY DESC`
    /// on the column is not the rowid (SQLite keeps it in the record and indexes it), and an
    /// AUTOINCREMENT table comes with `sqlite_sequence`. Both used to lose every row to lost and
    /// found (or, beside a table of the same record shape, to no table at all).
    @Test func descendingKeysAndAutoincrementTablesComeBackWhole() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE a (id INT PRIMARY KEY, x TEXT);
            CREATE TABLE b (id INTEGER PRIMARY KEY DESC, x TEXT);
            CREATE TABLE s (id INTEGER PRIMARY KEY AUTOINCREMENT, x TEXT);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO a SELECT i, 'a ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO b SELECT i, 'b ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250)
            INSERT INTO s (x) SELECT 's ' || i FROM n;
            """)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let original = try SalvageFixtures.rows(of: store)
        let recovered = try SalvageFixtures.rows(of: output)
        for table in ["a", "b", "s"] {
            #expect(recovered[table] == original[table], "table \(table)")
            #expect(report.tables.first { $0.name == table }?.rows.recovered == original[table]?.count, "table \(table)")
        }
        #expect(original["b"]?.count == 300 && original["s"]?.count == 250)
        #expect(report.pages.damaged == 0)
        #expect(report.tables.allSatisfy { $0.rows.duplicatesResolved == 0 })
        // sqlite_sequence's one row is written back to the new file's, not to lost and found.
        #expect(report.lostAndFound.rows == 0)
        #expect(try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT seq FROM sqlite_sequence WHERE name = 's'")?.int64 == 250)
    }

    /// `AUTOINCREMENT` is a promise that a rowid is never handed out twice: the new table is made
    /// `AUTOINCREMENT` again and `sqlite_sequence` written back, so the next insert continues
    /// after the rows deleted before the damage (it used to reuse their rowids: the keyword was
    /// dropped and the entry went to lost and found). Both the page-by-page path (many rows)
    /// and the SQL path (a few) are covered.
    @Test(arguments: [600, 3])
    func autoincrementTablesKeepTheirLastRowid(rows: Int) throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE plain (x TEXT);
            CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, message TEXT);
            CREATE TABLE other (id INTEGER PRIMARY KEY AUTOINCREMENT, v);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO log (message) SELECT 'line ' || i FROM n;
            DELETE FROM log WHERE id > \(rows) - 2;
            INSERT INTO other (v) VALUES (1), (2);
            DELETE FROM other;
            """)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readWrite))
        #expect(try SalvageFixtures.rows(of: connection)["log"]?.count == rows - 2)
        let sequences = try connection.rows("SELECT name, seq FROM sqlite_sequence ORDER BY name").map { "\($0[0].string ?? "?")=\($0[1].int64 ?? -1)" }
        #expect(sequences == ["log=\(rows)", "other=2"])
        try connection.execute("INSERT INTO log (message) VALUES ('after'); INSERT INTO other (v) VALUES (3)")
        #expect(try connection.scalar("SELECT max(id) FROM log")?.int64 == Int64(rows) + 1)
        #expect(try connection.scalar("SELECT id FROM other")?.int64 == 3)
        #expect(report.lostAndFound.rows == 0)
        let entry = try #require(report.tables.first { $0.name == "sqlite_sequence" })
        #expect(entry.disposition == "bookkeeping" && entry.rows.recovered == 2)
        #expect(!report.notes.contains { $0.contains("sqlite_sequence") })
    }

    /// `sqlite_sequence` is an ordinary table: an app may write any value into `seq`, and SQLite
    /// reads it by its integer value for the next rowid (text '500' as 500, 600.9 as 600, NULL
    /// and a blob of no digits as 0). Every such row is kept, read the same way, so the next
    /// rowid is SQLite's (such rows used to be dropped: t1's next rowid was 4, not 501).
    @Test func sequenceValuesOfEveryStorageClassAreReadAsSQLiteReadsThem() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        var sql = ""
        for table in ["t1", "t2", "t3", "t4", "t5"] {
            sql += "CREATE TABLE \(table) (id INTEGER PRIMARY KEY AUTOINCREMENT, v); INSERT INTO \(table) (v) VALUES (1), (2), (3);"
        }
        sql += """
            UPDATE sqlite_sequence SET seq = '500' WHERE name = 't1';
            UPDATE sqlite_sequence SET seq = 600.9 WHERE name = 't2';
            UPDATE sqlite_sequence SET seq = NULL WHERE name = 't3';
            UPDATE sqlite_sequence SET seq = x'00ff' WHERE name = 't4';
            UPDATE sqlite_sequence SET seq = ' 42abc' WHERE name = 't5';
            """
        try StoreFixtureBuilder.database(at: store, sql: sql)
        // What SQLite itself hands out next, on a copy of the original.
        let reference = directory.path("reference.sqlite")
        try FileManager.default.copyItem(atPath: store, toPath: reference)
        let original = try SQLiteConnection(path: reference, options: SQLiteOpenOptions(mode: .readWrite))
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let salvaged = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readWrite))
        var next: [String: [Int64?]] = [:]
        for table in ["t1", "t2", "t3", "t4", "t5"] {
            for connection in [original, salvaged] {
                try connection.execute("INSERT INTO \(table) (v) VALUES ('next')")
                next[table, default: []].append(try connection.scalar("SELECT max(id) FROM \(table)")?.int64)
            }
        }
        #expect(next["t1"] == [501, 501] && next["t2"] == [601, 601] && next["t5"] == [43, 43], "\(next)")
        #expect(next.values.allSatisfy { $0[0] == $0[1] }, "the next rowid as the original's: \(next)")
        #expect(report.tables.first { $0.name == "sqlite_sequence" }?.rows.recovered == 5)
        #expect(report.lostAndFound.rows == 0)
    }

    /// A table whose `sqlite_sequence` entry is lost with its page gets its largest recovered
    /// rowid (the key's, not that of a column named `rowid`), and the report says that rows
    /// deleted after it may have had larger ones.
    @Test func aLostSequenceEntryIsTheLargestRecoveredRowidNoted() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, message TEXT, rowid INTEGER);
            INSERT INTO log (message, rowid) VALUES ('a', 999), ('b', 999), ('c', 999), ('d', 999);
            DELETE FROM log WHERE id = 4;
            """)
        let root = try #require(try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_sequence'")?.int64)
        try SalvageFixtures.zeroPage(Int(root), of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try connection.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'log'")?.int64 == 3)
        #expect(report.notes.contains { $0.contains("table log: AUTOINCREMENT, its sqlite_sequence entry was not recovered") })
    }

    /// A store of 300 `AUTOINCREMENT` tables with long names (so `sqlite_sequence` spans pages
    /// under an interior root), `seq` 5 each, rows past 1–3 deleted; `adjust` runs on it before it
    /// is damaged. Returns the store's path and its `sqlite_sequence`.
    private func storeOfCounters(
        in directory: TemporaryDirectory, firstSQL: String = "", extraSQL: String = ""
    ) throws -> (path: String, sequence: [String: Int64]) {
        let store = directory.path("s.sqlite")
        var sql = firstSQL
        for index in 0..<300 {
            let name = Self.counter(index)
            sql += "CREATE TABLE \(name) (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT);"
            sql += "INSERT INTO \(name) (v) VALUES ('a'), ('b'), ('c'), ('d'), ('e'); DELETE FROM \(name) WHERE id > \(index % 3 + 1);"
        }
        try StoreFixtureBuilder.database(at: store, sql: sql + extraSQL)
        return (store, try Self.sequence(of: store))
    }

    private static func counter(_ index: Int) -> String { "table_with_a_rather_long_name_for_its_counter_\(index)" }

    private static func sequence(of path: String) throws -> [String: Int64] {
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readOnly))
        return Dictionary(uniqueKeysWithValues: try connection.rows("SELECT name, seq FROM sqlite_sequence").compactMap { row in
            row[0].string.flatMap { name in row[1].int64.map { (name, $0) } }
        })
    }

    /// `sqlite_sequence`'s interior root lost: its leaves are orphans, taken as its own because
    /// their rows name the `AUTOINCREMENT` tables. Before, they went to lost and found — or, with a
    /// user table shaped (text, integer) in the store (`withLookAlike`), into that table as rows it
    /// never had — and every counter fell to its table's largest recovered rowid, so rowids of
    /// rows deleted at a table's end were handed out again. An entry past 2^62 on such a leaf is
    /// not believed (a user table's look-alike row would leave the table no rowid to insert).
    @Test(arguments: [false, true])
    func sequenceEntriesBelowALostInteriorRootAreRestored(withLookAlike: Bool) throws {
        let directory = try TemporaryDirectory()
        let huge = "UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = '\(Self.counter(5))';"
        let lookAlike = withLookAlike ? "CREATE TABLE kv (k TEXT, v INTEGER); INSERT INTO kv VALUES ('a', 1), ('b', 2);" : ""
        let (store, original) = try storeOfCounters(in: directory, extraSQL: huge + lookAlike)
        #expect(original.count == 300 && original.values.filter { $0 == 5 }.count == 299)
        let root = try #require(try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_sequence'")?.int64)
        let header = try FileHandle(forReadingFrom: URL(fileURLWithPath: store))
        try header.seek(toOffset: UInt64(root - 1) * 4096)
        #expect(try header.read(upToCount: 1) == Data([0x05]), "the root is an interior table page")
        try header.close()
        try SalvageFixtures.zeroPage(Int(root), of: store, pageSize: 4096)

        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        var expected = original
        expected[Self.counter(5)] = 3  // its largest recovered rowid
        #expect(try Self.sequence(of: output) == expected)
        #expect(report.notes.contains { $0.contains("table \(Self.counter(5)): an sqlite_sequence entry of 9223372036854775807, past 2^62") })
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readWrite))
        if withLookAlike { #expect(try connection.scalar("SELECT count(*) FROM kv")?.int64 == 2, "no row of sqlite_sequence's in kv") }
        // The next row of a table whose rows 2–5 were deleted gets rowid 6, as in the store.
        try connection.execute("INSERT INTO \(Self.counter(0)) (v) VALUES ('next')")
        #expect(try connection.scalar("SELECT max(id) FROM \(Self.counter(0))")?.int64 == 6)
    }

    /// `sqlite_sequence`'s own schema row lost (its pages intact, reached by no tree): the
    /// `AUTOINCREMENT` tables imply it, so it is assumed and its leaves are known by the names
    /// their rows hold. Before, they went by shape into the user table shaped (text, integer),
    /// 300 rows `kv` never had, and every counter fell to its table's largest recovered rowid.
    @Test func sequenceEntriesWhoseSchemaRowIsLostAreRestored() throws {
        let directory = try TemporaryDirectory()
        let (store, original) = try storeOfCounters(
            in: directory, extraSQL: "CREATE TABLE kv (k TEXT, v INTEGER); INSERT INTO kv VALUES ('a', 1), ('b', 2);")
        #expect(original.count == 300)
        try SalvageFixtures.editSchema(of: store, "DELETE FROM sqlite_schema WHERE name = 'sqlite_sequence';")
        let orphaned = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try orphaned.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_sequence'")?.int64 == 0)

        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(try Self.sequence(of: output) == original)
        #expect(report.notes.contains { $0.hasPrefix("sqlite_sequence: its schema row is lost; assumed, as its 300 AUTOINCREMENT tables imply") })
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readWrite))
        #expect(try connection.scalar("SELECT count(*) FROM kv")?.int64 == 2, "no row of sqlite_sequence's in kv")
        try connection.execute("INSERT INTO \(Self.counter(0)) (v) VALUES ('next')")
        #expect(try connection.scalar("SELECT max(id) FROM \(Self.counter(0))")?.int64 == 6)
    }

    /// A user table shaped like `sqlite_sequence` — a change log of (table name, rowid) rows
    /// naming `AUTOINCREMENT` tables — whose interior root is lost keeps every row: a leaf that
    /// names a table twice is not `sqlite_sequence`'s (it has one row per table). A review found
    /// that the first version of the claim took all 2,000 rows as counters and wrote none (the
    /// counters rose to 1999 and 2000).
    @Test func aChangeLogShapedLikeSqliteSequenceLosesNoRow() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT);
            CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT);
            CREATE TABLE changelog (tbl TEXT, rid INTEGER);
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 50)
            INSERT INTO events (v) SELECT 'e' || i FROM k;
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 50)
            INSERT INTO notes (v) SELECT 'n' || i FROM k;
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 2000)
            INSERT INTO changelog SELECT CASE i % 2 WHEN 1 THEN 'events' ELSE 'notes' END, i FROM k;
            """)
        let root = try #require(try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'changelog'")?.int64)
        let original = try SalvageFixtures.rows(of: store)
        try SalvageFixtures.zeroPage(Int(root), of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        _ = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["changelog"]?.count == 2000)
        let sameRows = recovered["changelog"] == original["changelog"]
        #expect(sameRows)
        #expect(try Self.sequence(of: output) == ["events": 50, "notes": 50])
    }

    /// A user table with one row per `AUTOINCREMENT` table (a name and a number, as
    /// `sqlite_sequence` has), whose interior root is lost: its leaves look like
    /// `sqlite_sequence`'s and are taken as such, so their rows are also kept in lost and found —
    /// none is lost — and their numbers can only raise the counters (7 here, over the store's 5).
    @Test func aLookAlikeWithOneRowPerTableIsKeptInLostAndFound() throws {
        let directory = try TemporaryDirectory()
        let (store, original) = try storeOfCounters(in: directory, extraSQL: """
            CREATE TABLE stats (tbl TEXT, n INTEGER);
            INSERT INTO stats SELECT name, 7 FROM sqlite_sequence;
            """)
        let root = try #require(try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'stats'")?.int64)
        try SalvageFixtures.zeroPage(Int(root), of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        _ = try Salvager.salvage(store: store, into: output)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly))
        let kept = try connection.scalar("SELECT count(DISTINCT c0) FROM lost_and_found_2 WHERE c1 = 7")?.int64
        #expect(kept == 300, "every row of stats is kept")
        let restored = try Self.sequence(of: output)
        #expect(restored.keys.sorted() == original.keys.sorted())
        #expect(restored.allSatisfy { $0.value >= original[$0.key] ?? .max }, "no counter fell")
    }

    /// A `sqlite_sequence` leaf with a row that fits no table (an entry for a table the schema
    /// does not have) is still `sqlite_sequence`'s, beside a user table shaped (text, integer):
    /// a review found that one such row refused the whole leaf, which then went to `settings`
    /// by shape (72 rows it never had) and 72 counters fell. And look-alike rows naming the same
    /// tables again and again (a change log swept before the real entries) spend no bound: a
    /// review's 5,000 such rows used up the 1 MiB of names and all 400 counters fell.
    @Test func sequenceLeavesSurviveAStrayRowAndLookAlikesBeforeThem() throws {
        let directory = try TemporaryDirectory()
        let names = (0..<300).map { "('\(Self.counter($0))')" }.joined(separator: ", ")
        let (store, original) = try storeOfCounters(
            in: directory,
            firstSQL: """
                CREATE TABLE changelog (tbl TEXT, rid INTEGER);
                CREATE TABLE counted (name TEXT);
                INSERT INTO counted VALUES \(names);
                WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 24999)
                INSERT INTO changelog SELECT (SELECT name FROM counted WHERE rowid = i % 300 + 1), i % 4 FROM k;
                """,
            extraSQL: """
                CREATE TABLE settings (key TEXT, value INTEGER);
                INSERT INTO settings VALUES ('a', 1), ('b', 2);
                INSERT INTO sqlite_sequence VALUES ('legacy_table_gone', 1000);
                """)
        let source = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
        let roots = try ["sqlite_sequence", "changelog"].map { name in
            try #require(try source.scalar("SELECT rootpage FROM sqlite_schema WHERE name = ?", [.text(name)])?.int64)
        }
        #expect(roots[1] < roots[0], "the change log's pages come first")
        for root in roots { try SalvageFixtures.zeroPage(Int(root), of: store, pageSize: 4096) }
        let output = directory.path("out.sqlite")
        _ = try Salvager.salvage(store: store, into: output)
        var expected = original
        expected["legacy_table_gone"] = nil
        #expect(try Self.sequence(of: output) == expected)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try connection.scalar("SELECT count(*) FROM settings")?.int64 == 2)
        let changelog = try connection.scalar("SELECT count(*) FROM changelog")?.int64 ?? 0
        let lost = try connection.scalar("SELECT count(*) FROM lost_and_found_2 WHERE c1 BETWEEN 0 AND 3")?.int64 ?? 0
        #expect(changelog + lost >= 25_000, "every change log row is kept (\(changelog) in its table, \(lost) in lost and found)")
    }

    /// A table whose columns name a collation the salvage does not have (`COLLATE LOCALIZED`, as
    /// Android apps declare them, or an app's own) is understood and written as a table: before,
    /// SQLite's parser refused its statement ("no such collation sequence") and every row went
    /// to lost and found, its `AUTOINCREMENT` counter with it — from an undamaged store too.
    @Test func aTableWithACollationOfTheAppsOwnKeepsItsRows() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        let creator = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
        srsqlite_accept_any_collation(creator.handle)
        try creator.execute("""
            CREATE TABLE contacts (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT COLLATE LOCALIZED, phone TEXT COLLATE PHONEBOOK);
            CREATE INDEX contacts_by_name ON contacts (name COLLATE UNICODE);
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 500)
            INSERT INTO contacts (name, phone) SELECT 'name ' || i, '+41 ' || i FROM k;
            DELETE FROM contacts WHERE id > 480;
            """)
        let original = try SalvageFixtures.rows(of: creator)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.tables.first { $0.name == "contacts" }?.rows.recovered == 480)
        let recovered = try SalvageFixtures.rows(of: output)
        let sameRows = recovered["contacts"] == original["contacts"]
        #expect(sameRows)
        #expect(try Self.sequence(of: output) == ["contacts": 500])
    }

    /// A table whose `CHECK` constraint and generated columns call functions of the app's own
    /// (registered on its connections, unknown here) is understood and written as a table, its
    /// stored generated column as a column of values: before, SQLite's parser refused the
    /// statement ("no such function") and every row went to lost and found, its `AUTOINCREMENT`
    /// counter with it — from an undamaged store too.
    @Test func aTableCallingFunctionsOfTheAppsOwnKeepsItsRows() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE readings (
                id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT CHECK (lower(v) <> ''), n INTEGER,
                d AS (hex(n)) STORED, e AS (hex(n) || 'x'));
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 500)
            INSERT INTO readings (v, n) SELECT 'r' || i, i FROM k;
            DELETE FROM readings WHERE id > 480;
            """)
        let select = "SELECT id, v, n, d FROM readings ORDER BY id"
        let original = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly)).rows(select)
        #expect(original.count == 480)
        try SalvageFixtures.editSchema(of: store, """
            UPDATE sqlite_schema SET sql = replace(replace(sql, 'lower(', 'app_fold('), 'hex(', 'app_key(') WHERE name = 'readings';
            """)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.tables.first { $0.name == "readings" }?.rows.recovered == 480)
        #expect(!report.notes.contains { $0.contains("cannot be read") })
        let recovered = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly)).rows(select)
        #expect(recovered == original)
        #expect(try Self.sequence(of: output) == ["readings": 500])
    }

    /// `sqlite_sequence` lost from the schema, and its leaves not known by the names their rows
    /// hold (two of every three name tables the schema no longer has), so they belong to no known
    /// table: its rows land in `lost_and_found_2` and are read from there, as SQLite reads a `seq`
    /// (a real truncated, a text by its leading integer); one past 2^62 is not taken (noted). The
    /// rows stay in lost and found.
    @Test func sequenceEntriesAmongLostRowsAreReadAsSQLiteReadsThem() throws {
        let directory = try TemporaryDirectory()
        let (store, everyEntry) = try storeOfCounters(in: directory, extraSQL: """
            UPDATE sqlite_sequence SET seq = 1000000.7 WHERE name = '\(Self.counter(10))';
            UPDATE sqlite_sequence SET seq = '2000000 or so' WHERE name = '\(Self.counter(11))';
            UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = '\(Self.counter(5))';
            CREATE TABLE saved AS SELECT rowid AS r, name, seq FROM sqlite_sequence;
            DELETE FROM sqlite_sequence;
            INSERT INTO sqlite_sequence SELECT name, seq FROM (
                SELECT name, seq, r * 3 AS o FROM saved
                UNION ALL SELECT 'gone_a_' || r, 1, r * 3 + 1 FROM saved
                UNION ALL SELECT 'gone_b_' || r, 1, r * 3 + 2 FROM saved) ORDER BY o;
            DROP TABLE saved;
            """)
        let original = everyEntry.filter { !$0.key.hasPrefix("gone_") }
        #expect(original.count == 298 && everyEntry.count == 898, "the real and the text entry are not read as integers here")
        try SalvageFixtures.editSchema(of: store, "DELETE FROM sqlite_schema WHERE name = 'sqlite_sequence';")
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.notes.contains { $0.hasPrefix("sqlite_sequence: its schema row is lost") })
        #expect(report.tables.first { $0.name == "sqlite_sequence" }?.rows.recovered == 0, "assumed, but no leaf of it taken")
        var expected = original
        expected[Self.counter(10)] = 1_000_000
        expected[Self.counter(11)] = 2_000_000
        expected[Self.counter(5)] = 3  // its largest recovered rowid
        #expect(try Self.sequence(of: output) == expected)
        #expect(report.notes.contains { $0.contains("its sqlite_sequence entry was found among rows of no known table (5; the row stays in lost and found)") })
        #expect(report.notes.contains { $0.contains("table \(Self.counter(5)): a row of no known table names it with 9223372036854775807, past 2^62") })
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly))
        #expect(try connection.scalar("SELECT count(*) FROM lost_and_found_2")?.int64 ?? 0 >= 900, "the rows stay")
    }

    /// `sqlite_sequence` claims no lost leaf by the shape of its rows: the orphaned leaves of a
    /// user table of the same shape (two untyped columns) stay that table's.
    @Test func sqliteSequenceClaimsNoOrphanLeafByShape() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE counters (name, n);
            CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, message TEXT);
            INSERT INTO log (message) VALUES ('a');
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 2000)
            INSERT INTO counters SELECT 'counter ' || i, i FROM k;
            """)
        let original = try SalvageFixtures.rows(of: store)
        // The interior root page of `counters`: every leaf below it is an orphan.
        let root = try #require(try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
            .scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'counters'")?.int64)
        try SalvageFixtures.zeroPage(Int(root), of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let recovered = try SalvageFixtures.rows(of: output)
        #expect(recovered["counters"]?.count == 2000)
        let sameRows = recovered["counters"] == original["counters"]
        #expect(sameRows)
        #expect(report.tables.first { $0.name == "sqlite_sequence" }?.rows.recovered == 1, "its own row only")
        let names = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .readOnly)).rows("SELECT name FROM sqlite_sequence")
        #expect(names.map { $0.first?.string } == ["log"])
    }

    /// A `WITHOUT ROWID` table's rows live in an index b-tree, interior pages included: they are
    /// read from it and written to a `WITHOUT ROWID` table of the same key — values of every
    /// storage class, records spilling onto overflow pages, a key of two columns not in table
    /// order. A plain index's pages are recognised and left alone. (Such tables used to be
    /// skipped, their rows in no table.)
    @Test func withoutRowidTablesComeBackFromTheirIndexTrees() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: """
            CREATE TABLE settings (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
            CREATE TABLE pairs (a TEXT, b INT, c BLOB, d, PRIMARY KEY (c DESC, a)) WITHOUT ROWID;
            CREATE TABLE notes (body TEXT);
            CREATE INDEX notes_body ON notes (body);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
            INSERT INTO settings SELECT 'key ' || i, CASE WHEN i % 97 = 0 THEN printf('%.*c', 5000, 'v') ELSE i END FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
            INSERT INTO pairs SELECT 'a' || i, i, zeroblob(i % 50 + 1), CASE WHEN i % 3 = 0 THEN NULL ELSE i * 1.5 END FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
            INSERT INTO notes SELECT 'note ' || i FROM n;
            """)
        let queries = [
            "SELECT key, value, typeof(value) FROM settings ORDER BY key",
            "SELECT a, b, hex(c), d, typeof(d) FROM pairs ORDER BY a",
            "SELECT rowid, body FROM notes ORDER BY rowid",
        ]
        let original = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        let written = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        for query in queries { #expect(try written.rows(query) == original.rows(query), "\(query)") }
        #expect(try written.scalar("SELECT count(*) FROM pragma_table_list WHERE name = 'settings' AND wr = 1")?.int64 == 1)
        #expect(try written.scalar("PRAGMA integrity_check")?.string == "ok")
        let settings = try #require(report.tables.first { $0.name == "settings" })
        #expect(settings.disposition == "recovered" && settings.rows.recovered == 3000)
        #expect(settings.pages.read > 1 && settings.pages.damaged == 0)
        #expect(report.pages.overflow > 0, "the long values spill")
        #expect(report.lostAndFound.rows == 0, "no index entry taken for a row")
        #expect(report.totals.unreadable == 0)

        // The tree's leftmost leaf zeroed: the rows on the other pages still come back.
        let data = try Data(contentsOf: URL(fileURLWithPath: store))
        var page = try #require(try SalvageFixtures.rootPage(of: "settings", in: store))
        #expect(data[(page - 1) * 4096] == 2, "an interior index page")
        while data[(page - 1) * 4096] == 2 {
            page = SalvageFixtures.u32(data, at: (page - 1) * 4096 + SalvageFixtures.u16(data, at: (page - 1) * 4096 + 12))
        }
        #expect(data[(page - 1) * 4096] == 10, "an index leaf")
        try SalvageFixtures.zeroPage(page, of: store, pageSize: 4096)
        let damaged = try Salvager.salvage(store: store, into: directory.path("damaged.sqlite"))
        let kept = try SQLiteConnection(path: directory.path("damaged.sqlite"), options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT key, value, typeof(value) FROM settings ORDER BY key")
        let all = try original.rows(queries[0])
        #expect(kept.count > 2_500 && kept.count < 3_000, "\(kept.count) rows kept")
        #expect(kept.allSatisfy { all.contains($0) }, "every row kept is a row of the store")
        #expect(damaged.tables.first { $0.name == "settings" }?.pages.damaged == 1)

        // The root's right child aimed at the root itself: the walk ends, the loop counted once.
        let root = try #require(try SalvageFixtures.rootPage(of: "settings", in: store))
        try SalvageFixtures.overwrite(store, at: (root - 1) * 4096 + 8, with: withUnsafeBytes(of: UInt32(root).bigEndian) { Data($0) })
        let looped = try Salvager.salvage(store: store, into: directory.path("looped.sqlite"))
        let settingsLooped = try #require(looped.tables.first { $0.name == "settings" })
        #expect(settingsLooped.rows.recovered > 0 && settingsLooped.rows.recovered < kept.count)
        #expect(settingsLooped.pages.damaged == 2, "the zeroed leaf and the loop")
    }

    /// Page 1 gone (header and schema root): the schema is found again on the pages it spills
    /// onto when it has several, else rows are kept by column count in `lost_and_found_<n>`.
    @Test func pageOneZeroedKeepsEveryRowInLostAndFound() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        try SalvageFixtures.plainDatabase(at: store)
        let original = try SalvageFixtures.rows(of: store)
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.schemaSource == "none")
        #expect(report.file.pageSizeSource == "guessed")
        #expect(report.lostAndFound.rows == original.values.reduce(0) { $0 + $1.count })
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        // The people rows: 4 columns (the INTEGER PRIMARY KEY stored as NULL), by rowid.
        let people = try connection.rows("SELECT id, c1 FROM lost_and_found_4 ORDER BY id")
        #expect(people.count == original["people"]?.count)
        #expect(people.first == [.integer(1), original["people"]?[1]?[1] ?? .null])
    }

    /// Rows of 2,000 values with page 1 gone: a lost-and-found table would need 2,003 columns,
    /// past SQLite's 2,000. They go whole to `lost_and_found_records` — where each was found,
    /// its value count and its record's bytes — where they used to be counted and written nowhere.
    @Test func rowsTooWideForATableAreKeptAsRecords() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("s.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            let columns = (0..<2_000).map { "c\($0)" }.joined(separator: ", ")
            try connection.execute("PRAGMA page_size = 4096; CREATE TABLE wide (\(columns)); CREATE TABLE other (x)")
            try connection.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO wide (c0, c1999) SELECT i, 'last ' || i FROM n
                """)
        }
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        #expect(report.lostAndFound.rows == 40)
        #expect(report.lostAndFound.tables == ["lost_and_found_records"])
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        let rows = try connection.rows("SELECT id, value_count, record FROM lost_and_found_records ORDER BY id")
        #expect(rows.count == 40)
        for (offset, row) in rows.enumerated() {
            #expect(row[0] == .integer(Int64(offset + 1)) && row[1] == .integer(2_000))
            guard case .blob(let record) = row[2] else {
                Issue.record("row \(offset + 1): no record")
                continue
            }
            // The record as SQLite wrote it: c0 and c1999 read back from its bytes.
            var values: [RecordColumn] = []
            let outcome = record.withUnsafeBytes { RecordDecoder.decode($0, declaredSize: record.count, into: &values) }
            #expect(outcome == .complete && values.count == 2_000)
            record.withUnsafeBytes { bytes in
                #expect(values.first?.integer(in: bytes) == Int64(offset + 1))
                #expect(values.last.map { String(decoding: $0.bytes(in: bytes), as: UTF8.self) } == "last \(offset + 1)")
            }
        }
    }

    /// Every real sample store salvages to the same rows SQLite reads from it.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"), arguments: Samples.allStores)
    func sampleStoresComeBackRowForRow(sample: String) throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample(sample, as: "store.sqlite")
        let before = try SalvageFixtures.snapshot(directory.url.path)
        let output = directory.path("out.sqlite")
        let report = try Salvager.salvage(store: store, into: output)
        // Read through a private copy when a -wal holds data (SQLite would create -shm beside it).
        let opened = try OpenedStore(path: store, options: StoreOpenOptions(alwaysCopies: true))
        let expected = try SalvageFixtures.rows(of: opened.connection)
        let recovered = try SalvageFixtures.rows(of: output)
        for (table, rows) in expected {
            #expect(recovered[table] == rows, "\(sample): table \(table)")
        }
        #expect(report.totals.unreadable == 0, "\(sample)")
        #expect(report.pages.damaged == 0, "\(sample)")
        var after = try SalvageFixtures.snapshot(directory.url.path)
        after["out.sqlite"] = nil
        #expect(after == before, "\(sample): nothing next to the store changed")
    }
}
