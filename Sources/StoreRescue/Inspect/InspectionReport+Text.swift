import Foundation

extension InspectionReport {
    /// The report for people: sections with aligned columns, nothing that is not information.
    public func renderText() -> String {
        var out = TextTableWriter()
        out.line("\(path)")
        out.field("Kind", kindDescription)
        if !sidecars.isEmpty { out.field("Sidecars", sidecars.joined(separator: " ")) }
        if let file {
            let pages = file.pageCount.map { "\($0) pages" } ?? "? pages"
            out.field("File", "\(file.size) bytes, \(pages) of \(file.pageSize), \(file.journalMode) journal, auto-vacuum \(file.autoVacuum), \(file.textEncoding)")
            out.field("Last writer", "SQLite \(file.lastWriterSQLiteVersion)")
        }
        if let error {
            out.blank()
            out.error(error)
            return out.text
        }
        if let metadata { renderMetadata(metadata, into: &out) }
        if let model { renderModel(model, into: &out) }
        if !entities.isEmpty { renderEntities(into: &out) }
        if !tables.isEmpty { renderTables(into: &out) }
        if let integrity {
            out.section("Integrity")
            out.field(integrity.check, integrity.ok ? "ok" : "FAILED")
            // SQLite writes one finding over several lines (`*** in database main ***`, then
            // each problem): a line each, as SQLite wrote them, each still one line.
            for message in integrity.messages.prefix(20) {
                for part in message.split(separator: "\n", omittingEmptySubsequences: true) { out.line("  \(part)") }
            }
        }
        out.section("Findings")
        if findings.isEmpty { out.line("  none") }
        out.table(findings.map { ["  " + $0.severity.rawValue, $0.code, $0.message] })
        return out.text
    }

    private var kindDescription: String {
        let base: String
        switch kind {
        case .coreDataStore: base = "Core Data / SwiftData store"
        case .sqliteDatabase: base = "SQLite database (not Core Data)"
        default: base = kind.rawValue
        }
        switch accessMethod {
        case .privateCopy?: return base + " (read through a private copy with its sidecars)"
        case .immutableOriginal?: return base + " (read in place, immutable)"
        case nil: return base
        }
    }

    private func renderMetadata(_ metadata: MetadataSummary, into out: inout TextTableWriter) {
        out.section("Metadata")
        out.field("UUID", metadata.uuid ?? "—")
        let framework = metadata.frameworkVersion.map(String.init) ?? "—"
        let maximum = metadata.maximumFrameworkVersion.map { " (maximum \($0))" } ?? ""
        out.field("Framework", framework + maximum)
        out.field("Identifiers", metadata.versionIdentifiers.map { "[" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]" } ?? "—")
        out.field("Hashes digest", metadata.hashesDigest ?? "— (absent)")
        out.field("Checksum", metadata.versionChecksum ?? "— (absent)")
        if !metadata.otherKeys.isEmpty { out.field("Other keys", metadata.otherKeys.keys.sorted().joined(separator: ", ")) }
        if let hashes = metadata.versionHashes, model == nil {
            out.table(hashes.keys.sorted().map { ["  " + $0, hashes[$0] ?? ""] })
        }
    }

    private func renderModel(_ model: ModelSummary, into out: inout TextTableWriter) {
        out.section("Model cache")
        let verdict = model.hashesMatchMetadata ? "match the metadata" : "DO NOT match the metadata"
        out.field("Entities", "\(model.entities.count); recomputed hashes \(verdict)")
        out.field("Checksum", model.computedVersionChecksum)
        let stored = metadata?.versionHashes ?? [:]
        var rows = [["  entity", "parent", "attrs", "rels", "version hash", ""]]
        for entity in model.entities {
            let mark = stored[entity.name] == entity.versionHash ? "=" : (stored[entity.name] == nil ? "not stored" : "DIFFERS")
            rows.append([
                "  " + entity.name + (entity.isAbstract ? " (abstract)" : ""), entity.superentity ?? "",
                "\(entity.attributes.count)", "\(entity.relationships.count)", entity.versionHash, mark,
            ])
        }
        out.table(rows)
    }

    private func renderEntities(into out: inout TextTableWriter) {
        out.section("Entities (Z_PRIMARYKEY)")
        let counts = entities.contains { $0.rowCount != nil }
        var rows = [["  Z_ENT", "name", "super", "Z_MAX", "max Z_PK", "table"] + (counts ? ["rows"] : [])]
        for e in entities {
            rows.append(["  \(e.ent)", e.name, "\(e.superEnt)", "\(e.max)", e.largestPrimaryKey.map(String.init) ?? "", e.table ?? "(none)"]
                + (counts ? [e.rowCount.map(String.init) ?? ""] : []))
        }
        out.table(rows)
    }

    private func renderTables(into out: inout TextTableWriter) {
        out.section("Tables")
        let counts = tables.contains { $0.rowCount != nil }
        var rows = [["  name", "category", "columns"] + (counts ? ["rows"] : [])]
        for t in tables {
            rows.append(["  " + t.name, t.category.rawValue, "\(t.columns.count)"] + (counts ? [t.rowCount.map(String.init) ?? ""] : []))
        }
        out.table(rows)
        let explicit = indexes.filter(\.isExplicit).count
        out.field("Indexes", "\(explicit) explicit, \(indexes.count - explicit) automatic; triggers \(triggers.count), views \(views.count)")
    }
}

/// Accumulates aligned text: labelled fields, section headings and column-aligned tables.
///
/// Every line, field, heading and cell is one line of the report whatever it holds: a line feed,
/// carriage return or tab in it (a file, table or entity name) is written as `\u{…}`
/// (`TerminalText.oneLine`), so a value cannot start a line, or a forged section, of its own.
struct TextTableWriter {
    private(set) var text = ""

    mutating func line(_ s: String) { text += TerminalText.oneLine(s) + "\n" }

    /// `Error: <message>` and `Try: <hint>`: how every report shows the error that stopped it.
    mutating func error(_ summary: ErrorSummary) {
        line("Error: \(summary.message)")
        if let hint = summary.hint { line("Try: \(hint)") }
    }
    mutating func blank() { text += "\n" }

    mutating func section(_ title: String) {
        text += "\n" + TerminalText.oneLine(title) + "\n"
    }

    mutating func field(_ label: String, _ value: String) {
        line("  " + label.padding(toLength: max(16, label.count + 1), withPad: " ", startingAt: 0) + value)
    }

    /// Pads every column but the last to its widest cell. Cells are made one line and capped first
    /// (`TerminalText.capped`): one hostile name a million characters long must not pad every
    /// row of the table to its width.
    mutating func table(_ rows: [[String]]) {
        let rows = rows.map { $0.map { TerminalText.capped(TerminalText.oneLine($0)) } }
        guard let columns = rows.map(\.count).max() else { return }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        for row in rows {
            let cells = row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }
            line(cells.joined(separator: "  "))
        }
    }
}
