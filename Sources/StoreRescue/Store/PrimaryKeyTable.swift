/// One row of `Z_PRIMARYKEY`: an entity's number, name, parent and last handed-out primary key.
public struct PrimaryKeyEntry: Sendable, Equatable, Codable {
    public var ent: Int64
    public var name: String
    public var superEnt: Int64
    public var max: Int64

    /// History entities are numbered from 16001 (`CHANGE`, `TRANSACTION`, `TRANSACTIONSTRING`).
    public var isHistoryEntity: Bool { ent > 16000 }

    /// Reads every row of `Z_PRIMARYKEY`, bounded.
    static func readAll(from connection: SQLiteConnection) throws -> [PrimaryKeyEntry] {
        try connection.rows(
            "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT", maximumRows: 100_000
        ).map { row in
            PrimaryKeyEntry(
                ent: row[0].int64 ?? -1, name: row[1].string ?? "", superEnt: row[2].int64 ?? 0, max: row[3].int64 ?? 0)
        }
    }

    /// The entry at the root of `entry`'s inheritance chain (cycle-safe).
    /// `root(of:in:)` with the entries already keyed by `Z_ENT` (the first of each number).
    static func root(of entry: PrimaryKeyEntry, byNumber entries: [Int64: PrimaryKeyEntry]) -> PrimaryKeyEntry {
        var current = entry
        var seen: Set<Int64> = [entry.ent]
        while current.superEnt != 0, let parent = entries[current.superEnt], seen.insert(parent.ent).inserted {
            current = parent
        }
        return current
    }

    static func root(of entry: PrimaryKeyEntry, in entries: [PrimaryKeyEntry]) -> PrimaryKeyEntry {
        var current = entry
        var seen: Set<Int64> = [entry.ent]
        while current.superEnt != 0, let parent = entries.first(where: { $0.ent == current.superEnt }),
            seen.insert(parent.ent).inserted
        {
            current = parent
        }
        return current
    }

    /// The table that holds rows of the hierarchy rooted at `root`: `Z<NAME>`, or `A<NAME>` for
    /// history entities.
    static func tableName(forRoot root: PrimaryKeyEntry) -> String {
        (root.isHistoryEntity ? "A" : "Z") + root.name.uppercased()
    }
}
