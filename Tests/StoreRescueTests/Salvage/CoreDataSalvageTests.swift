import Foundation
import Testing
@testable import StoreRescue

/// Core Data mode: the new store is the version the damaged store was, holding every recovered
/// object, with what Core Data relies on fixed up.
@Suite struct CoreDataSalvageTests {
    typealias Fixtures = CoreDataSalvageFixtures

    static func salvage(_ store: String, in directory: TemporaryDirectory, version: String? = nil,
                        catalog: Catalog = Fixtures.catalog, name: String = "salvaged.sqlite") throws -> (output: String, report: SalvageReport) {
        let output = directory.path(name)
        let report = try Salvager.salvage(store: store, into: output, options: SalvageOptions(catalog: catalog, versionName: version))
        return (output, report)
    }

    static func expectUsableStore(_ output: String, catalog: Catalog = Fixtures.catalog, version: String = "V1",
                                  outcome: MatchResult.Outcome = .exact, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let check = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable)).scalar("PRAGMA integrity_check")
        #expect(check?.string == "ok", sourceLocation: sourceLocation)
        let match = StoreMatcher.match(storePath: output, catalog: catalog)
        #expect(match.outcome == outcome, sourceLocation: sourceLocation)
        #expect(match.version == version, sourceLocation: sourceLocation)
        let report = StoreInspector.inspect(path: output)
        #expect(report.sidecars.isEmpty, "no -wal or -shm left", sourceLocation: sourceLocation)
        #expect(!report.findings.contains { $0.code == "z-max-behind" }, sourceLocation: sourceLocation)
    }

    /// The report's rows and rows per entity of every entity table are what the store holds
    /// (a one-entity table's are not grouped by `Z_ENT`: every row holds that entity's).
    static func expectEntityCounts(_ report: SalvageReport, in output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        for table in report.tables where table.disposition == "recovered" && table.name.hasPrefix("Z") && !table.name.hasPrefix("Z_") {
            let quoted = table.name.quotedSQLIdentifier
            let grouped = try connection.rows("SELECT Z_ENT, count(*) FROM \(quoted) GROUP BY Z_ENT ORDER BY Z_ENT")
                .map { "\($0[0].int64 ?? -1)=\($0[1].int64 ?? -1)" }
            #expect(table.entities.map { "\($0.ent)=\($0.rows)" } == grouped, "\(table.name)", sourceLocation: sourceLocation)
            #expect(table.rows.recovered == Int(try connection.scalar("SELECT count(*) FROM \(quoted)")?.int64 ?? -1),
                    "\(table.name)", sourceLocation: sourceLocation)
        }
    }

    /// Entries of every index in the salvaged store but those of `excluded` tables: one per row
    /// of its table.
    static func indexEntries(in output: String, excluding excluded: Set<String> = []) throws -> Int {
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        let tables = try connection.rows("SELECT tbl_name FROM sqlite_schema WHERE type = 'index'").compactMap { $0[0].string }
        #expect(tables.count >= 4, "the fixture's indexes: Z_ENT, a to-one, the join table's two")
        var entries = 0
        for table in tables where !excluded.contains(table) {
            entries += Int(try connection.scalar("SELECT count(*) FROM \(table.quotedSQLIdentifier)")?.int64 ?? 0)
        }
        return entries
    }

    @Test func undamagedStoreComesBackAsTheSameVersion() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        #expect(try Fixtures.entityRows(of: output) == Fixtures.entityRows(of: store))
        #expect(report.mode == .coreData)
        #expect(report.version == "V1")
        #expect(report.versionSource == "metadata")
        #expect(report.metadata?.source == "recovered")
        #expect(report.metadata?.uuid == Fixtures.uuid.uuidString)
        #expect(report.totals.danglingCleared == 0 && report.totals.danglingRowsDropped == 0)
        let item = try #require(report.tables.first { $0.name == "ZITEM" })
        #expect(item.entities.map(\.name) == ["Item", "SpecialItem"])
        #expect(item.entities.map(\.rows).reduce(0, +) == 200)
        #expect(item.rows.recovered == 200)
        #expect(report.tables.first { $0.name == "Z_PRIMARYKEY" }?.disposition == "bookkeeping")
        let maxima = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT").map { "\($0[0].string ?? "")=\($0[1].int64 ?? -1)" }
        #expect(maxima == ["Item=200", "SpecialItem=0", "Owner=20", "Tag=5"])
        #expect(report.rowsCopiedPageByPage == 225 + 269, "every entity row and every join row copied page by page")
        try Self.expectEntityCounts(report, in: output)
        // Every index of those tables built page by page too: an entry per row of its table.
        #expect(report.indexEntriesBuiltPageByPage == (try Self.indexEntries(in: output)))
        let joins = try #require(report.tables.first { $0.name == "Z_1TAGS" })
        #expect(joins.rows.recovered == 269 && joins.rows.conflictsDropped == 0)
    }

    /// A store whose text is UTF-16 (the new store's is UTF-8): no record is copied as it is —
    /// SQLite converts every text value on its way in — and the text reads back the same.
    @Test func aUTF16StoresRowsGoThroughSQLiteWhichConvertsTheirText() throws {
        let directory = try TemporaryDirectory()
        let original = directory.path("utf8.sqlite")
        try Fixtures.store(at: original)
        let store = directory.path("utf16.sqlite")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("PRAGMA encoding = 'UTF-16le'")
            let source = try SQLiteConnection(path: original, options: SQLiteOpenOptions(mode: .immutable))
            let schema = try source.rows("SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND type = 'table' ORDER BY rowid")
            for row in schema {
                try connection.execute(try #require(row[1].string))
                let name = try #require(row[0].string).quotedSQLIdentifier
                for values in try source.rows("SELECT * FROM \(name)") {
                    let insert = try connection.prepare("INSERT INTO \(name) VALUES (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))")
                    try insert.bind(values)
                    _ = try insert.step()
                }
            }
            #expect(try connection.scalar("PRAGMA encoding") == .text("UTF-16le"))
        }
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        #expect(report.rowsCopiedPageByPage == 0)
        #expect(try Fixtures.entityRows(of: output) == Fixtures.entityRows(of: original))
    }

    /// Rows the fast path cannot copy as they are — a sole-entity table's foreign `Z_ENT`, a
    /// `Z_OPT` that is not an integer — go in through SQLite, fixed and counted, among neighbours
    /// copied page by page.
    @Test func rowsNeedingAFixGoThroughSQLiteAmongCopiedOnes() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let expected = try Fixtures.entityRows(of: store)
        let owner: Int64
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            owner = try #require(try connection.scalar("SELECT Z_ENT FROM ZOWNER LIMIT 1")?.int64)
            try connection.execute("UPDATE ZOWNER SET Z_ENT = 99 WHERE Z_PK = 3; UPDATE ZITEM SET Z_OPT = 'stale' WHERE Z_PK = 7")
        }
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        #expect(report.totals.valuesFixed == 2)
        try Self.expectEntityCounts(report, in: output)
        #expect(report.rowsCopiedPageByPage == 223 + 269)
        let rows = try Fixtures.entityRows(of: output)
        #expect(rows["ZOWNER"]?.count == 20 && rows["ZITEM"]?.count == 200)
        let check = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try check.scalar("SELECT Z_ENT FROM ZOWNER WHERE Z_PK = 3") == .integer(owner))
        #expect(try check.scalar("SELECT Z_OPT FROM ZITEM WHERE Z_PK = 7") == .integer(1))
        for table in ["ZOWNER", "ZITEM", "ZTAG"] {
            let same = rows[table]?.filter { key, value in expected[table]?[key] == value }.count
            // Owner 3's Z_ENT is its entity's again; item 7's Z_OPT is now 1.
            #expect(same == (expected[table]?.count ?? 0) - (table == "ZITEM" ? 1 : 0), "every other row of \(table) as it was")
        }
    }

    /// A join table whose damaged copy holds the same pair twice (its primary key was lost with
    /// the damage): the rows are copied page by page, the key's index refuses them, and the table
    /// is refilled through SQLite keeping the first of each pair — the second counted as a
    /// conflict, as row-by-row inserts would have; the store is whole (`integrity_check` compares
    /// every index with its table). Two rows naming no item or no tag are dropped as dangling.
    @Test func duplicateJoinKeysCopiedPageByPageAreDroppedAsConflicts() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let expected = try Fixtures.entityRows(of: store)["Z_1TAGS"].map { Set($0.values.map { $0.map { $0.int64 ?? -1 } }) } ?? []
        #expect(expected.count == 269)
        // The damaged schema: Z_1TAGS without its primary key (and the key's index gone), then
        // three pairs written a second time.
        try SalvageFixtures.editSchema(of: store, """
            UPDATE sqlite_schema SET sql = 'CREATE TABLE Z_1TAGS ( Z_1ITEMS INTEGER, Z_4TAGS INTEGER )' WHERE name = 'Z_1TAGS';
            DELETE FROM sqlite_schema WHERE name = 'sqlite_autoindex_Z_1TAGS_1';
            """)
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("INSERT INTO Z_1TAGS (Z_1ITEMS, Z_4TAGS) SELECT Z_1ITEMS, Z_4TAGS FROM Z_1TAGS ORDER BY rowid LIMIT 3")
            // And two rows with an end that names nothing: no item 9999, no tag 99.
            try connection.execute("INSERT INTO Z_1TAGS (Z_1ITEMS, Z_4TAGS) VALUES (9999, 1), (5, 99)")
            #expect(try connection.scalar("SELECT count(*) FROM Z_1TAGS")?.int64 == 274)
        }
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        let joins = try #require(report.tables.first { $0.name == "Z_1TAGS" })
        #expect(joins.rows.recovered == 269)
        #expect(joins.rows.conflictsDropped == 3)
        #expect(report.totals.conflictsDropped == 3)
        // The rows went back in unseen by the ledger: the finish read the ends back
        // (`knownDanglingRows`) to find the two that name nothing.
        #expect(joins.rows.danglingRowsDropped == 2)
        let rows = try Fixtures.entityRows(of: output)["Z_1TAGS"].map { Set($0.values.map { $0.map { $0.int64 ?? -1 } }) } ?? []
        #expect(rows == expected, "every pair once")
        #expect(report.rowsCopiedPageByPage == 225, "the join table's rows went back in through SQLite")
        // The join table's primary key, built page by page, found the 3 pairs twice: that table
        // went back in through SQLite, its index entries with it.
        #expect(report.indexEntriesBuiltPageByPage == (try Self.indexEntries(in: output, excluding: ["Z_1TAGS"])))
        let check = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try check.scalar("SELECT count(*) FROM pragma_index_list('Z_1TAGS') WHERE \"unique\"")?.int64 == 1, "the key is back")
    }

    /// Damage to a table's name in the schema (`ZOWNER` read as `ZOWNEQ`; `ZTAG` with a NUL in
    /// it): by name neither is a table of the version, and their trees used to be skipped — every
    /// owner and tag lost, every item's owner cleared as dangling, every join row dropped. Each
    /// has exactly the columns of one table the schema no longer names, and is read as it.
    @Test func aTableWhoseNameIsDamagedIsReadByItsColumns() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let expected = try Fixtures.entityRows(of: store)
        try SalvageFixtures.editSchema(of: store, """
            UPDATE sqlite_schema SET name = 'ZOWNEQ', tbl_name = 'ZOWNEQ' WHERE name = 'ZOWNER';
            UPDATE sqlite_schema SET name = 'ZT' || char(0) || 'G', tbl_name = 'ZT' || char(0) || 'G' WHERE name = 'ZTAG';
            """)
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        #expect(try Fixtures.entityRows(of: output) == expected, "every row of every table")
        #expect(report.tables.first { $0.name == "ZOWNER" }?.rows.recovered == 20)
        #expect(report.tables.first { $0.name == "ZTAG" }?.rows.recovered == 5)
        #expect(report.totals.danglingCleared == 0 && report.totals.danglingRowsDropped == 0)
        #expect(report.notes.contains("table ZOWNEQ of the damaged schema read as ZOWNER of version \"V1\": it has exactly that table's columns"))
        #expect(report.notes.contains("table ZT\u{FFFD}G: its name holds NUL characters or noncharacters, written as U+FFFD"))
        #expect(report.notes.contains("table ZT\u{FFFD}G of the damaged schema read as ZTAG of version \"V1\": it has exactly that table's columns"))
    }

    /// A damaged table name with the metadata lost, against a catalog of two versions: the
    /// schema still tells the version (the renamed table has exactly one of its tables' columns,
    /// as the salvage reads it), where it used to fit no version (exit 65).
    @Test func aDamagedTableNameStillTellsTheVersion() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let expected = try Fixtures.entityRows(of: store)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "Z_METADATA", in: store), of: store, pageSize: 4096)
        try SalvageFixtures.editSchema(of: store, "UPDATE sqlite_schema SET name = 'ZOWNEQ', tbl_name = 'ZOWNEQ' WHERE name = 'ZOWNER';")
        let catalog = Fixtures.catalog(withV2: Fixtures.modelWithExtraAttribute)
        let (output, report) = try Self.salvage(store, in: directory, catalog: catalog)
        #expect(report.versionSource == "schema")
        #expect(report.version == "V1")
        try Self.expectUsableStore(output, catalog: catalog)
        #expect(try Fixtures.entityRows(of: output) == expected)
    }

    /// Two versions told apart only by a table's name (V2 renames an entity), the metadata lost:
    /// the schema's names tell V1, exactly; reading tables by their columns, which would fit V2
    /// as well, is only for when no version fits by name. (A first version of that reading made
    /// this store ambiguous, exit 65.)
    @Test func aTableNameStillTellsTwoVersionsApart() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "Z_METADATA", in: store), of: store, pageSize: 4096)
        var renamed = Fixtures.model
        renamed.entities = renamed.entities.map { entity in
            var entity = entity
            if entity.name == "Owner" { entity.name = "Keeper" }
            entity.properties = entity.properties.map { property in
                guard case .relationship(var relationship) = property, relationship.destinationEntityName == "Owner" else { return property }
                relationship.destinationEntityName = "Keeper"
                return .relationship(relationship)
            }
            return entity
        }
        #expect(try StoreLayoutBuilder.layout(for: renamed).tables.contains { $0.name == "ZKEEPER" })
        let catalog = Fixtures.catalog(withV2: renamed)
        let (_, report) = try Self.salvage(store, in: directory, catalog: catalog)
        #expect(report.versionSource == "schema")
        #expect(report.version == "V1")
    }

    /// A store of V2 (V1 and one more entity, `Zeta`, whose table sorts last so no entity is
    /// renumbered), metadata lost, `ZZETA`'s name damaged in its first letter (`XZETA`): V1 fits
    /// every table by name, but the store holds a table with the columns of a catalog table V1
    /// lacks, so the version is V2, the table read as `ZZETA`. V1 used to be taken — on a store
    /// whose entities V2 numbers otherwise, rows filed under other entities. A table shaped like
    /// Core Data's that no version has (persistent history, CloudKit, the app's own) does not
    /// count against a version: the same store as V1, with such a table, is still V1.
    @Test func aCoreDataTableWithADamagedNameIsNotIgnored() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        var withZeta = Fixtures.model
        withZeta.entities.append(EntityDescription(name: "Zeta", properties: [.attribute(AttributeDescription(name: "mark", type: .string))]))
        let zeta = try #require(try StoreLayoutBuilder.layout(for: withZeta).tables.first { $0.name == "ZZETA" })
        try StoreFixtureBuilder.run(store, zeta.createStatement)
        try StoreFixtureBuilder.run(store, "INSERT INTO ZZETA (Z_PK, Z_ENT, Z_OPT, ZMARK) VALUES (1, 5, 1, 'z')")
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "Z_METADATA", in: store), of: store, pageSize: 4096)
        try SalvageFixtures.editSchema(of: store, "UPDATE sqlite_schema SET name = 'XZETA', tbl_name = 'XZETA' WHERE name = 'ZZETA';")
        let (_, report) = try Self.salvage(store, in: directory, catalog: Fixtures.catalog(withV2: withZeta))
        #expect(report.versionSource == "schema")
        #expect(report.version == "V2")
        #expect(report.notes.contains { $0.hasPrefix("table XZETA of the damaged schema read as ZZETA") })

        let other = directory.path("other.sqlite")
        try Fixtures.store(at: other)
        try StoreFixtureBuilder.run(other, "CREATE TABLE ACHANGE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER)")
        try StoreFixtureBuilder.run(other, "CREATE TABLE MYAPPCACHE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, PAYLOAD BLOB)")
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "Z_METADATA", in: other), of: other, pageSize: 4096)
        let (_, otherReport) = try Self.salvage(other, in: directory, catalog: Fixtures.catalog(withV2: withZeta), name: "other-out.sqlite")
        #expect(otherReport.versionSource == "schema")
        #expect(otherReport.version == "V1")
    }

    /// Values the writer fixes rather than refuses — `Z_OPT` that is not an integer, a wrong or
    /// missing `Z_ENT` in a table of one entity — on every row of a leaf: the leaf is still its
    /// table's. Its records used to fit no table (the shape check refused what the writer fixes),
    /// so every tag and owner went to a lost and found Core Data mode does not write.
    @Test func valuesTheWriterFixesDoNotCostTheirLeaf() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("UPDATE ZTAG SET Z_ENT = NULL; UPDATE ZOWNER SET Z_OPT = 'one', Z_ENT = 0")
        }
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        let tags = try #require(report.tables.first { $0.name == "ZTAG" })
        let owners = try #require(report.tables.first { $0.name == "ZOWNER" })
        #expect(tags.rows.recovered == 5 && tags.rows.valuesFixed == 5)
        #expect(owners.rows.recovered == 20 && owners.rows.valuesFixed == 40, "Z_OPT and Z_ENT of each")
        #expect(report.lostAndFound.rows == 0)
        #expect(report.totals.danglingCleared == 0 && report.totals.danglingRowsDropped == 0)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT count(*) FROM ZOWNER WHERE Z_OPT = 1 AND Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Owner')")?.int64 == 20)
    }

    /// Root page numbers damaged in the schema — the owners' and the tags' swapped, the items'
    /// aimed at an index — with every page intact: each leaf is still its table's by its
    /// records (`Z_ENT` names the entity). They used to fit neither the table the schema gave
    /// their root nor a table of unknown root, and every row of the three tables was lost.
    @Test func damagedRootNumbersStillFindEachTablesLeaves() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store, owners: 60)
        let expected = try Fixtures.entityRows(of: store)
        try SalvageFixtures.editSchema(of: store, """
            UPDATE sqlite_schema SET rootpage = CASE name
                WHEN 'ZOWNER' THEN (SELECT rootpage FROM sqlite_schema WHERE name = 'ZTAG')
                WHEN 'ZTAG' THEN (SELECT rootpage FROM sqlite_schema WHERE name = 'ZOWNER')
                WHEN 'ZITEM' THEN (SELECT rootpage FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'ZITEM' LIMIT 1)
                END
            WHERE name IN ('ZOWNER', 'ZTAG', 'ZITEM');
            """)
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        let recovered = try Fixtures.entityRows(of: output)
        for (table, rows) in expected { #expect(recovered[table]?.count == rows.count, "\(table)") }
        #expect(recovered == expected, "every row of every table")
        #expect(report.totals.danglingCleared == 0 && report.totals.danglingRowsDropped == 0)
        #expect(report.lostAndFound.rows == 0)
    }

    /// The owners' page lost: items keep their rows, their `owner` values (pointing at owners that
    /// were not recovered) are cleared and counted. The tags' page lost: join rows are dropped.
    @Test func danglingValuesAreClearedAndJoinRowsDropped() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "ZOWNER", in: store), of: store, pageSize: 4096)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "ZTAG", in: store), of: store, pageSize: 4096)
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM")?.int64 == 200)
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM WHERE ZOWNER IS NOT NULL")?.int64 == 0)
        #expect(try connection.scalar("SELECT count(*) FROM Z_1TAGS")?.int64 == 0)
        let items = try #require(report.tables.first { $0.name == "ZITEM" })
        #expect(items.rows.danglingCleared == 200)
        let joins = try #require(report.tables.first { $0.name == "Z_1TAGS" })
        #expect(joins.rows.danglingRowsDropped > 0)
        #expect(joins.rows.recovered == 0)
        #expect(report.tables.first { $0.name == "ZOWNER" }?.pages.damaged == 1)
        #expect(report.totals.danglingRowsDropped == joins.rows.danglingRowsDropped)
    }

    /// The owners' root page lost, their leaves whole: the items are copied first (their tree
    /// is intact) while no owner is in yet, so every `owner` value is a candidate in the ledger
    /// (`KeyLedger`); the owners come in afterwards from the sweep, and the finish must see them
    /// there — nothing cleared — and count the owners it noted (7,000 candidates: fewer than
    /// `maximumDanglingRowsFixedByKey`, so no other way answers). With the tags' page lost too,
    /// each join row is dropped for its missing tag, whatever order its ends came in.
    @Test func referencesToRowsThatCameInLaterAreKept() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store, owners: 700)
        let original = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readOnly))
        let root = try Fixtures.rootPage(of: "ZOWNER", in: store)
        #expect(try original.scalar("SELECT count(*) FROM dbstat WHERE name = 'ZOWNER' AND pagetype = 'leaf'")?.int64 ?? 0 > 3, "the owners span leaves")
        let pointing = try #require(try original.scalar("SELECT count(*) FROM ZITEM WHERE ZOWNER IS NOT NULL")?.int64)
        let joinRows = try #require(try original.scalar("SELECT count(*) FROM Z_1TAGS")?.int64)
        #expect(pointing == 7_000 && joinRows > 0)
        try SalvageFixtures.zeroPage(root, of: store, pageSize: 4096)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "ZTAG", in: store), of: store, pageSize: 4096)

        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        try Self.expectEntityCounts(report, in: output)
        let owners = try #require(report.tables.first { $0.name == "ZOWNER" })
        #expect(owners.rows.recovered == 700, "every owner, from the sweep")
        #expect(owners.identifiedBy.schemaTree == 0 && owners.identifiedBy.pointerMap + owners.identifiedBy.recordShape > 3, "\(owners.identifiedBy)")
        let items = try #require(report.tables.first { $0.name == "ZITEM" })
        #expect(items.rows.recovered == 7_000)
        #expect(items.rows.danglingCleared == 0)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM WHERE ZOWNER IS NOT NULL")?.int64 == pointing)
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM i JOIN ZOWNER o ON o.Z_PK = i.ZOWNER")?.int64 == pointing)
        let joins = try #require(report.tables.first { $0.name == "Z_1TAGS" })
        #expect(joins.rows.danglingRowsDropped == Int(joinRows))
        #expect(try connection.scalar("SELECT count(*) FROM Z_1TAGS")?.int64 == 0)
    }

    /// An owner whose key is below 1 (no key Core Data hands out): the ledger stops tracking the
    /// owners' table, and both the fix-ups of references to it and its counts are SQLite's again
    /// — with the same answers: the items of the renumbered owner are cleared, no other.
    @Test func aKeyTheLedgerCannotKeepLeavesTheOwnersToSQLite() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("UPDATE ZOWNER SET Z_PK = -1 WHERE Z_PK = 1")
        }
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        try Self.expectEntityCounts(report, in: output)
        let items = try #require(report.tables.first { $0.name == "ZITEM" })
        #expect(items.rows.danglingCleared == 10, "the ten items of owner 1")
        #expect(report.tables.first { $0.name == "ZOWNER" }?.rows.recovered == 20)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM WHERE ZOWNER IS NULL")?.int64 == 10)
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM WHERE ZOWNER = 1")?.int64 == 0)
        #expect(try connection.scalar("SELECT count(*) FROM ZOWNER WHERE Z_PK = -1")?.int64 == 1)
    }

    /// Page 1 gone: the schema is gone with it, so pages are named by the pointer map and by
    /// their rows' shape (`Z_ENT` tells the entity tables apart); the version from the metadata
    /// row found on its own page.
    @Test func pageOneZeroedStillRebuildsEveryTable() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let expected = try Fixtures.entityRows(of: store)
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        #expect(try Fixtures.entityRows(of: output) == expected)
        #expect(report.schemaSource == "catalogLayout")
        try Self.expectEntityCounts(report, in: output)
        // No root survived: no tree is copied page by page, nor any index built that way.
        #expect(report.rowsCopiedPageByPage == 0 && report.indexEntriesBuiltPageByPage == 0)
        #expect(report.versionSource == "metadata")
        #expect(report.metadata?.uuid == Fixtures.uuid.uuidString)
        #expect(report.metadata?.includesPersistentHistory == false, "no history row found: no history tables")
        let item = try #require(report.tables.first { $0.name == "ZITEM" })
        #expect(item.identifiedBy.schemaTree == 0)
        #expect(item.identifiedBy.pointerMap + item.identifiedBy.recordShape > 0)
    }

    /// Page 1 gone, the history tables are added in case the store had them, then dropped when
    /// no history row or `Z_PRIMARYKEY` entry shows it did: the report lists them as skipped,
    /// saying so — it listed them as recovered with no rows, though the new store has no such
    /// table. Every table the report calls recovered is in the new store.
    @Test func historyTablesLeftOutAreReportedAsSkipped() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let (output, report) = try Self.salvage(store, in: directory)
        #expect(report.metadata?.includesPersistentHistory == false)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        let written = Set(try connection.rows("SELECT name FROM sqlite_schema WHERE type = 'table'").compactMap { $0[0].string })
        for table in report.tables where table.disposition == "recovered" {
            #expect(written.contains(table.name), "\(table.name) is reported recovered but is not in the new store")
        }
        let history = try #require(try StoreLayoutBuilder.layout(for: Fixtures.model, options: StoreLayoutOptions(includesPersistentHistory: true))
            .persistentHistory?.tables.map(\.name))
        #expect(history.contains("ATRANSACTION") && history.contains("ACHANGE"))
        let text = report.renderText()
        for name in history {
            let table = try #require(report.tables.first { $0.name == name }, "\(name) is listed")
            #expect(!written.contains(name))
            #expect(table.disposition == "skipped", "\(name)")
            #expect(table.reason == "left out of the new store: persistent history, added because the damaged schema was unreadable, "
                + "and dropped since no history row or Z_PRIMARYKEY entry showed the store had it", "\(name)")
            #expect(text.split(separator: "\n").contains { $0.hasPrefix("  \(name) ") && $0.contains("skipped: left out of the new store") },
                    "\(name) in the text report")
        }
        #expect(report.totals.recovered == report.tables.filter { $0.disposition == "recovered" }.reduce(0) { $0 + $1.rows.recovered })
    }

    /// The metadata row lost: the store is stamped fresh for the version (told by its schema),
    /// with a new UUID, and the report says so.
    @Test func lostMetadataIsStampedFreshAndSaidSo() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "Z_METADATA", in: store), of: store, pageSize: 4096)
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        #expect(report.versionSource == "schema")
        #expect(report.metadata?.source == "stamped")
        #expect(report.metadata?.uuid != Fixtures.uuid.uuidString)
        #expect(report.notes.contains("no readable Z_METADATA row: the store was stamped fresh for \"V1\" with a new UUID"))
    }

    /// A row whose value does not fit its column's declared type (text in an INTEGER column) is
    /// not written, and counted.
    @Test func rowsThatDoNotFitTheVersionAreCounted() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try StoreFixtureBuilder.run(store, "UPDATE ZITEM SET ZCOUNT = 'many' WHERE Z_PK = 3")
        try StoreFixtureBuilder.run(store, "UPDATE Z_PRIMARYKEY SET Z_MAX = 150 WHERE Z_NAME = 'Item'")
        let (output, report) = try Self.salvage(store, in: directory)
        try Self.expectUsableStore(output)
        let item = try #require(report.tables.first { $0.name == "ZITEM" })
        #expect(item.rows.notFitting == 1)
        #expect(item.rows.recovered == 199)
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM WHERE Z_PK = 3")?.int64 == 0)
        #expect(try connection.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'")?.int64 == 200, "Z_MAX raised to the largest Z_PK")
    }

    @Test func versionThatCannotBeToldIsAnError() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try SalvageFixtures.zeroPage(try Fixtures.rootPage(of: "Z_METADATA", in: store), of: store, pageSize: 4096)
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        let catalog = Fixtures.catalog(withV2: Fixtures.modelWithExtraAttribute)
        let error = #expect(throws: SalvageError.self) { try Self.salvage(store, in: directory, catalog: catalog) }
        #expect(error?.description == "\(store): cannot tell which version wrote it: no metadata, model cache or schema survived")
        #expect(error?.recoverySuggestion == "pass --version with one of: \"V1\", \"V2\", or salvage without --catalog")
        #expect(error?.exitStatus == .notAStore)
        #expect(!FileManager.default.fileExists(atPath: directory.path("salvaged.sqlite")))

        let (output, report) = try Self.salvage(store, in: directory, version: "V1", catalog: catalog)
        try Self.expectUsableStore(output, catalog: catalog)
        #expect(report.versionSource == "option")

        let unknown = #expect(throws: SalvageError.self) {
            try Self.salvage(store, in: directory, version: "V9", catalog: catalog, name: "other.sqlite")
        }
        #expect(unknown?.description == "catalog fixture-catalog.json has no version \"V9\"")
        #expect(unknown?.exitStatus == .usage)
    }

    /// `--version` naming a version newer than the store: a required attribute the store never
    /// had is NULL in every object that goes in — Core Data will not save such an object — and
    /// the report says which attribute and how many objects, per table (JSON) and in a note
    /// (text). It said nothing. An optional attribute the store lacks, or the store's own
    /// version, gives no such entry.
    @Test func requiredAttributesTheStoreNeverHadAreReported() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        var newer = Fixtures.model
        newer.entities[0].properties.append(.attribute(AttributeDescription(name: "rank", type: .integer32, isOptional: false)))
        newer.entities[2].properties.append(.attribute(AttributeDescription(name: "grade", type: .string, isOptional: false)))
        newer.entities[3].properties.append(.attribute(AttributeDescription(name: "colour", type: .string)))
        #expect(newer.entities.map(\.name) == ["Owner", "Item", "SpecialItem", "Tag"])
        let catalog = Fixtures.catalog(withV2: newer)
        let (output, report) = try Self.salvage(store, in: directory, version: "V2", catalog: catalog)
        try Self.expectUsableStore(output, catalog: catalog, version: "V2")

        let layout = try StoreLayoutBuilder.layout(for: newer)
        let rank = try #require(layout.propertyColumns["Owner"]?["rank"])
        let grade = try #require(layout.propertyColumns["SpecialItem"]?["grade"])
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        func lacking(_ table: String, _ column: String, _ entity: String) throws -> Int {
            Int(try connection.scalar("""
                SELECT count(*) FROM \(table) WHERE \(column) IS NULL AND Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = '\(entity)')
                """)?.int64 ?? -1)
        }
        let owners = try lacking("ZOWNER", rank, "Owner")
        let specials = try lacking("ZITEM", grade, "SpecialItem")
        let source = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
        #expect(owners == Int(try source.scalar("SELECT count(*) FROM ZOWNER")?.int64 ?? -1) && owners > 0, "every owner went in without a rank")
        #expect(specials > 0)

        let tables = Dictionary(report.tables.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(tables["ZOWNER"]?.requiredValuesMissing == [.init(entity: "Owner", attribute: "rank", column: rank, objects: owners)])
        #expect(tables["ZITEM"]?.requiredValuesMissing == [.init(entity: "SpecialItem", attribute: "grade", column: grade, objects: specials)])
        #expect(tables["ZTAG"]?.requiredValuesMissing == [], "colour is optional")
        let note = "table ZOWNER: \(owners) Owner objects have no value for the required attribute \"rank\" (column \(rank)), which the "
            + "damaged store's table does not have: version \"V2\" is not the one that wrote the store, or its schema row is damaged; "
            + "Core Data will not save them until each has a value (salvage with the store's own version, then upgrade)"
        #expect(report.notes.contains(note), "\(report.notes)")
        #expect(report.notes.contains { $0.hasPrefix("table ZITEM: \(specials) SpecialItem objects have no value for the required attribute \"grade\"") })
        #expect(report.renderText().contains("  - \(note)\n"))
        #expect(report.notes.contains { $0.hasPrefix("--version \"V2\" was given, but the store's metadata (its entity hashes) names version \"V1\"") })
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any]
        let owner = (json?["tables"] as? [[String: Any]])?.first { $0["name"] as? String == "ZOWNER" }
        let gap = (owner?["requiredValuesMissing"] as? [[String: Any]])?.first
        #expect(gap?["entity"] as? String == "Owner" && gap?["attribute"] as? String == "rank" && gap?["column"] as? String == rank)
        #expect(gap?["objects"] as? Int == owners)

        let (_, own) = try Self.salvage(store, in: directory, version: "V1", catalog: catalog, name: "own.sqlite")
        #expect(own.tables.allSatisfy { $0.requiredValuesMissing.isEmpty })
        #expect(!own.notes.contains { $0.contains("required attribute") || $0.contains("was given") })
    }

    /// The same with page 1 lost: the schema is gone, so the tables are the version's own and no
    /// column reads as absent — the store's older rows are shorter records, read with NULL in
    /// the columns after their last. Every object without a value for a required attribute is
    /// still counted and reported (it was not: the census ran only over columns the damaged
    /// schema lacked, and here nothing says which). And the report says that the surviving
    /// metadata names another version than `--version` (it said nothing: 20 owners went to lost
    /// and found, unwritten, when their table's columns moved).
    @Test func requiredValuesAreCountedWhenTheSchemaIsLost() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let owners = Int(try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable)).scalar("SELECT count(*) FROM ZOWNER")?.int64 ?? -1)
        #expect(owners > 0)
        try SalvageFixtures.zeroPage(1, of: store, pageSize: 4096)
        var newer = Fixtures.model
        // A string after `name`: the column comes last, so the store's rows still fit the table.
        newer.entities[0].properties.append(.attribute(AttributeDescription(name: "title", type: .string, isOptional: false)))
        newer.entities[3].properties.append(.attribute(AttributeDescription(name: "motto", type: .string)))
        let catalog = Fixtures.catalog(withV2: newer)
        let layout = try StoreLayoutBuilder.layout(for: newer)
        let title = try #require(layout.propertyColumns["Owner"]?["title"])
        #expect(layout.tables.first { $0.name == "ZOWNER" }?.columns.last?.name == title)
        let (output, report) = try Self.salvage(store, in: directory, version: "V2", catalog: catalog)
        #expect(report.schemaSource == "catalogLayout")
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        let lacking = Int(try connection.scalar("SELECT count(*) FROM ZOWNER WHERE \(title) IS NULL")?.int64 ?? -1)
        #expect(lacking == owners, "every owner recovered, none with a title")
        let tables = Dictionary(report.tables.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(tables["ZOWNER"]?.requiredValuesMissing == [.init(entity: "Owner", attribute: "title", column: title, objects: owners)])
        #expect(tables["ZTAG"]?.requiredValuesMissing == [], "motto is optional")
        #expect(report.notes.contains(
            "table ZOWNER: \(owners) Owner objects have no value for the required attribute \"title\" (column \(title)); Core Data will not save "
                + "them until each has a value (the damaged schema does not describe the table, so its rows were read as version \"V2\"'s: if "
                + "another version wrote the store, salvage with that one, then upgrade)"), "\(report.notes)")
        let disagreement = "--version \"V2\" was given, but the store's metadata (its entity hashes) names version \"V1\": its rows were read as "
            + "\"V2\"'s, so rows of a table whose columns differ can be lost (lost and found, not written) or, where the schema is unreadable, "
            + "taken for another table's of the same shape, and attributes \"V2\" requires may have no value; to keep every row where it belongs, "
            + "salvage with --version \"V1\" (or without --version), then upgrade"
        #expect(report.notes.contains(disagreement), "\(report.notes)")

        // The store's own version, page 1 lost too: nothing missing, nothing said.
        let (_, own) = try Self.salvage(store, in: directory, version: "V1", catalog: catalog, name: "own.sqlite")
        #expect(own.tables.allSatisfy { $0.requiredValuesMissing.isEmpty })
        #expect(!own.notes.contains { $0.contains("required attribute") || $0.contains("was given") })
    }

    /// Page 1 intact but one table's schema row unreadable (its `CREATE TABLE` cut short): that
    /// table alone is the version's own, read by shape, and its required values are counted
    /// (a review: with 40 tables and the schema leaf naming 18 of them zeroed, those 18 had
    /// objects without a required value and no word of it — the census ran for a wholly lost
    /// schema only). A table whose row survived is counted as before: by its absent columns.
    @Test func requiredValuesAreCountedForATableTheSchemaNoLongerDescribes() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        try SalvageFixtures.editSchema(of: store, "UPDATE sqlite_schema SET sql = 'CREATE TABLE ZOWNER (' WHERE name = 'ZOWNER';")
        var newer = Fixtures.model
        newer.entities[0].properties.append(.attribute(AttributeDescription(name: "title", type: .string, isOptional: false)))
        newer.entities[3].properties.append(.attribute(AttributeDescription(name: "title", type: .string, isOptional: false)))
        let catalog = Fixtures.catalog(withV2: newer)
        let (output, report) = try Self.salvage(store, in: directory, version: "V2", catalog: catalog)
        #expect(report.notes.contains("table ZOWNER: its CREATE TABLE statement cannot be read; its rows count as lost and found"), "\(report.notes)")
        let layout = try StoreLayoutBuilder.layout(for: newer)
        let ownerTitle = try #require(layout.propertyColumns["Owner"]?["title"])
        let tagTitle = try #require(layout.propertyColumns["Tag"]?["title"])
        let connection = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
        let owners = Int(try connection.scalar("SELECT count(*) FROM ZOWNER WHERE \(ownerTitle) IS NULL")?.int64 ?? -1)
        let tags = Int(try connection.scalar("SELECT count(*) FROM ZTAG WHERE \(tagTitle) IS NULL")?.int64 ?? -1)
        #expect(owners == 20 && tags == 5)
        let tables = Dictionary(report.tables.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(tables["ZOWNER"]?.requiredValuesMissing == [.init(entity: "Owner", attribute: "title", column: ownerTitle, objects: owners)])
        #expect(tables["ZTAG"]?.requiredValuesMissing == [.init(entity: "Tag", attribute: "title", column: tagTitle, objects: tags)])
        #expect(report.notes.contains { $0.hasPrefix("table ZOWNER: 20 Owner objects") && $0.contains("the damaged schema does not describe the table") })
        #expect(report.notes.contains { $0.hasPrefix("table ZTAG: 5 Tag objects") && $0.contains("which the damaged store's table does not have") })
    }

    @Test func versionsWithTheSameHashesAreAmbiguous() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let twin = CatalogVersion(name: "V1 again", model: Fixtures.model, origin: "inline")
        let catalog = Catalog(name: "Fixture", versions: [Fixtures.version, twin], sourcePath: "fixture-catalog.json")
        let error = #expect(throws: SalvageError.self) { try Self.salvage(store, in: directory, catalog: catalog) }
        #expect(error == .ambiguousVersion(path: store, versions: ["V1", "V1 again"]))
        #expect(error?.recoverySuggestion == "pass --version NAME to say which one the app wrote")
    }

    /// A model cache that would inflate past `BookkeepingRows.maximumInflatedModelCacheBytes` (a
    /// 20 MiB deflate bomb of zeros) is not inflated: the version still comes from the metadata
    /// row and the new store's cache is left empty, where the same store with its own cache
    /// keeps it.
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"))
    func aModelCacheThatInflatesTooFarIsNotRead() throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample("lineages/PostsRevised/CoreDataMigration_Example_3.sqlite")
        let catalog = try Catalog.load(path: try directory.copySampleItem("lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld"))
        let (_, kept) = try Self.salvage(store, in: directory, catalog: catalog, name: "kept.sqlite")
        #expect(kept.metadata?.modelCache == "recovered")
        let bomb = try RawDeflate.deflate(Data(count: 20 << 20), level: 9)
        // Inflating stops at the bound, before the 20 MiB are in memory (inspect's 128 MiB bound
        // would have inflated them all, then failed to read an archive).
        let error = #expect(throws: ModelDecodingError.self) { try BookkeepingRows.model(ofCache: bomb) }
        guard case .unreadableModelCache(.outputLimitExceeded(let limit))? = error else {
            Issue.record("not stopped at the bound: \(String(describing: error))")
            return
        }
        #expect(limit == BookkeepingRows.maximumInflatedModelCacheBytes && limit < 20 << 20)
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            let update = try connection.prepare("UPDATE Z_MODELCACHE SET Z_CONTENT = ?")
            try update.bind([.blob(bomb)])
            _ = try update.step()
        }
        let (output, report) = try Self.salvage(store, in: directory, catalog: catalog, name: "bomb.sqlite")
        #expect(report.metadata?.modelCache == "empty")
        #expect(report.versionSource == "metadata")
        #expect(report.version == kept.version)
        try Self.expectUsableStore(output, catalog: catalog, version: try #require(kept.version),
                                   outcome: StoreMatcher.match(storePath: directory.path("kept.sqlite"), catalog: catalog).outcome)
    }

    /// A metadata row whose plist is 200 bytes that decode to a million values (arrays sharing
    /// their children): salvage reads plists with `PropertyListLimits.storeContent`, so it
    /// is refused, not decoded (the default limits would take it: 124 MB for a 335-byte plist
    /// of this kind), and the new store is stamped fresh.
    @Test func aMetadataPlistThatExpandsIsNotDecoded() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try Fixtures.store(at: store)
        let plist = HandMadePropertyList.expanding(doublings: 20).data
        #expect(plist.count < 200)
        #expect(throws: PropertyListError.valueLimitExceeded(limit: 250_000)) {
            try BinaryPropertyListDecoder.decode(plist, limits: .storeContent)
        }
        #expect(try BinaryPropertyListDecoder.decode(plist).dictionary != nil, "the default limits decode it")
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            let update = try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ?")
            try update.bind([.blob(plist)])
            _ = try update.step()
        }
        let (output, report) = try Self.salvage(store, in: directory)
        #expect(report.metadata?.source == "stamped")
        try Self.expectUsableStore(output)
    }

    /// Real stores written by Core Data, salvaged against their app's own model versions: the
    /// salvaged store matches the catalog exactly as the original does (Employees'
    /// `.xccurrentversion` names its first version, so both match as "newer").
    @Test(.enabled(if: Samples.available, "needs ../shared/samples"), arguments: [
        ("lineages/PostsRevised/CoreDataMigration_Example_1.sqlite", "lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld"),
        ("lineages/PostsRevised/CoreDataMigration_Example_3.sqlite", "lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld"),
        ("lineages/Employees/MWKCoreDataTests2.sqlite", "lineages/Employees/MWKCoreDataTests.xcdatamodeld"),
        ("lineages/SyncMetadata/SyncMetadata_V3.sqlite", "lineages/SyncMetadata/SyncMetadata.xcdatamodeld"),
    ])
    func lineageStoresComeBackAsTheirVersion(sample: String, model: String) throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample(sample)
        let catalog = try Catalog.load(path: try directory.copySampleItem(model))
        let original = StoreMatcher.match(storePath: store, catalog: catalog)
        let expectedVersion = original.version
        let opened = try OpenedStore(path: store, options: StoreOpenOptions(alwaysCopies: true))
        let expected = try SalvageFixtures.rows(of: opened.connection).filter { !["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"].contains($0.key) }
        let (output, report) = try Self.salvage(store, in: directory, catalog: catalog)
        try Self.expectUsableStore(output, catalog: catalog, version: try #require(expectedVersion), outcome: original.outcome)
        #expect(report.version == expectedVersion)
        #expect(report.metadata?.source == "recovered")
        let recovered = try Fixtures.entityRows(of: output)
        for (table, rows) in expected { #expect(recovered[table] == rows, "\(sample): \(table)") }
    }
}

/// Salvage of a store whose version has the indexes Core Data makes besides relationship
/// indexes: a compound fetch index with a descending element, a fetch index on text, and a
/// uniqueness constraint. All are built page by page (numbers by `IndexKeySorter`, the text ones
/// by `TextIndexKeySorter`); every one holds what SQLite's own index in the original store
/// holds, entry by entry.
@Suite struct CoreDataSalvageIndexTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(
            name: "Reading",
            properties: [
                .attribute(AttributeDescription(name: "serial", type: .integer64)),
                .attribute(AttributeDescription(name: "value", type: .integer64)),
                .attribute(AttributeDescription(name: "at", type: .date)),
                .attribute(AttributeDescription(name: "label", type: .string)),
            ],
            uniquenessConstraints: [["serial"]],
            fetchIndexes: [
                FetchIndexDescription(name: "byValue", elements: [.init(propertyName: "value", isAscending: false), .init(propertyName: "at")]),
                FetchIndexDescription(name: "byLabel", elements: [.init(propertyName: "label")]),
            ]),
    ], versionIdentifiers: ["1"])
    static let catalog = Catalog(name: "Readings", versions: [CatalogVersion(name: "V1", model: model, origin: "inline")], sourcePath: "readings.json")

    /// 3,000 readings: repeated and negative values, NULLs, dates as integers and reals.
    static func store(at path: String) throws {
        try StoreCreator.create(model: model, versionIdentifiers: nil, at: path, options: StoreCreationOptions())
        let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
        let ent = try #require(try connection.scalar("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Reading'"))
        try connection.execute("BEGIN")
        let insert = try connection.prepare("INSERT INTO ZREADING (Z_PK, Z_ENT, Z_OPT, ZSERIAL, ZVALUE, ZAT, ZLABEL) VALUES (?, ?, 1, ?, ?, ?, ?)")
        for row in 1...3_000 {
            insert.reset()
            let value: SQLiteValue = row % 11 == 0 ? .null : .integer(Int64((row * 37) % 101) - 50)
            let at: SQLiteValue = row % 5 == 0 ? .integer(Int64(700_000_000 + row)) : .real(700_000_000.25 + Double(row % 17))
            try insert.bind([.integer(Int64(row)), ent, .integer(Int64(10_000 - row)), value, at, .text("label \(row % 40)")])
            _ = try insert.step()
        }
        try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 3000 WHERE Z_NAME = 'Reading'; COMMIT; PRAGMA wal_checkpoint(TRUNCATE)")
    }

    @Test func everyIndexHoldsWhatTheOriginalsHolds() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("readings.sqlite")
        try Self.store(at: store)
        let output = directory.path("salvaged.sqlite")
        let report = try Salvager.salvage(store: store, into: output, options: SalvageOptions(catalog: Self.catalog))
        try CoreDataSalvageTests.expectUsableStore(output, catalog: Self.catalog)
        let indexes = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'ZREADING' ORDER BY name")
        // The uniqueness constraint's, the two fetch indexes, and the label's own (Core Data
        // indexes the property of a one-element fetch index too).
        #expect(indexes.count == 4, "\(indexes.map { $0[1].string ?? "" })")
        #expect(indexes.contains { $0[1].string?.contains("DESC") == true }, "a descending element")
        #expect(indexes.contains { $0[1].string?.hasPrefix("CREATE UNIQUE") == true }, "the uniqueness constraint")
        for index in indexes.compactMap({ $0[0].string }) {
            let original = try IndexTreeBuilderTests.entries(of: index, table: "ZREADING", in: store)
            #expect(original.count == 3_000)
            #expect(try IndexTreeBuilderTests.entries(of: index, table: "ZREADING", in: output) == original, "\(index)")
        }
        // Every one page by page: the label's two (the same keys, sorted once) as text.
        #expect(report.rowsCopiedPageByPage == 3_000)
        #expect(report.indexEntriesBuiltPageByPage == 4 * 3_000)
    }

    /// The damage lost the uniqueness constraint's index and left a serial twice: the index built
    /// page by page finds it, and the table goes in again through SQLite, the first row of the
    /// serial kept and the second counted as a conflict, as row by row.
    @Test func aSerialFoundTwiceIsAConflict() throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("readings.sqlite")
        try Self.store(at: store)
        try SalvageFixtures.editSchema(of: store, """
            DELETE FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'ZREADING' AND sql LIKE 'CREATE UNIQUE%';
            """)
        do {
            let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
            try connection.execute("UPDATE ZREADING SET ZSERIAL = (SELECT ZSERIAL FROM ZREADING WHERE Z_PK = 10) WHERE Z_PK = 2000")
        }
        let output = directory.path("salvaged.sqlite")
        let report = try Salvager.salvage(store: store, into: output, options: SalvageOptions(catalog: Self.catalog))
        try CoreDataSalvageTests.expectUsableStore(output, catalog: Self.catalog)
        let table = try #require(report.tables.first { $0.name == "ZREADING" })
        #expect(table.rows.recovered == 2_999 && table.rows.conflictsDropped == 1)
        #expect(table.entities.map(\.rows) == [2_999])
        #expect(report.rowsCopiedPageByPage == 0 && report.indexEntriesBuiltPageByPage == 0, "the table went back through SQLite")
        let kept = try SQLiteConnection(path: output, options: SQLiteOpenOptions(mode: .immutable))
            .rows("SELECT Z_PK FROM ZREADING WHERE ZSERIAL = 9990").compactMap { $0[0].int64 }
        #expect(kept == [10], "the first row of the serial stays")
    }
}
