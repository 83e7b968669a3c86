/// How `Salvager` recovers a store. The zero value writes a plain SQLite database.
public struct SalvageOptions: Sendable {
    /// The app's known versions: with one, the output is a Core Data store of the version the
    /// damaged store was; without, a plain SQLite database (one table per recovered table).
    public var catalog: Catalog?
    /// The catalog version to rebuild; nil: the one the store's surviving metadata, model cache or
    /// schema names (or the catalog's only version).
    public var versionName: String?
    /// The largest record read into memory (its overflow chain assembled); a larger one is counted
    /// as unreadable. Bounds memory whatever the file claims: SQLite holds a second copy while it
    /// writes the row, so peak memory is about 25 MB + 8 MiB of page cache + twice this.
    public var maximumPayloadBytes: Int
    /// Read the store through a symbolic link at its path instead of refusing it. (A `-wal` that
    /// is a symbolic link is never followed.)
    public var followsSymlinks: Bool

    public init(catalog: Catalog? = nil, versionName: String? = nil, maximumPayloadBytes: Int = 8 << 20, followsSymlinks: Bool = false) {
        self.catalog = catalog
        self.versionName = versionName
        self.maximumPayloadBytes = maximumPayloadBytes
        self.followsSymlinks = followsSymlinks
    }
}

/// Where a running salvage is, for a progress display.
public struct SalvageProgress: Sendable, Equatable {
    public enum Phase: String, Sendable {
        /// Reading pages and writing the rows found.
        case read
        /// Fix-ups, indexes and checks on the new store.
        case finish
    }

    public var phase: Phase
    public var completedPages: Int
    public var totalPages: Int

    public var fraction: Double {
        totalPages > 0 ? min(1, Double(completedPages) / Double(totalPages)) : 0
    }
}
