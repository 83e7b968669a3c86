import Foundation

/// Options for `StoreInspector`. The zero value does the cheap, schema-proportional read.
public struct InspectOptions: Sendable, Equatable {
    /// Count rows per entity and per table (work proportional to the data).
    public var countsRows = false
    /// Run `PRAGMA quick_check` (reads every page).
    public var checksIntegrity = false
    public var open = StoreOpenOptions()

    public init(countsRows: Bool = false, checksIntegrity: Bool = false, open: StoreOpenOptions = StoreOpenOptions()) {
        self.countsRows = countsRows
        self.checksIntegrity = checksIntegrity
        self.open = open
    }
}

/// The forensic reader: opens any input without altering it and says exactly what it is.
///
/// ```swift
/// let report = StoreInspector.inspect(path: "default.store", options: InspectOptions(countsRows: true))
/// print(report.kind, report.findings)
/// ```
public enum StoreInspector {
    /// Inspects the input at `path`. Never throws: an input that cannot be read gives a report
    /// whose `kind` and `error` say why.
    public static func inspect(path: String, options: InspectOptions = InspectOptions()) -> InspectionReport {
        let sidecars = StoreFileSet.discover(mainPath: path).presentSuffixes
        do {
            // An app that writes the store while it is read in place: read again, from a copy.
            return try OpenedStore.readingConsistently(path: path, options: options.open) { inspect(store: $0, options: options) }
        } catch let error as StoreAccessError {
            // An error that does not say what the input is (the private copy, the descriptor
            // limit) is the environment's: `notRead`, never `unreadable` (review rv10, TMPDIR).
            return .rejected(path: path, error: error, kind: error.kind ?? .notRead, sidecars: sidecars)
        } catch let error as SQLitePathTooLongError {
            // The private copy's folder ($TMPDIR) is past SQLite's path limit: not read (kind),
            // the error, and the exit status (73), are the folder's, not the store's.
            return .rejected(path: path, error: error, kind: .notRead, sidecars: sidecars)
        } catch {
            let wrapped = StoreAccessError.rejected(path: path, kind: .unreadable, reason: "\(error)")
            return .rejected(path: path, error: wrapped, kind: .unreadable, sidecars: sidecars)
        }
    }

    /// Inspects a store that is already open (so a caller can go on querying it afterwards).
    public static func inspect(store: OpenedStore, options: InspectOptions = InspectOptions()) -> InspectionReport {
        read(store: store, options: options).report
    }

    /// Reads a store that is already open: the report `inspect` prints, plus the domain values
    /// it was made from (schema, metadata, model cache, `Z_PRIMARYKEY`), for callers that go on
    /// to match or migrate the store without reading it twice.
    public static func read(store: OpenedStore, options: InspectOptions = InspectOptions()) -> StoreReadout {
        let path = store.probe.path
        let sidecars = store.probe.files.presentSuffixes
        var reading = StoreReading(store: store, options: options)
        do {
            let report = try reading.report()
            return StoreReadout(
                report: report, schema: reading.schema, metadata: reading.metadata, model: reading.cachedModel,
                modelCacheBytes: reading.cachedModelBytes, primaryKeys: reading.primaryKeys)
        } catch let error as SQLiteError {
            let kind: StoreKind = error.isCorruption ? .damaged : .unreadable
            let wrapped = StoreAccessError.rejected(path: path, kind: kind, reason: "SQLite failed while reading it: \(error)")
            return StoreReadout(rejected: .rejected(path: path, error: wrapped, kind: kind, sidecars: sidecars))
        } catch {
            let wrapped = StoreAccessError.rejected(path: path, kind: .damaged, reason: "\(error)")
            return StoreReadout(rejected: .rejected(path: path, error: wrapped, kind: .damaged, sidecars: sidecars))
        }
    }
}

/// One inspection in progress: reads each part of the store and collects findings.
struct StoreReading {
    let store: OpenedStore
    let options: InspectOptions
    var findings: [Finding] = []
    /// What was read, kept for `StoreReadout`.
    var schema: PhysicalSchema?
    var metadata: StoreMetadata?
    var primaryKeys: [PrimaryKeyEntry] = []
    var cachedModel: ManagedObjectModel?
    var cachedModelBytes: Data?

    init(store: OpenedStore, options: InspectOptions) {
        self.store = store
        self.options = options
    }

    var connection: SQLiteConnection { store.connection }
    var path: String { store.probe.path }

    mutating func report() throws -> InspectionReport {
        let schema = try PhysicalSchema.read(from: connection)
        self.schema = schema
        noteSidecars()
        let isCoreData = schema.table(named: "Z_METADATA") != nil && schema.table(named: "Z_PRIMARYKEY") != nil
        var report = InspectionReport(
            path: path, kind: isCoreData ? .coreDataStore : .sqliteDatabase, accessMethod: store.accessMethod,
            sidecars: store.probe.files.presentSuffixes, file: fileSummary(), metadata: nil, model: nil,
            entities: [], tables: [], indexes: schema.indexes, triggers: schema.triggers, views: schema.views,
            integrity: nil, findings: [], error: nil)
        if options.checksIntegrity {
            report.integrity = try integrity()
            if let integrity = report.integrity, !integrity.ok {
                report.kind = .damaged
                findings.append(Finding(
                    .error, .integrityFailure,
                    "quick_check failed: " + integrity.messages.prefix(5).joined(separator: "; ")
                        + (integrity.messages.count > 5 ? " (and \(integrity.messages.count - 5) more)" : "")))
            }
        }
        report.tables = try tables(schema)
        if isCoreData {
            let metadata = try readMetadata(schema)
            self.metadata = metadata
            report.metadata = metadata.map(Self.summary)
            let entries = try PrimaryKeyEntry.readAll(from: connection)
            primaryKeys = entries
            report.entities = try entities(entries, schema: schema)
            report.model = try readModel(schema, metadata: metadata)
            compareEntityNames(metadata: metadata, entries: entries)
            noteSchemaExtras(schema)
        } else {
            let hasAny = schema.table(named: "Z_METADATA") != nil || schema.table(named: "Z_PRIMARYKEY") != nil
            findings.append(Finding(
                hasAny ? .error : .info, hasAny ? .noMetadata : .notCoreData,
                hasAny
                    ? "only one of Z_METADATA and Z_PRIMARYKEY exists: a Core Data store with bookkeeping tables missing"
                    : "an SQLite database without Core Data's bookkeeping tables (Z_METADATA, Z_PRIMARYKEY)"))
        }
        report.findings = findings.sorted { $0.severity > $1.severity }
        return report
    }

    // MARK: - File and sidecars

    private func fileSummary() -> InspectionReport.FileSummary? {
        guard let header = store.probe.header else { return nil }
        let pageCount = (try? connection.scalar("PRAGMA page_count"))?.flatMap(\.int64)
        return InspectionReport.FileSummary(
            size: store.probe.fileSize, pageSize: header.pageSize, pageCount: pageCount,
            journalMode: header.journalMode, autoVacuum: header.autoVacuum, textEncoding: header.textEncodingName,
            userVersion: header.userVersion, lastWriterSQLiteVersion: header.lastWriterVersion)
    }

    private mutating func noteSidecars() {
        let files = store.probe.files
        if let wal = files.sidecar("-wal"), wal.holdsData {
            // What SQLite would apply, not the file's size: a -wal can be longer than its valid
            // frames (a sparse or reused file), or hold frames a checkpoint already copied.
            let used = PrivateCopier.usedLength(ofWAL: wal.path) ?? wal.size
            let frames = used > Int64(WriteAheadLog.headerSize) ? "\(used) bytes of committed frames SQLite applies when it opens the store (a checkpoint may already have copied some into the main file)" : nil
            if let frames {
                findings.append(Finding(
                    .warning, .uncheckpointedWAL,
                    "the -wal holds \(frames)\(used < wal.size ? "; the other \(wal.size - used) of its \(wal.size) bytes are no transaction SQLite would apply" : ""); read through a private copy. Copy, move and back up the store together with its -wal"))
            } else if PrivateCopier.walHasUnreadableFrames(wal.path) {
                findings.append(Finding(
                    .warning, .uncheckpointedWAL,
                    "the -wal (\(wal.size) bytes) looks like a log but SQLite applies none of it (its header or first frame does not check out): transactions in it may be lost to SQLite. Keep it with the store; storerescue salvage reads what it can"))
            } else {
                findings.append(Finding(
                    .info, .orphanSidecar,
                    "the -wal (\(wal.size) bytes) holds no committed frame SQLite would apply: nothing in it is missing from the main file"))
            }
        }
        if let journal = files.sidecar("-journal"), journal.holdsData {
            findings.append(Finding(
                .warning, .hotJournal,
                "a hot -journal (\(journal.size) bytes) shows an interrupted write; the store was read as SQLite would roll it back, on a private copy"))
        }
        if files.sidecar("-shm") != nil && files.sidecar("-wal") == nil {
            findings.append(Finding(.info, .orphanSidecar, "a -shm without a -wal: harmless, SQLite rebuilds it"))
        }
    }

    private func integrity() throws -> InspectionReport.IntegritySummary {
        let rows = try connection.rows("PRAGMA quick_check(100)")
        let messages = rows.compactMap { $0.first?.string }
        return InspectionReport.IntegritySummary(check: "quick_check", ok: messages == ["ok"], messages: messages == ["ok"] ? [] : messages)
    }
}
