import Foundation

/// The rows of Core Data's own tables found in a damaged store: they are not copied (the new
/// store's are written for its version) but say what the store was — its UUID and metadata, the
/// last primary key handed out per entity, its model cache. Also SQLite's own `sqlite_sequence`
/// (the last rowid handed out per `AUTOINCREMENT` table), which plain mode writes back.
struct BookkeepingRows {
    enum Table: String {
        case primaryKey = "Z_PRIMARYKEY"
        case metadata = "Z_METADATA"
        case modelCache = "Z_MODELCACHE"
        case sequence = "SQLITE_SEQUENCE"
    }

    /// A `sqlite_sequence` row: the table named and the largest rowid it ever handed out.
    struct SequenceRow: Equatable {
        var name: String
        var seq: Int64
    }

    struct PrimaryKeyRow: Equatable {
        var ent: Int64
        var name: String
        var superEnt: Int64
        var max: Int64
    }

    /// By rowid: a row found twice (tree and orphan page) is kept once.
    private(set) var metadata: [Int64: (uuid: String?, plist: Data?)] = [:]
    private(set) var primaryKeys: [Int64: PrimaryKeyRow] = [:]
    private(set) var modelCaches: [Int64: Data] = [:]
    private(set) var sequences: [Int64: SequenceRow] = [:]
    /// `sqlite_sequence` rows from leaves no intact tree reached, by table name (the largest).
    private(set) var orphanSequences: [String: Int64] = [:]
    /// The `AUTOINCREMENT` tables of the schema: the only names an orphan leaf's row is kept for.
    /// The bounds on `sqlite_sequence` rows grow to hold one entry for each (a real store with
    /// more than 10,000 of them, or longer names, had the entries past the bounds dropped).
    var autoincrementTables: Set<String> = [] {
        didSet {
            sequenceRowLimit = max(Self.maximumSequenceRows, autoincrementTables.count)
            sequenceNameByteLimit = max(Self.maximumSequenceNameBytes, autoincrementTables.reduce(0) { $0 + $1.utf8.count })
        }
    }
    private var sequenceRowLimit = Self.maximumSequenceRows
    private var sequenceNameByteLimit = Self.maximumSequenceNameBytes
    /// More rows than a store has are damage: collection stops there (bounds memory). Blobs kept
    /// (plists, model caches) stay under the model cache's own bound all together.
    static let maximumRows = 100_000
    static let maximumBlobBytes = Int(ModelFileLoader.maximumModelCacheBytes)
    private var blobBytes = 0
    static let maximumSequenceRows = 10_000
    static let maximumSequenceNameBytes = 1 << 20
    private var sequenceNameBytes = 0
    /// `sqlite_sequence` rows past the bounds above.
    private(set) var sequenceRowsNotKept = 0
    /// The largest `seq` believed from a leaf no intact tree reached (`fromOrphanLeaf`): such a
    /// leaf is taken as `sqlite_sequence`'s because its rows name `AUTOINCREMENT` tables, and a
    /// user table's rows could look so. A larger value would leave the table too few rowids to
    /// insert into (2^63 − 1 refuses every insert); an intact tree's is believed as it is.
    static let largestOrphanSequence: Int64 = 1 << 62
    /// Orphan-leaf `sqlite_sequence` entries not believed (past `largestOrphanSequence`): name, seq.
    private(set) var sequencesNotBelieved: [(name: String, seq: Int64)] = []

    /// Adds one row of `table`; values are taken only when their storage class is the expected one.
    /// `fromOrphanLeaf`: the row is on a leaf no intact tree reached (see `largestOrphanSequence`).
    mutating func add(
        _ table: Table, rowid: Int64, record: [RecordColumn], payload: UnsafeRawBufferPointer, encoding: DatabaseGeometry.TextEncoding,
        fromOrphanLeaf: Bool = false
    ) {
        func text(_ index: Int) -> String? {
            guard index < record.count, record[index].isAvailable, record[index].storageClass == .text else { return nil }
            return encoding.string(from: record[index].bytes(in: payload))
        }
        func blob(_ index: Int) -> Data? {
            guard index < record.count, record[index].isAvailable, record[index].storageClass == .blob else { return nil }
            return Data(record[index].bytes(in: payload))
        }
        func integer(_ index: Int) -> Int64? {
            guard index < record.count, record[index].isAvailable, record[index].storageClass == .integer else { return nil }
            return record[index].integer(in: payload)
        }
        switch table {
        case .metadata:
            guard metadata.count < 16, metadata[rowid] == nil else { return }
            let plist = blob(2)
            guard blobBytes + (plist?.count ?? 0) <= Self.maximumBlobBytes else { return }
            blobBytes += plist?.count ?? 0
            metadata[rowid] = (text(1), plist)
        case .primaryKey:
            guard primaryKeys.count < Self.maximumRows, primaryKeys[rowid] == nil, let name = text(1) else { return }
            primaryKeys[rowid] = PrimaryKeyRow(ent: rowid, name: name, superEnt: integer(2) ?? 0, max: integer(3) ?? 0)
        case .modelCache:
            guard modelCaches.count < 4, modelCaches[rowid] == nil, let content = blob(0),
                blobBytes + content.count <= Self.maximumBlobBytes
            else { return }
            blobBytes += content.count
            modelCaches[rowid] = content
        case .sequence:
            // One row per AUTOINCREMENT table in a real store: more rows, or longer names, than
            // the bounds are damage or hostile, and are counted, not kept (memory stays bounded).
            // `seq` as SQLite reads it for the next rowid (its integer value: text and blobs by
            // their leading digits, reals truncated, NULL 0), whatever was written there.
            // A row from a leaf no tree reached is kept by name (the larger `seq` wins), never by
            // rowid: a look-alike leaf swept first must not take the rowids of the real entries.
            guard fromOrphanLeaf || sequences[rowid] == nil, let name = text(0) else { return }
            // From an orphan leaf, only an entry for an `AUTOINCREMENT` table of the schema: a
            // look-alike row naming anything else is no counter (and spends no bound).
            if fromOrphanLeaf, !autoincrementTables.contains(name) { return }
            let seq = record.count > 1 && record[1].isAvailable ? Self.sqliteInteger(record[1], payload: payload, encoding: encoding) : 0
            if fromOrphanLeaf, seq >= Self.largestOrphanSequence {
                if sequencesNotBelieved.count < 10 { sequencesNotBelieved.append((name, seq)) }
                return
            }
            // A name already kept costs nothing more: look-alike rows naming the same tables again
            // must not use up the bounds before the real entries are read.
            if fromOrphanLeaf, let kept = orphanSequences[name] {
                orphanSequences[name] = max(kept, seq)
                return
            }
            guard sequences.count + orphanSequences.count < sequenceRowLimit, sequenceNameBytes + name.utf8.count <= sequenceNameByteLimit else {
                sequenceRowsNotKept += 1
                return
            }
            sequenceNameBytes += name.utf8.count
            if fromOrphanLeaf {
                orphanSequences[name] = seq
            } else {
                sequences[rowid] = SequenceRow(name: name, seq: seq)
            }
        }
    }

    /// A value as SQLite's integer conversion gives it (`sqlite3VdbeIntValue`): an integer as
    /// it is, a real truncated toward zero and clamped to 64 bits (NaN 0), text or a blob by its
    /// leading integer (white space, a sign, digits; clamped; none: 0), NULL 0.
    static func sqliteInteger(_ column: RecordColumn, payload: UnsafeRawBufferPointer, encoding: DatabaseGeometry.TextEncoding) -> Int64 {
        switch column.storageClass {
        case .null: return 0
        case .integer: return column.integer(in: payload)
        case .real:
            let value = column.real(in: payload)
            guard !value.isNaN else { return 0 }
            if value >= 9_223_372_036_854_775_807.0 { return .max }
            if value <= -9_223_372_036_854_775_808.0 { return .min }
            return Int64(value.rounded(.towardZero))
        case .text, .blob:
            let bytes = column.bytes(in: payload)
            let text = column.storageClass == .text ? encoding.string(from: bytes) : String(decoding: bytes, as: UTF8.self)
            return leadingInteger(text)
        }
    }

    /// The integer `text` begins with, as `sqlite3Atoi64` reads it.
    static func leadingInteger(_ text: String) -> Int64 {
        var characters = Substring(text).drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{0C}" }
        var negative = false
        if let sign = characters.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            characters = characters.dropFirst()
        }
        var magnitude: UInt64 = 0
        var overflow = false
        for character in characters {
            guard let digit = character.wholeNumberValue, character.isASCII else { break }
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(digit))
            if o1 || o2 { overflow = true; break }
            magnitude = sum
        }
        if negative {
            return overflow || magnitude > UInt64(Int64.max) + 1 ? .min : Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        return overflow || magnitude > UInt64(Int64.max) ? .max : Int64(magnitude)
    }

    /// The largest `seq` recovered per table name (a name found twice — an old copy on an orphan
    /// page — keeps the larger: SQLite never lowers it).
    var sequenceByTable: [String: Int64] {
        Dictionary(sequences.values.map { ($0.name, $0.seq) } + orphanSequences.map { ($0.key, $0.value) }, uniquingKeysWith: { max($0, $1) })
    }

    /// The metadata row Core Data reads (`Z_VERSION` 1, else the lowest), decoded; nil when none
    /// was recovered or its plist does not decode to a dictionary.
    var storeMetadata: StoreMetadata? {
        // Z_VERSION 1 first (the row Core Data reads), then the others in order.
        for key in metadata.keys.sorted(by: { ($0 == 1 ? 0 : 1, $0) < ($1 == 1 ? 0 : 1, $1) }) {
            guard let row = metadata[key], let plist = row.plist, plist.count <= StoreMetadata.maximumPlistBytes,
                let value = try? BinaryPropertyListDecoder.decode(plist, limits: .storeContent), let dictionary = value.dictionary
            else { continue }
            return StoreMetadata(uuid: row.uuid, rowVersion: key, plist: dictionary)
        }
        return nil
    }

    /// The most a recovered model cache may inflate to be read: salvage's memory is bounded
    /// (Docs/SALVAGE.md, Bounds), and `inspect`'s 128 MiB (`ModelFileLoader
    /// .maximumInflatedModelBytes`) would let one hostile row take it past 150 MB. Real model
    /// caches inflate to a few MiB at most; one larger is not used (the version is told another
    /// way, and the new store's cache is left empty, as `create` leaves it).
    static let maximumInflatedModelCacheBytes = 16 << 20

    /// The model a recovered model cache holds, read within `maximumInflatedModelCacheBytes` and
    /// `PropertyListLimits.storeContent`.
    static func model(ofCache blob: Data) throws -> ManagedObjectModel {
        try ModelArchiveDecoder.decodeModelCache(compressed: blob, maximumInflatedBytes: maximumInflatedModelCacheBytes)
    }

    /// The entity hashes of the first model cache that decodes.
    var modelCacheHashes: [String: Data]? {
        for key in modelCaches.keys.sorted() {
            guard let blob = modelCaches[key], let model = try? Self.model(ofCache: blob) else { continue }
            return EntityVersionHasher.versionHashes(for: model)
        }
        return nil
    }

    /// The first recovered model cache whose model has exactly `hashes`.
    func modelCache(matching hashes: [String: Data]) -> Data? {
        for key in modelCaches.keys.sorted() {
            guard let blob = modelCaches[key], let model = try? Self.model(ofCache: blob),
                EntityVersionHasher.versionHashes(for: model) == hashes
            else { continue }
            return blob
        }
        return nil
    }
}

extension BookkeepingRows {
    /// Distinct rows read from `table`.
    func rowCount(_ table: Table) -> Int {
        switch table {
        case .metadata: return metadata.count
        case .primaryKey: return primaryKeys.count
        case .modelCache: return modelCaches.count
        case .sequence: return sequences.count
        }
    }
}
