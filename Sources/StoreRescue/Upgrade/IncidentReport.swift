import Foundation

/// What `upgrade --on-failure clean` did with a store it could not save, written as
/// `incident.json` and `incident.txt` in the quarantine folder and embedded in the run's report
/// (`fallback`): what failed, where the original, the backup and the salvage are, the rows
/// salvaged and lost per entity, and the exact commands that put the original back.
public struct IncidentReport: Sendable, Encodable, Equatable {
    /// One file of the original store set, as moved into the quarantine.
    public struct QuarantinedFile: Sendable, Encodable, Equatable {
        public var originalPath: String
        public var path: String
        public var size: Int64
    }

    /// The clean store now at the store's path.
    public struct CleanStore: Sendable, Encodable, Equatable {
        public var path: String
        public var version: String
        public var uuid: String
        /// True when the old store's UUID could be read and was kept.
        public var uuidKept: Bool
        /// `salvaged` (rows carried from the old store) or `empty`.
        public var content: String
    }

    /// What became of one entity's rows (named as in the old store's version).
    public struct EntityOutcome: Sendable, Encodable, Equatable {
        public var entity: String
        /// Rows the old store had, when it could be counted (null for a store SQLite cannot read).
        @NullEncoded public var rowsInStore: Int64?
        /// Rows salvage could read.
        public var rowsSalvaged: Int64
        /// Rows now in the clean store.
        public var rowsInCleanStore: Int64
        /// Rows in the store (or salvaged, when it could not be counted) not in the clean store.
        public var rowsNotCarried: Int64
        /// `clean store`, `salvage database` (entity kept out: `reason`), `discarded by the plan`.
        public var keptIn: String
        @NullEncoded public var reason: String?
    }

    /// `pending` while the store is being swapped; `complete` once the clean store is in place.
    public var state: String
    public var store: String
    public var createdAt: String
    /// What made the store unsaveable.
    public var reasons: [MigrationRefusal]
    public var quarantine: String
    public var quarantinedFiles: [QuarantinedFile]
    /// The backup taken before anything moved (`.gz`, or a raw copy's folder).
    public var backup: String
    public var backupKind: String
    @NullEncoded public var cleanStore: CleanStore?
    /// The plain salvage database (every readable row of every table, as found), when written.
    @NullEncoded public var salvageDatabase: String?
    /// Rows salvage could not decode at all (no entity can be told for them).
    public var rowsUnreadable: Int64
    public var entities: [EntityOutcome]
    /// The command that puts the original store back (from the backup).
    public var restoreCommand: String
    /// The same by hand, from the quarantine (moves only).
    public var restoreByHand: [String]
    public var notes: [String]

    /// The incident as people read it (also `incident.txt`).
    /// The first paragraph of `incident.txt` while the incident is not complete.
    static func stateLine(_ state: String) -> String? {
        switch state {
        case "pending":
            return "State: pending. This was written before the store was swapped; a run stopped there leaves it so, and the next run with the same backup folder finishes or undoes the swap and says so."
        case "abandoned":
            return "State: abandoned. The swap did not finish and a later run undid it: the store was not replaced by a clean one (what is below was the plan). The quarantine and the backup are kept."
        default:
            return nil
        }
    }

    public func renderText() -> String {
        var lines: [String] = []
        if let line = Self.stateLine(state) { lines += [line, ""] }
        lines.append("Incident: \(store) could not be saved and fell back to a clean store (\(createdAt)).")
        lines.append("")
        lines.append("Why:")
        for reason in reasons {
            let code = reason.coreDataErrorCode.map { " [\($0)]" } ?? ""
            lines.append("  - \(reason.message)\(code)")
            if !reason.remedy.isEmpty { lines.append("    what to do: \(reason.remedy)") }
        }
        lines.append("")
        lines.append("Original store (moved, never deleted): \(quarantine)")
        for file in quarantinedFiles { lines.append("  \(file.path)  (\(file.size) bytes, was \(file.originalPath))") }
        lines.append("Backup taken first (\(backupKind)): \(backup)")
        if let salvageDatabase { lines.append("Salvage database (every readable row, as found): \(salvageDatabase)") }
        if let cleanStore {
            lines.append("Clean store at \(cleanStore.path): \(cleanStore.version), UUID \(cleanStore.uuid)\(cleanStore.uuidKept ? " (kept)" : " (new)"), \(cleanStore.content)")
        }
        if !entities.isEmpty {
            lines.append("")
            lines.append("Rows per entity (in store / salvaged / in the clean store / not carried):")
            for entity in entities {
                let inStore = entity.rowsInStore.map(String.init) ?? "?"
                var line = "  \(entity.entity): \(inStore) / \(entity.rowsSalvaged) / \(entity.rowsInCleanStore) / \(entity.rowsNotCarried) — \(entity.keptIn)"
                if let reason = entity.reason { line += " (\(reason))" }
                lines.append(line)
            }
        }
        if rowsUnreadable > 0 { lines.append("Rows salvage could not decode: \(rowsUnreadable)") }
        for note in notes { lines.append("Note: \(note)") }
        lines.append("")
        lines.append("To put the original back:")
        lines.append("  \(restoreCommand)")
        lines.append("or by hand, with the app closed:")
        for command in restoreByHand { lines.append("  \(command)") }
        if ([restoreCommand] + restoreByHand).contains(where: { $0.unicodeScalars.contains(where: TerminalText.isControl) }) {
            // Written here as \u{…}, such a path names no file: the command that works is the
            // JSON's, exact (review rv11: the restore printed here looked for `app\u{A}x/…`).
            lines.append("A path above holds a control character, written as \\u{…}: these commands would not find it.")
            lines.append("From this folder, run the restore as incident.json has it, exactly: python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"restoreCommand\"])' incident.json | sh")
        }
        // One line each: a line feed in a path or a name is written as \u{A}, not a line of its own.
        return lines.map(TerminalText.oneLine).joined(separator: "\n") + "\n"
    }
}
