import Foundation
import Testing
@testable import StoreRescue

/// The condition that finds dangling relationship values (`CoreDataSalvageOutput.isDangling`)
/// names the same rows as the per-row lookup it replaced,
/// `NOT EXISTS (SELECT 1 FROM target AS t WHERE t.Z_PK = value AND t.Z_ENT IN (…))`, whatever the
/// values' storage classes — numeric text included, which a normal INSERT turns into a number
/// but a damaged file can hold in a column declared INTEGER (made here with `writable_schema`).
@Suite struct DanglingReferenceTests {
    /// Owners 1–5 (entity 2) and 6 (entity 3, not a target); items (and join rows) point at all
    /// sorts of values, in columns declared without a type and then, in the schema, INTEGER.
    static func database(in directory: TemporaryDirectory) throws -> SQLiteConnection {
        let path = directory.path("references.sqlite")
        do {
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("""
                CREATE TABLE ZOWNER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
                CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER, Z_FOK_OWNER INTEGER);
                CREATE TABLE Z_1TAGS (Z_1ITEMS INTEGER, Z_2OWNERS, PRIMARY KEY (Z_1ITEMS, Z_2OWNERS));
                INSERT INTO ZOWNER VALUES (1, 2, 1), (2, 2, 1), (3, 2, 1), (4, 2, 1), (5, 2, 1), (6, 2, 1), (7, 3, 1);
                """)
            for (index, value) in values.enumerated() {
                try connection.execute("INSERT INTO ZITEM VALUES (\(index + 1), 1, 1, \(value), \(index))")
                try connection.execute("INSERT INTO Z_1TAGS VALUES (\(index + 1), \(value))")
            }
        }
        // The reference columns become INTEGER, as a Core Data layout declares them; the values
        // stored stay as they are (text stays text).
        try SalvageFixtures.editSchema(of: path, """
            UPDATE sqlite_schema SET sql = replace(sql, 'ZOWNER, Z_FOK', 'ZOWNER INTEGER, Z_FOK') WHERE name = 'ZITEM';
            UPDATE sqlite_schema SET sql = replace(sql, 'Z_2OWNERS, PRIMARY', 'Z_2OWNERS INTEGER, PRIMARY') WHERE name = 'Z_1TAGS';
            """)
        return try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
    }

    static let values = [
        "1", "3", "'5'", "' 4'", "'2.0'", "9", "'x'", "3.0", "'7'", "7", "3.5", "X'03'", "NULL", "-1", "0",
        "9223372036854775807", "'9223372036854775807'", "2.0000001", "'6abc'",
    ]

    static let owner = LayoutReferences.Reference(
        table: "ZITEM", column: "ZOWNER", companions: ["Z_FOK_OWNER"], targetTable: "ZOWNER", targetEntities: [2])
    static let joinEnd = LayoutReferences.Reference(
        table: "Z_1TAGS", column: "Z_2OWNERS", companions: [], targetTable: "ZOWNER", targetEntities: [2])

    /// References whose targets are every entity the owner table holds (2 and 3): the `Z_ENT`
    /// test may be left out, and the rows named must not change.
    static let ownerOfAnyEntity = LayoutReferences.Reference(
        table: "ZITEM", column: "ZOWNER", companions: ["Z_FOK_OWNER"], targetTable: "ZOWNER", targetEntities: [2, 3])
    static let joinEndOfAnyEntity = LayoutReferences.Reference(
        table: "Z_1TAGS", column: "Z_2OWNERS", companions: [], targetTable: "ZOWNER", targetEntities: [2, 3])

    static func perRowLookup(_ reference: LayoutReferences.Reference, key: String) -> String {
        """
        SELECT \(key) FROM \(reference.table) WHERE \(reference.column) IS NOT NULL AND NOT EXISTS (\
        SELECT 1 FROM \(reference.targetTable) AS t WHERE t.Z_PK = \(reference.table).\(reference.column) \
        AND t.Z_ENT IN (\(reference.targetEntities.map(String.init).joined(separator: ","))))
        """
    }

    static func keys(_ connection: SQLiteConnection, _ sql: String) throws -> [Int64] {
        try connection.rows(sql).compactMap { $0.first?.int64 }.sorted()
    }

    @Test func theConditionNamesTheRowsThePerRowLookupNamed() throws {
        let directory = try TemporaryDirectory()
        let connection = try Self.database(in: directory)
        // Text really is stored in the INTEGER columns, beside integers, reals, blobs and NULL.
        for table in ["ZITEM", "Z_1TAGS"] {
            let column = table == "ZITEM" ? "ZOWNER" : "Z_2OWNERS"
            let classes = try connection.rows("SELECT DISTINCT typeof(\(column)) FROM \(table) ORDER BY 1").compactMap { $0.first?.string }
            #expect(classes == ["blob", "integer", "null", "real", "text"], "\(table)")
            #expect(try connection.scalar("SELECT typeof(\(column)) FROM \(table) WHERE rowid = 3")?.string == "text", "'5' is text")
        }
        for (reference, key) in [(Self.owner, "Z_PK"), (Self.joinEnd, "Z_1ITEMS")] {
            let expected = try Self.keys(connection, Self.perRowLookup(reference, key: key))
            let found = try Self.keys(connection, "SELECT \(key) FROM \(reference.table) WHERE \(CoreDataSalvageOutput.isDangling(reference))")
            #expect(found == expected, "\(reference.table).\(reference.column)")
            // Kept: 1, 3, '5', ' 4', '2.0', 3.0 (owners of entity 2). Dangling: 9, 'x', '7' and 7
            // (owner 7 is entity 3), 3.5, X'03', -1, 0, the largest integer as a number and as
            // text, 2.0000001, '6abc'. NULL is not dangling.
            #expect(expected == [6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19], "\(reference.table)")
        }
    }

    /// Without the `Z_ENT` test (a lookup in the target's own b-tree instead of a list), the same
    /// rows as the per-row lookup, whatever the values' storage classes; and the test is left out
    /// only when the target holds no other entity.
    @Test func withoutTheEntityTestTheConditionNamesTheSameRows() throws {
        let directory = try TemporaryDirectory()
        let connection = try Self.database(in: directory)
        #expect(try CoreDataSalvageOutput.everyRowQualifies(Self.ownerOfAnyEntity, connection: connection))
        #expect(try !CoreDataSalvageOutput.everyRowQualifies(Self.owner, connection: connection), "owner 7 is entity 3")
        for (reference, key) in [(Self.ownerOfAnyEntity, "Z_PK"), (Self.joinEndOfAnyEntity, "Z_1ITEMS")] {
            let expected = try Self.keys(connection, Self.perRowLookup(reference, key: key))
            let condition = CoreDataSalvageOutput.isDangling(reference, everyTargetRowQualifies: true)
            #expect(!condition.contains("Z_ENT"))
            let plan = try connection.rows("EXPLAIN QUERY PLAN SELECT \(key) FROM \(reference.table) WHERE \(condition)").compactMap { $0.last?.string }
            #expect(plan.contains { $0.contains("USING ROWID SEARCH ON TABLE ZOWNER") }, "\(plan)")
            #expect(try Self.keys(connection, "SELECT \(key) FROM \(reference.table) WHERE \(condition)") == expected, "\(reference.table)")
            // Owner 7 (entity 3) is a target now: '7' and 7 are kept.
            #expect(expected == [6, 7, 11, 12, 14, 15, 16, 17, 18, 19], "\(reference.table)")
        }
    }

    /// What the old condition deletes and clears, the new one does, row for row.
    @Test func theStatementsChangeTheSameRows() throws {
        let directory = try TemporaryDirectory()
        let connection = try Self.database(in: directory)
        try connection.execute("UPDATE ZITEM SET ZOWNER = NULL, Z_FOK_OWNER = NULL WHERE \(CoreDataSalvageOutput.isDangling(Self.owner))")
        try connection.execute("DELETE FROM Z_1TAGS WHERE Z_2OWNERS IS NULL OR \(CoreDataSalvageOutput.isDangling(Self.joinEnd))")
        #expect(try Self.keys(connection, "SELECT Z_PK FROM ZITEM WHERE ZOWNER IS NULL") == [6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19])
        #expect(try Self.keys(connection, "SELECT Z_1ITEMS FROM Z_1TAGS") == [1, 2, 3, 4, 5, 8])
        #expect(try connection.rows(Self.perRowLookup(Self.owner, key: "Z_PK")).isEmpty)
    }
}
