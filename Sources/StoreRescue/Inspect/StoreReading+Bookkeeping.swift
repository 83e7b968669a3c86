import Foundation

extension StoreReading {
    // MARK: - Tables

    func tables(_ schema: PhysicalSchema) throws -> [InspectionReport.TableSummary] {
        try schema.tables.map { table in
            var rowCount: Int64?
            if options.countsRows {
                rowCount = try connection.scalar("SELECT count(*) FROM \(table.name.quotedSQLIdentifier)")?.int64
            }
            return InspectionReport.TableSummary(
                name: table.name, category: table.category,
                columns: table.columns.map { InspectionReport.ColumnSummary(name: $0.name, type: $0.type) },
                rowCount: rowCount)
        }
    }

    // MARK: - Z_METADATA

    mutating func readMetadata(_ schema: PhysicalSchema) throws -> StoreMetadata? {
        switch try StoreMetadata.read(from: connection) {
        case .absent(let reason):
            findings.append(Finding(.error, .noMetadata, "\(reason): the store's version cannot be known from its metadata"))
            return nil
        case .unreadable(let uuid, let reason):
            let code: Finding.Code = reason.contains("NULL") ? .noMetadata : .metadataUnreadable
            findings.append(Finding(.error, code, "\(reason) (store UUID \(uuid ?? "unknown")): the version hashes are lost"))
            return nil
        case .read(let metadata, let rowCount):
            if rowCount > 1 {
                findings.append(Finding(.warning, .metadataExtraRows, "Z_METADATA has \(rowCount) rows; Core Data writes one"))
            }
            noteMetadataGaps(metadata)
            return metadata
        }
    }

    private mutating func noteMetadataGaps(_ metadata: StoreMetadata) {
        if let raw = metadata.plist[StoreMetadata.Key.versionHashes]?.dictionary {
            let bad = raw.filter { $0.value.data?.count != 32 }.keys.sorted()
            if !bad.isEmpty {
                findings.append(Finding(
                    .error, .metadataMalformedHashes,
                    "NSStoreModelVersionHashes has entries that are not 32-byte hashes: \(bad.joined(separator: ", "))"))
            }
        } else {
            findings.append(Finding(.error, .noVersionHashes, "the metadata has no NSStoreModelVersionHashes: no model version can be matched"))
        }
        let framework = metadata.frameworkVersion.map { "framework \($0)" } ?? "an unknown framework version"
        if metadata.versionChecksum == nil {
            findings.append(Finding(
                .warning, .noVersionChecksum,
                "no NSStoreModelVersionChecksumKey (written by \(framework)): staged migration will not recognise this store's version (error 134504) until it is stamped"))
        }
        if metadata.hashesDigest == nil {
            findings.append(Finding(.info, .noHashesDigest, "no NSStoreModelVersionHashesDigest (written by \(framework))"))
        }
        let identifiers = metadata.versionIdentifiers ?? []
        if identifiers.allSatisfy(\.isEmpty) {
            findings.append(Finding(
                .info, .unversionedIdentifiers,
                "the model version identifiers are empty: the store was written by an unversioned schema"))
        }
    }

    static func summary(_ metadata: StoreMetadata) -> InspectionReport.MetadataSummary {
        InspectionReport.MetadataSummary(
            uuid: metadata.uuid, storeType: metadata.storeType, frameworkVersion: metadata.frameworkVersion,
            maximumFrameworkVersion: metadata.maximumFrameworkVersion, versionIdentifiers: metadata.versionIdentifiers,
            versionHashes: metadata.versionHashes?.mapValues { $0.base64EncodedString() },
            versionHashesVersion: metadata.versionHashesVersion, hashesDigest: metadata.hashesDigest,
            versionChecksum: metadata.versionChecksum, autoVacuumLevel: metadata.autoVacuumLevel,
            otherKeys: metadata.plist.filter { !StoreMetadata.frameworkKeys.contains($0.key) })
    }

    // MARK: - Z_PRIMARYKEY

    mutating func entities(_ entries: [PrimaryKeyEntry], schema: PhysicalSchema) throws -> [InspectionReport.EntitySummary] {
        var largestKeyByTable: [String: Int64?] = [:]
        var result: [InspectionReport.EntitySummary] = []
        // Looked up by name once per entity: a linear search each time made a store of 4,000
        // entities take seconds (a review: 6,000 entities, 6.2 s).
        let tables = Dictionary(schema.tables.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        let byNumber = Dictionary(entries.map { ($0.ent, $0) }, uniquingKeysWith: { first, _ in first })
        for entry in entries {
            let root = PrimaryKeyEntry.root(of: entry, byNumber: byNumber)
            let table = tables[PrimaryKeyEntry.tableName(forRoot: root).lowercased()]
            var summary = InspectionReport.EntitySummary(
                name: entry.name, ent: entry.ent, superEnt: entry.superEnt, max: entry.max, table: table?.name)
            guard let table else {
                if entry.ent == root.ent {
                    findings.append(Finding(
                        .warning, .entityTableMissing,
                        "entity \(entry.name) (Z_ENT \(entry.ent)) has no table \(PrimaryKeyEntry.tableName(forRoot: root))"))
                }
                result.append(summary)
                continue
            }
            let quoted = table.name.quotedSQLIdentifier
            let hasPK = table.columns.contains { $0.name == "Z_PK" }
            if entry.ent == root.ent, hasPK {
                if largestKeyByTable[table.name] == nil {
                    largestKeyByTable[table.name] = try connection.scalar("SELECT max(Z_PK) FROM \(quoted)")?.int64
                }
                let largest = largestKeyByTable[table.name] ?? nil
                summary.largestPrimaryKey = largest
                if let largest, largest > entry.max {
                    findings.append(Finding(
                        .error, .zMaxBehind,
                        "Z_MAX of \(entry.name) is \(entry.max) but \(table.name) already has Z_PK \(largest): the next inserts would collide with existing rows"))
                }
            }
            if options.countsRows, table.columns.contains(where: { $0.name == "Z_ENT" }) {
                summary.rowCount = try connection.scalar("SELECT count(*) FROM \(quoted) WHERE Z_ENT = ?", [.integer(entry.ent)])?.int64
            }
            result.append(summary)
        }
        return result
    }

    /// The entity names of the metadata hashes against those of `Z_PRIMARYKEY` (history aside).
    mutating func compareEntityNames(metadata: StoreMetadata?, entries: [PrimaryKeyEntry]) {
        guard let hashes = metadata?.versionHashes else { return }
        let numbered = Set(entries.filter { !$0.isHistoryEntity }.map(\.name))
        let hashed = Set(hashes.keys)
        guard numbered != hashed else { return }
        var parts: [String] = []
        let onlyHashed = hashed.subtracting(numbered).sorted()
        let onlyNumbered = numbered.subtracting(hashed).sorted()
        if !onlyHashed.isEmpty { parts.append("in the metadata hashes only: \(onlyHashed.joined(separator: ", "))") }
        if !onlyNumbered.isEmpty { parts.append("in Z_PRIMARYKEY only: \(onlyNumbered.joined(separator: ", "))") }
        findings.append(Finding(.error, .entitiesDisagree, "the metadata and Z_PRIMARYKEY name different entities: " + parts.joined(separator: "; ")))
    }

    mutating func noteSchemaExtras(_ schema: PhysicalSchema) {
        if !schema.triggers.isEmpty || !schema.views.isEmpty {
            let names = (schema.triggers.map { "trigger \($0.name)" } + schema.views.map { "view \($0.name)" })
            findings.append(Finding(
                .info, .unexpectedSchemaObjects,
                "schema objects Core Data rarely writes: \(names.prefix(10).joined(separator: ", "))\(names.count > 10 ? ", …" : "") (never run by this tool)"))
        }
        if schema.tables.contains(where: { $0.category == .cloudKit }) {
            findings.append(Finding(.info, .cloudKitMirroring, "CloudKit mirroring tables (ANSCK*) are present: entity renumbering must rewrite them"))
        }
        if schema.tables.contains(where: { $0.category == .history }) {
            findings.append(Finding(.info, .persistentHistory, "persistent history tables are present (ATRANSACTION, ACHANGE)"))
        }
    }
}
