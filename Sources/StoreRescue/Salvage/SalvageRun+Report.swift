import Foundation

/// The report of a finished run.
extension SalvageRun {
    func report(summary: SalvageOutputSummary, seconds: Double) -> SalvageReport {
        let results = Dictionary(summary.tables.map { ($0.key.uppercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        var tableSummaries: [SalvageReport.TableSummary] = []
        for (index, table) in tables.enumerated() {
            var tally = tallies.indices.contains(index) ? tallies[index] : TableTally()
            if let pages = bookkeepingPages[index] { tally.addPages(pages) }
            let result = results[table.name.uppercased()]
            var entry = Self.tableSummary(name: table.name, rootPage: table.rootPage, tally: tally, result: result)
            switch roles.indices.contains(index) ? roles[index] : .skip(reason: "not read") {
            case .write(let route):
                entry.rows.valuesFixed = valuesFixed[route.target] ?? 0
            case .collect(let kind):
                entry.disposition = "bookkeeping"
                entry.reason = kind == .sequence
                    ? "SQLite's own: its entries (the last rowid of each AUTOINCREMENT table) were written to the new file's sqlite_sequence"
                    : "rebuilt for the version; its rows were read for the metadata, Z_MAX and the model cache"
                entry.rows.recovered = bookkeeping.rowCount(kind)
            case .skip(let reason):
                entry.disposition = "skipped"
                entry.reason = reason
            }
            tableSummaries.append(entry)
        }
        // Core Data mode: the version's tables the damaged schema did not have are still written.
        let listed = Set(tables.map { $0.name.uppercased() })
        for (name, result) in summary.tables.sorted(by: { $0.key < $1.key }) where !listed.contains(name.uppercased()) && options.catalog != nil {
            var entry = Self.tableSummary(name: name, rootPage: nil, tally: TableTally(), result: result)
            entry.reason = "not in the damaged store's schema; written empty"
            tableSummaries.append(entry)
        }
        let totals = tableSummaries.filter { $0.disposition == "recovered" }.map(\.rows)
            .reduce(SalvageReport.RowCounts(unreadable: lost.unreadable, deleted: lost.deleted), +)
        let lostAndFound = SalvageReport.LostAndFound(
            rows: lost.rows, rowsUnreadable: lost.unreadable, deletedRows: lost.deleted, tables: looseTableNames)
        return SalvageReport(
            store: storePath, output: outputPath, mode: options.catalog == nil ? .plain : .coreData, version: resolvedVersion?.name,
            versionSource: resolvedVersion?.source, schemaSource: schemaSource, file: fileSummary, writeAheadLog: writeAheadLogSummary,
            pages: pageSummary(tables: tableSummaries), tables: tableSummaries, lostAndFound: lostAndFound, totals: totals,
            rowsCopiedPageByPage: rowsCopiedPageByPage,
            indexEntriesBuiltPageByPage: indexEntriesBuiltPageByPage, metadata: summary.metadata, notes: notes + keptApartNote + summary.notes, seconds: seconds, error: nil)
    }

    private static func tableSummary(
        name: String, rootPage: UInt32?, tally: TableTally, result: SalvageOutputSummary.TableResult?
    ) -> SalvageReport.TableSummary {
        SalvageReport.TableSummary(
            name: name, disposition: "recovered", reason: nil, rootPage: rootPage.map(Int.init),
            identifiedBy: .init(schemaTree: tally.bySchema, pointerMap: tally.byPointerMap, recordShape: tally.byShape),
            rows: SalvageReport.RowCounts(
                recovered: result?.rows ?? 0, partial: tally.rowsPartial, unreadable: tally.rowsUnreadable, notFitting: tally.rowsNotFitting,
                deleted: tally.rowsDeleted, duplicatesResolved: tally.duplicates, conflictsDropped: tally.conflicts,
                danglingCleared: result?.danglingCleared ?? 0, danglingRowsDropped: result?.danglingRowsDropped ?? 0),
            pages: .init(read: tally.pagesRead, damaged: tally.pagesDamaged, missing: tally.pagesMissing),
            entities: result?.entities ?? [])
    }

    private var schemaSource: String {
        if schemaFromTree { return "sqlite_schema" }
        if !schemaEntries.isEmpty { return "recoveredSchemaPages" }
        return options.catalog != nil ? "catalogLayout" : "none"
    }

    private var fileSummary: SalvageReport.FileSummary {
        SalvageReport.FileSummary(
            size: source.fileSize, pageSize: geometry.pageSize, pageSizeSource: geometry.pageSizeSource.rawValue,
            reservedBytes: geometry.reservedBytes, textEncoding: geometry.textEncoding.name, headerIntact: geometry.isHeaderTrusted,
            pageCount: Int(source.pageCount), availablePages: Int(capacity), autoVacuum: pointerMap != nil ? true : geometry.isAutoVacuum)
    }

    private var writeAheadLogSummary: SalvageReport.WriteAheadLogSummary? {
        let path = storePath + "-wal"
        if let log = source.writeAheadLog {
            return .init(
                path: path, used: true, framesInFile: log.framesInFile, validFrames: log.validFrames, committedFrames: log.committedFrames,
                pages: log.frames.count, issue: nil)
        }
        guard let issue = source.writeAheadLogIssue else { return nil }
        return .init(path: path, used: false, framesInFile: 0, validFrames: 0, committedFrames: 0, pages: 0, issue: issue)
    }

    /// Page kinds over the whole file; zeroed and unrecognised pages that no overflow chain
    /// explained are damage.
    private func pageSummary(tables: [SalvageReport.TableSummary]) -> SalvageReport.PageSummary {
        var zeroed = 0, unknown = 0, maps = 0, countedByTrees = 0
        for page in UInt32(1)...max(1, capacity) where page <= capacity {
            if pointerMap?.isMapPage(page) == true { maps += 1 }
            guard !overflowPages.contains(page) else { continue }
            if zeroedPages.contains(page) { zeroed += 1 }
            if unknownPages.contains(page) { unknown += 1 }
            if unreadableTreePages.contains(page), zeroedPages.contains(page) || unknownPages.contains(page) { countedByTrees += 1 }
        }
        let tableDamage = tables.reduce(0) { $0 + $1.pages.damaged }
        return SalvageReport.PageSummary(
            total: Int(source.pageCount), read: Int(capacity) - pageKinds.readFailures,
            missing: Int(source.pageCount) - Int(capacity) + pageKinds.readFailures,
            // A zeroed or unknown page a tree led to is that tree's damage already: once.
            damaged: tableDamage + pagesDamagedOutsideTables + zeroed + unknown - countedByTrees,
            tableLeaf: pageKinds.tableLeaf, tableInterior: pageKinds.tableInterior, indexLeaf: pageKinds.indexLeaf,
            indexInterior: pageKinds.indexInterior, overflow: overflowPages.count, freelistTrunk: freeTrunks.count,
            freelistLeaf: freeLeaves.count, pointerMap: maps, zeroed: zeroed, unknown: unknown)
    }
}
