import Foundation
import Testing
@testable import StoreRescue

/// A big store for the writing commands' failure tests (file-size limits, signals, kills): a
/// catalog V1 → V2 (adds a defaulted attribute, renames one, adds a fetch index) and a V1 store
/// of `rows` items of 200–500 bytes each, checkpointed.
enum BigStore {
    static func make(store: String, catalog: String, rows: Int) throws -> (store: String, catalog: String) {
        let json = """
            {"formatVersion": 1, "app": "Big", "versions": [
              {"name": "V1", "entities": [{"name": "Item", "attributes": [
                {"name": "title", "type": "String"}, {"name": "body", "type": "String", "optional": true},
                {"name": "createdAt", "type": "Date"}, {"name": "score", "type": "Int64"}]}]},
              {"name": "V2", "entities": [{"name": "Item", "attributes": [
                {"name": "title", "type": "String"}, {"name": "text", "type": "String", "optional": true, "originalName": "body"},
                {"name": "createdAt", "type": "Date"}, {"name": "score", "type": "Int64"}, {"name": "flag", "type": "Bool", "default": false}],
                "fetchIndexes": [{"name": "byScore", "elements": ["score"]}]}]}]}
            """
        #expect(FileManager.default.createFile(atPath: catalog, contents: Data(json.utf8)))
        let version = try #require(try Catalog.load(path: catalog).version(named: "V1"))
        try StoreCreator.create(model: version.model, versionIdentifiers: nil, at: store)
        let connection = try SQLiteConnection(path: store, options: SQLiteOpenOptions(mode: .readWrite))
        try connection.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZBODY, ZCREATEDAT, ZSCORE)
            SELECT i, 1, 1, 'item ' || i, printf('%.*c', 200 + i % 300, 'x'), 700000000 + i, i * 7 FROM n;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows);
            PRAGMA wal_checkpoint(TRUNCATE);
            """)
        return (store, catalog)
    }
}
