import Foundation
import Testing
@testable import StoreRescue

/// The query that finds dangling relationship values (`CoreDataSalvageOutput.danglingValues`)
/// names the same rows as the plain per-row lookup it replaced,
/// `NOT EXISTS (SELECT 1 FROM target AS t WHERE t.Z_PK = value AND t.Z_ENT IN (…))`, whatever
/// the values' storage classes: salvage's fast path copies records byte for byte, so a column
/// declared INTEGER (as every reference column of a Core Data layout is) can hold text, reals or
/// blobs.
@Suite struct DanglingReferenceTests {
    /// Owners 1–5 (entity 2) and 6 (entity 3, not a target); items point at all sorts of values.
    static func database() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: ":memory:", options: SQLiteOpenOptions(mode: .memory))
        try connection.execute("""
            CREATE TABLE ZOWNER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, Z_FOK_OWNER INTEGER);
            CREATE TABLE Z_1TAGS (Z_1ITEMS INTEGER, Z_2OWNERS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_2OWNERS));
            INSERT INTO ZOWNER VALUES (1, 2, 1), (2, 2, 1), (3, 2, 1), (4, 2, 1), (5, 2, 1), (6, 3, 1);
            """)
        let values = ["1", "3", "5", "6", "7", "999", "-1", "0", "3.0", "3.5", "'3'", "'x'", "X'03'", "NULL", "9223372036854775807", "2.0000001"]
        for (index, value) in values.enumerated() {
            try connection.execute("INSERT INTO ZITEM VALUES (\(index + 1), 1, 1, \(value), \(index))")
            try connection.execute("INSERT INTO Z_1TAGS VALUES (\(index + 1), \(value))")
        }
        return connection
    }

    static let owner = LayoutReferences.Reference(
        table: "ZITEM", column: "ZOWNER", companions: ["Z_FOK_OWNER"], targetTable: "ZOWNER", targetEntities: [2])
    static let joinEnd = LayoutReferences.Reference(
        table: "Z_1TAGS", column: "Z_2OWNERS", companions: [], targetTable: "ZOWNER", targetEntities: [2])

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

    @Test func theSetDifferenceNamesTheRowsThePerRowLookupNamed() throws {
        let connection = try Self.database()
        for (reference, key) in [(Self.owner, "Z_PK"), (Self.joinEnd, "Z_1ITEMS")] {
            let expected = try Self.keys(connection, Self.perRowLookup(reference, key: key))
            let found = try Self.keys(connection, """
                SELECT \(key) FROM \(reference.table) WHERE \(reference.column) IN (\(CoreDataSalvageOutput.danglingValues(of: reference)))
                """)
            #expect(found == expected, "\(reference.table).\(reference.column)")
            // 1, 3, 5, 3.0 and '3' (stored as 3) name kept owners; owner 6 is another entity; NULL
            // is not dangling; 7, 999, -1, 0, 3.5, 'x', X'03', the largest integer and 2.0000001 are.
            #expect(expected == [4, 5, 6, 7, 8, 10, 12, 13, 15, 16], "\(reference.table)")
        }
        // The storage classes really are mixed: text, real and blob values reach the IN list.
        let classes = try connection.rows("SELECT DISTINCT typeof(Z_2OWNERS) FROM Z_1TAGS ORDER BY 1").compactMap { $0.first?.string }
        #expect(classes == ["blob", "integer", "null", "real", "text"])
    }

    @Test func nothingDanglesWhenEveryValueNamesAKeptRow() throws {
        let connection = try Self.database()
        try connection.execute("DELETE FROM ZITEM WHERE ZOWNER IS NULL OR ZOWNER NOT IN (1, 2, 3, 4, 5)")
        #expect(try connection.scalar("SELECT count(*) FROM ZITEM")?.int64 == 5)
        let dangling = try connection.rows(CoreDataSalvageOutput.danglingValues(of: Self.owner))
        #expect(dangling.isEmpty)
    }
}
