import Foundation

extension SalvageReport {
    /// The report for people: what was read, then one line per table with what it came to.
    public func renderText() -> String {
        var out = TextTableWriter()
        let kind = mode == .coreData ? "Core Data store, version \"\(version ?? "?")\" (\(versionSource ?? "?"))" : "plain SQLite database"
        out.line("Salvaged \(store) into \(output) in \(String(format: "%.2f", seconds)) s")
        out.field("Output", kind)
        out.field("File", "\(file.size) bytes; \(file.pageCount) pages of \(file.pageSize) (page size from \(file.pageSizeSource)), "
            + "\(file.headerIntact ? "header intact" : "header unreadable"), \(file.textEncoding)")
        out.field("Pages", "\(pages.read) read, \(pages.damaged) damaged, \(pages.missing) missing; "
            + "\(pages.tableLeaf) table leaves, \(pages.tableInterior) interior, \(pages.indexLeaf + pages.indexInterior) index, "
            + "\(pages.overflow) overflow, \(pages.freelistTrunk + pages.freelistLeaf) free, \(pages.pointerMap) pointer map, "
            + "\(pages.zeroed) zeroed, \(pages.unknown) unrecognised")
        if let log = writeAheadLog {
            out.field("WAL", log.used
                ? "\(log.committedFrames) committed frames applied (\(log.pages) pages); \(log.framesInFile - log.committedFrames) frames ignored"
                : "not used: \(log.issue ?? "unknown reason")")
        }
        out.field("Schema", schemaSourceDescription)
        if let metadata {
            out.field("Metadata", "\(metadata.source) (UUID \(metadata.uuid), framework \(metadata.frameworkVersion)); "
                + "model cache \(metadata.modelCache); history tables \(metadata.includesPersistentHistory ? "yes" : "no")")
        }
        out.section("Tables")
        var rows = [["  table", "rows", "partial", "unreadable", "deleted", "duplicates", "dangling", "pages r/d/m", "identified by"]]
        for table in tables {
            let counts = table.rows
            let dangling = counts.danglingCleared + counts.danglingRowsDropped + counts.notFitting + counts.conflictsDropped
            let status: String
            switch table.disposition {
            case "recovered": status = identification(table)
            default: status = "\(table.disposition): \(table.reason ?? "")"
            }
            rows.append([
                "  " + table.name, "\(counts.recovered)", "\(counts.partial)", "\(counts.unreadable)", "\(counts.deleted)",
                "\(counts.duplicatesResolved)", "\(dangling)", "\(table.pages.read)/\(table.pages.damaged)/\(table.pages.missing)", status,
            ])
        }
        out.table(rows)
        out.line("  (dangling: values cleared, join rows dropped, rows not fitting their table or refused by a unique index)")
        out.section("Totals")
        out.field("Recovered", "\(totals.recovered) rows (\(totals.partial) partial: columns lost to a broken overflow chain are NULL); "
            + "\(rowsCopiedPageByPage) copied page by page, the rest through SQLite; "
            + "\(indexEntriesBuiltPageByPage) index entries built page by page")
        out.field("Not recovered", "\(totals.unreadable) unreadable, \(totals.notFitting) not fitting their table, "
            + "\(totals.conflictsDropped) refused by a unique index")
        out.field("Deleted", "\(totals.deleted) rows on free pages (deleted, recoverable; never mixed into live tables)")
        out.field("Resolved", "\(totals.duplicatesResolved) duplicate copies, \(totals.danglingCleared) dangling values cleared, "
            + "\(totals.danglingRowsDropped) join rows dropped, \(totals.valuesFixed) Z_ENT/Z_OPT values fixed")
        let lost = "\(lostAndFound.rows) live rows, \(lostAndFound.deletedRows) deleted rows"
        if !lostAndFound.tables.isEmpty {
            out.field("Lost and found", "\(lost) in \(lostAndFound.tables.joined(separator: ", "))")
        } else if mode == .coreData, lostAndFound.rows + lostAndFound.deletedRows > 0 {
            // Only Core Data mode leaves them out: the version has no table for them.
            out.field("Lost and found", "\(lost) of no known table (not written; salvage without --catalog to keep them)")
        } else {
            out.field("Lost and found", "\(lost) of no known table")
        }
        if !notes.isEmpty {
            out.section("Notes")
            for note in notes { out.line("  - \(note)") }
        }
        return out.text
    }

    private var schemaSourceDescription: String {
        switch schemaSource {
        case "sqlite_schema": return "sqlite_schema (page 1's tree)"
        case "recoveredSchemaPages": return "schema rows found on pages page 1 no longer reaches"
        case "catalogLayout": return "unreadable: tables identified by row shape against the version's layout"
        default: return "unreadable: rows kept in lost_and_found tables by column count"
        }
    }

    private func identification(_ table: TableSummary) -> String {
        var parts: [String] = []
        if table.identifiedBy.schemaTree > 0 { parts.append("tree from root \(table.rootPage.map(String.init) ?? "?") (\(table.identifiedBy.schemaTree))") }
        if table.identifiedBy.pointerMap > 0 { parts.append("pointer map (\(table.identifiedBy.pointerMap))") }
        if table.identifiedBy.recordShape > 0 { parts.append("row shape (\(table.identifiedBy.recordShape))") }
        return parts.isEmpty ? "no page found" : parts.joined(separator: ", ")
    }
}
