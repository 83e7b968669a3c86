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
                if let reason = summary.tablesLeftOut[table.name.uppercased()] {
                    entry.disposition = "skipped"
                    entry.reason = reason
                }
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
            indexEntriesBuiltPageByPage: indexEntriesBuiltPageByPage, metadata: summary.metadata, notes: notes + keptApartNote + damagedRootNotes + summary.notes, seconds: seconds, error: nil)
    }

    /// One note per table whose root page its walk could not read — zeroed, overwritten, cut off
    /// — with where its rows were found instead. The page counts in `tables[].pages.damaged` (or
    /// `missing`) already, like any page a tree leads to that does not parse; but the rows found
    /// on orphaned leaves then read as an intact table's, and a table whose root was its only
    /// leaf reads as an empty one. Worked out once per table, from what the passes recorded.
    private var damagedRootNotes: [String] {
        tables.indices.compactMap { index in
            guard let root = tables[index].rootPage, root >= 1, !treePages.contains(root), !overflowPages.contains(root) else { return nil }
            let state: String
            if root > source.pageCount {
                state = "is past the database's last page (\(source.pageCount))"
            } else if root > capacity {
                state = "is missing (past the end of the file)"
            } else if zeroedPages.contains(root) {
                state = "is zeroed"
            } else if unknownPages.contains(root) {
                state = "is no b-tree page (overwritten)"
            } else {
                return nil  // a page of another kind or tree: the schema's root number is what is damaged
            }
            let tally = tallies.indices.contains(index) ? tallies[index] : TableTally()
            let found = tally.byPointerMap + tally.byShape
            let rest = found == 0
                ? "no leaf of its rows was found without it"
                : "\(found) leaf page\(found == 1 ? "" : "s") of its rows found without it (by pointer map \(tally.byPointerMap), by row shape \(tally.byShape))"
            return "table \(tables[index].name): its root page \(root) \(state); \(rest)"
        }
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
            entities: result?.entities ?? [], requiredValuesMissing: result?.requiredValuesMissing ?? [])
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
