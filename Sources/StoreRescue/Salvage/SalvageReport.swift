import Foundation

/// What a salvage recovered, table by table, and what it found on the way. Its JSON encoding is a
/// stable contract (`Docs/JSON-OUTPUT.md`): field names never change; every documented field is
/// present, `null` when it does not apply.
public struct SalvageReport: Sendable, Encodable, Equatable {
    public enum Mode: String, Sendable, Codable {
        /// A Core Data store of a catalog version.
        case coreData
        /// A plain SQLite database, one table per recovered table (no catalog).
        case plain
    }

    /// The damaged file as salvage read it.
    public struct FileSummary: Sendable, Encodable, Equatable {
        public var size: Int64
        public var pageSize: Int
        /// `header`, `writeAheadLog` or `guessed`.
        public var pageSizeSource: String
        public var reservedBytes: Int
        public var textEncoding: String
        /// The 100-byte header was valid and used.
        public var headerIntact: Bool
        /// Pages the database should have (last WAL commit, else header, else file size).
        public var pageCount: Int
        /// Pages that could be read (whole pages of the file plus pages the WAL adds).
        public var availablePages: Int
        @NullEncoded public var autoVacuum: Bool?
    }

    /// Every page, by what it turned out to be.
    public struct PageSummary: Sendable, Encodable, Equatable {
        public var total: Int
        /// Pages whose bytes were read.
        public var read: Int
        /// Pages the database should have but the file (and WAL) do not: cut off, or unreadable.
        public var missing: Int
        /// Pages that should hold data but do not parse (zeroed or overwritten pages, tree pages
        /// whose header is broken, leaves with unreadable cells).
        public var damaged: Int
        public var tableLeaf: Int
        public var tableInterior: Int
        public var indexLeaf: Int
        public var indexInterior: Int
        public var overflow: Int
        public var freelistTrunk: Int
        public var freelistLeaf: Int
        public var pointerMap: Int
        public var zeroed: Int
        public var unknown: Int
    }

    public struct WriteAheadLogSummary: Sendable, Encodable, Equatable {
        public var path: String
        /// True when committed frames were laid over the main file.
        public var used: Bool
        public var framesInFile: Int
        /// Frames whose salts and cumulative checksums hold (the rest of the file is ignored).
        public var validFrames: Int
        /// Valid frames that belong to a committed transaction.
        public var committedFrames: Int
        /// Distinct pages taken from the WAL.
        public var pages: Int
        @NullEncoded public var issue: String?
    }

    /// How a table's pages were attributed to it (page counts).
    public struct Identification: Sendable, Encodable, Equatable {
        /// Reached from the table's root page named in `sqlite_schema`.
        public var schemaTree: Int
        /// Not reachable from an intact tree; the pointer map leads to the table's root page.
        public var pointerMap: Int
        /// Not reachable; its records' shape fits this table (column count, storage classes, `Z_ENT`).
        public var recordShape: Int
    }

    public struct PageCounts: Sendable, Encodable, Equatable {
        public var read: Int
        public var damaged: Int
        public var missing: Int
    }

    public struct EntityCount: Sendable, Encodable, Equatable {
        public var name: String
        public var ent: Int
        public var rows: Int
    }

    /// Objects of one entity written without a value for one of its required attributes, because
    /// the damaged store's table has no column for it (a `--version` newer than the store).
    public struct RequiredValueGap: Sendable, Encodable, Equatable {
        public var entity: String
        public var attribute: String
        /// The new store's column for it, NULL in those objects.
        public var column: String
        public var objects: Int
    }

    public struct TableSummary: Sendable, Encodable, Equatable {
        public var name: String
        /// `recovered` (rows written), `bookkeeping` (Core Data's own tables, rebuilt for the
        /// version), `skipped` (not recovered: `reason` says why).
        public var disposition: String
        @NullEncoded public var reason: String?
        @NullEncoded public var rootPage: Int?
        public var identifiedBy: Identification
        /// What became of the table's rows.
        public var rows: RowCounts
        public var pages: PageCounts
        /// Core Data mode: rows per entity (`Z_ENT`) of the table.
        public var entities: [EntityCount]
        /// Core Data mode: required attributes the objects went in without, since the damaged
        /// store's table has no column for them; `[]` otherwise.
        public var requiredValuesMissing: [RequiredValueGap] = []
    }

    /// Rows whose table could not be told.
    public struct LostAndFound: Sendable, Encodable, Equatable {
        /// Live rows (plain mode: written to `lost_and_found_<n>`, or `lost_and_found_records` when
        /// too wide for a table; Core Data mode: not written).
        public var rows: Int
        /// Cells on unattributed pages that could not be decoded.
        public var rowsUnreadable: Int
        /// Deleted rows whose table could not be told (plain mode: in `deleted_and_found_<n>`).
        public var deletedRows: Int
        /// The tables written for them (plain mode).
        public var tables: [String]
    }

    /// What became of a table's rows — or, as `totals`, of every table's and the lost and found's.
    public struct RowCounts: Sendable, Encodable, Equatable {
        /// Rows written to the new store (partial ones included), after duplicates and fix-ups.
        public var recovered = 0
        /// Rows written with values lost to a broken overflow chain (set to NULL).
        public var partial = 0
        /// Cells that could not be decoded.
        public var unreadable = 0
        /// Rows whose values do not fit the table's columns (Core Data mode: its declared types or
        /// `Z_ENT`; both modes: more values than columns), not written to the table.
        public var notFitting = 0
        /// Rows on free pages whose rowid no live row has: deleted, recoverable; never mixed into
        /// live tables (plain mode: written to `deleted_and_found_<n>`).
        public var deleted = 0
        /// Later copies of a rowid already recovered (the copy reachable from the tree wins).
        public var duplicatesResolved = 0
        /// Rows refused by a unique index of the version's layout.
        public var conflictsDropped = 0
        /// To-one values pointing at a row that was not recovered, set to NULL.
        public var danglingCleared = 0
        /// Join-table rows with an end that was not recovered, dropped.
        public var danglingRowsDropped = 0
        /// `Z_ENT` or `Z_OPT` values set to what Core Data expects.
        public var valuesFixed = 0

        public static func + (lhs: RowCounts, rhs: RowCounts) -> RowCounts {
            RowCounts(
                recovered: lhs.recovered + rhs.recovered, partial: lhs.partial + rhs.partial, unreadable: lhs.unreadable + rhs.unreadable,
                notFitting: lhs.notFitting + rhs.notFitting, deleted: lhs.deleted + rhs.deleted,
                duplicatesResolved: lhs.duplicatesResolved + rhs.duplicatesResolved, conflictsDropped: lhs.conflictsDropped + rhs.conflictsDropped,
                danglingCleared: lhs.danglingCleared + rhs.danglingCleared, danglingRowsDropped: lhs.danglingRowsDropped + rhs.danglingRowsDropped,
                valuesFixed: lhs.valuesFixed + rhs.valuesFixed)
        }
    }

    public struct MetadataSummary: Sendable, Encodable, Equatable {
        /// `recovered`: the damaged store's `Z_METADATA` row was read (UUID and app keys kept);
        /// `stamped`: it was not, so a new row was stamped for the version with a new UUID.
        public var source: String
        public var uuid: String
        public var frameworkVersion: Int
        /// `recovered` (the store's own model cache, whose hashes are the version's) or `empty`.
        public var modelCache: String
        /// Whether the persistent history tables were written (the damaged store had them).
        public var includesPersistentHistory: Bool
    }

    public var store: String
    public var output: String
    public var mode: Mode
    @NullEncoded public var version: String?
    /// How the version was chosen: `option`, `metadata`, `modelCache`, `schema`, `onlyVersion`.
    @NullEncoded public var versionSource: String?
    /// Where table definitions came from: `sqlite_schema` (page 1's tree), `recoveredSchemaPages`
    /// (schema rows found on pages no intact tree reaches), `catalogLayout`, or `none`.
    public var schemaSource: String
    public var file: FileSummary
    @NullEncoded public var writeAheadLog: WriteAheadLogSummary?
    public var pages: PageSummary
    public var tables: [TableSummary]
    public var lostAndFound: LostAndFound
    public var totals: RowCounts
    /// Of the rows recovered, those read from intact table trees and copied as they are, page
    /// by page; the others went in through SQLite (see Docs/SALVAGE.md, "How rows are written").
    public var rowsCopiedPageByPage: Int
    /// Index entries written page by page for the tables copied that way (sorted from the keys
    /// of the rows copied); the other indexes were filled by SQLite.
    public var indexEntriesBuiltPageByPage: Int
    @NullEncoded public var metadata: MetadataSummary?
    /// What could not be read as expected, in words.
    public var notes: [String]
    public var seconds: Double
    @NullEncoded public var error: ErrorSummary?
}
