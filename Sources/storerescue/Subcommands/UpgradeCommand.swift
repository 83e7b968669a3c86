import ArgumentParser
import Foundation
import StoreRescue

/// `storerescue upgrade STORE --catalog CATALOG`: the two-phase bootstrap in place — verified
/// backup, adopt, migrate, verify, atomic replacement — or, when the store cannot be saved, a
/// refusal (`--on-failure keep`) or the clean fallback (`--on-failure clean`).
struct UpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Upgrade a store in place to the latest version: verified backup, adopt, migrate, atomic replace.",
        discussion: """
            Works on the store an app will open (its path, sidecars and all). Reads and matches it; \
            takes a verified compressed backup into --backup-dir (never the store's folder); stamps \
            an unversioned store as the version it really is (phase 1, adopt); migrates it through \
            the catalog's plan (phase 2); verifies the result (integrity_check, links, row counts, \
            match: exact; newer with the target's hashes for a target past the catalog's current \
            version; ambiguous when the target shares its hashes with another version) and \
            replaces the store atomically, after checking under its lock that it still is what \
            was backed up. A store that cannot be saved is left as it is (--on-failure \
            keep) or quarantined — moved, never deleted — and replaced by a clean store holding every \
            row that can be salvaged, with an incident report (--on-failure clean); never when \
            the catalog must change instead (a custom stage that fails, a newer store, versions \
            whose identical hashes hide the store's version). Exit status: 0 \
            upgraded; 2 already at the target (nothing written); 3 refused (nothing changed); 4 \
            adopted only; 5 fell back to a clean store; 64 usage; 65/66 input unreadable; 73/74 \
            cannot write; 75 the store is in use, changed since the backup, or the run was \
            interrupted (the store is the original). See Docs/UPGRADE.md.
            """)

    @Argument(help: "The store's main file (replaced in place).")
    var store: String

    @OptionGroup var common: InPlaceOptions

    @Option(help: "The version to upgrade to (default: the latest the plan reaches).")
    var to: String?

    @Option(help: "The store's version, overriding what match finds (an ambiguous store).")
    var from: String?

    @Option(help: ArgumentHelp("What to do with a store that cannot be saved: keep (change nothing) or clean (quarantine it, start clean, salvage its rows).", valueName: "keep|clean"))
    var onFailure: UpgradeOptions.FailurePolicy = .keep

    @Flag(help: "Check the backup's snapshot and the result with quick_check instead of the full integrity_check.")
    var quickCheck = false

    func run() throws {
        var options = common.options(mode: .upgrade)
        options.targetVersion = to
        options.sourceVersion = from
        options.onFailure = onFailure
        options.fullIntegrityCheck = !quickCheck
        try common.execute(store: store, options: options)
    }
}

/// `storerescue adopt STORE --catalog CATALOG`: phase 1 alone, with the same backup first.
struct AdoptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adopt",
        abstract: "Stamp a store's metadata as the version it really is (phase 1 of upgrade), in place, after a verified backup.",
        discussion: """
            For a store written without versioned schemas (no version checksum, no identifiers, \
            hashes missing): its hashes, identifiers, digest and checksum are written exactly as \
            Core Data would, app keys and the store UUID kept; no row changes. The version is what \
            match finds (an adoptable store) or --as. The same verified backup as upgrade is taken \
            first, and the store is replaced atomically. Exit status: 4 adopted; 2 nothing to adopt \
            (the metadata already names the version exactly); 3 refused (the version cannot be \
            told, or --as disagrees with the store's hashes); otherwise as upgrade. See Docs/UPGRADE.md.
            """)

    @Argument(help: "The store's main file (replaced in place).")
    var store: String

    @OptionGroup var common: InPlaceOptions

    @Option(name: .customLong("as"), help: ArgumentHelp("The version the store is (default: what match finds).", valueName: "version"))
    var version: String?

    func run() throws {
        try common.execute(store: store, options: common.options(mode: .adopt(as: version)))
    }
}

/// What `upgrade` and `adopt` share: the catalog, where the backup goes, how long to wait for
/// the store, a dry run, JSON.
struct InPlaceOptions: ParsableArguments {
    @Option(help: "The catalog: a catalog file (.json), .xcdatamodeld, .momd, .mom or reference store.")
    var catalog: String

    @Option(help: ArgumentHelp("Where the backup (and, for upgrade's fallback, the quarantine) goes; never the store's folder.", valueName: "dir"))
    var backupDir = BackupOptions.defaultDestinationDirectory

    @Option(help: "Seconds to wait for another process to close the store.")
    var timeout: Double = 30

    @Flag(help: "Show what would happen; write nothing anywhere.")
    var dryRun = false

    @Flag(help: "Print the report as JSON (the contract in Docs/JSON-OUTPUT.md).")
    var json = false

    func validate() throws {
        guard timeout >= 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds.") }
    }

    func options(mode: UpgradeOptions.Mode) -> UpgradeOptions {
        UpgradeOptions(mode: mode, backupDirectory: backupDir, isDryRun: dryRun, lockTimeout: timeout)
    }

    func execute(store: String, options: UpgradeOptions) throws {
        // A catalog that cannot be loaded is a failed report too (`status` `failed`), as every
        // other failure of the run: one shape for jobs.
        let report = try CommandOutput.withProgress(json: json) { (bar: ((UpgradeProgressLine) -> Void)?, cancellation) in
            StoreUpgrader.upgrade(
                store: store, catalogAt: catalog, options: options, progress: bar.map { bar in { bar(UpgradeProgressLine($0)) } },
                cancellation: cancellation)
        }
        try CommandOutput.finish(report, json: json)
    }
}

extension UpgradeOptions.FailurePolicy: ExpressibleByArgument {}

extension UpgradeReport: CommandReport {
    var renderedText: String { renderText() }
}
