import Foundation
import SRSQLite
import Testing
@testable import StoreRescue

/// Every way a salvage can fail that an operator can hit: a clear error naming the file, the
/// documented exit status, nothing at the output path, nothing left in its folder, the store
/// untouched.
@Suite struct SalvageFailureTests {
    /// A store in `input/`, an empty `out/` folder for the output.
    struct Setup {
        let directory: TemporaryDirectory
        let store: String
        let outputFolder: String
        var output: String { outputFolder + "/salvaged.sqlite" }

        /// Salvaged in Core Data mode (`options`' catalog) when set.
        let coreData: Bool

        /// A plain database of `rows` rows, or with `coreData` the Core Data fixture store.
        init(rows: Int = 300, coreData: Bool = false) throws {
            directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: directory.path("input"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory.path("out"), withIntermediateDirectories: true)
            store = directory.path("input/store.sqlite")
            outputFolder = directory.path("out")
            self.coreData = coreData
            if coreData {
                try CoreDataSalvageFixtures.store(at: store)
            } else {
                try SalvageFixtures.plainDatabase(at: store, rows: rows)
            }
        }

        var options: SalvageOptions { SalvageOptions(catalog: coreData ? CoreDataSalvageFixtures.catalog : nil) }

        func inputSnapshot() throws -> [String: Data] { try SalvageFixtures.snapshot(directory.path("input")) }
        func outputFolderNames() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: outputFolder)) ?? []).sorted() }

        /// Salvages with `change` made to the private output file once its pages are written
        /// (before the check and the publication); the error the run ends with.
        func salvageChangingTheWrittenFile(_ change: @escaping (_ file: String) throws -> Void) -> SalvageError? {
            #expect(throws: SalvageError.self) {
                try Salvager.salvage(
                    store: store, into: output, options: options,
                    progress: nil, cancellation: nil, result: nil
                ) { stage in
                    guard stage == .pagesWritten else { return }
                    let workspace = try #require(try FileManager.default.contentsOfDirectory(atPath: outputFolder).first { $0.hasPrefix(".salvage") })
                    try change(outputFolder + "/" + workspace + "/salvaged.sqlite")
                }
            }
        }
    }

    @Test func existingOutputIsNeverReplaced() throws {
        let setup = try Setup()
        try Data("precious".utf8).write(to: URL(fileURLWithPath: setup.output))
        let error = #expect(throws: SalvageError.self) { try Salvager.salvage(store: setup.store, into: setup.output) }
        #expect(error == .outputExists(path: setup.output, existing: setup.output))
        #expect(error?.description == "\(setup.output) already exists; refusing to overwrite it")
        #expect(error?.recoverySuggestion == "choose a new path; salvage never replaces a file: move the existing one away first if it is no longer needed")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(try String(contentsOfFile: setup.output, encoding: .utf8) == "precious")
        #expect(setup.outputFolderNames() == ["salvaged.sqlite"])
    }

    @Test(arguments: ["-wal", "-shm", "-journal"])
    func existingSidecarOfTheOutputIsRefused(suffix: String) throws {
        let setup = try Setup()
        try Data("frames".utf8).write(to: URL(fileURLWithPath: setup.output + suffix))
        let error = #expect(throws: SalvageError.self) { try Salvager.salvage(store: setup.store, into: setup.output) }
        #expect(error?.description == "\(setup.output + suffix) exists; refusing to create \(setup.output) next to another store's sidecar")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(setup.outputFolderNames() == ["salvaged.sqlite" + suffix])
    }

    @Test func symbolicLinkAtTheOutputIsRefusedNotFollowed() throws {
        let setup = try Setup()
        let victim = setup.directory.path("victim.sqlite")
        try FileManager.default.createSymbolicLink(atPath: setup.output, withDestinationPath: victim)
        let error = #expect(throws: SalvageError.self) { try Salvager.salvage(store: setup.store, into: setup.output) }
        #expect(error == .outputIsSymlink(path: setup.output))
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(!FileManager.default.fileExists(atPath: victim))
    }

    @Test func missingOutputFolderIsRefused() throws {
        let setup = try Setup()
        let output = setup.directory.path("nowhere/salvaged.sqlite")
        let error = #expect(throws: SalvageError.self) { try Salvager.salvage(store: setup.store, into: output) }
        #expect(error?.description == "cannot create \(output): folder \(setup.directory.path("nowhere")) does not exist")
        #expect(error?.exitStatus == .cannotCreateOutput)
    }

    @Test(arguments: ["", "-wal", "-shm", "-journal"])
    func outputNamingTheStoreOrASidecarIsRefused(suffix: String) throws {
        let setup = try Setup()
        let before = try setup.inputSnapshot()
        let error = #expect(throws: SalvageError.self) { try Salvager.salvage(store: setup.store, into: setup.store + suffix) }
        #expect(error == .outputIsInput(output: setup.store + suffix, store: setup.store))
        #expect(error?.description == "\(setup.store + suffix) is \(setup.store) or one of its sidecars; refusing to write over the damaged store")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(try setup.inputSnapshot() == before)
    }

    @Test func missingDirectoryOrLinkedInputIsAClearError() throws {
        let setup = try Setup()
        let missing = setup.directory.path("input/gone.sqlite")
        let error = #expect(throws: StoreAccessError.self) { try Salvager.salvage(store: missing, into: setup.output) }
        #expect(error?.description == "\(missing): no such file")
        #expect(error?.exitStatus == .noInput)
        let folder = setup.directory.path("input")
        #expect(throws: StoreAccessError.rejected(path: folder, kind: .directory, reason: "is a directory, not a store file")) {
            try Salvager.salvage(store: folder, into: setup.output)
        }
        let link = setup.directory.path("input/link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: setup.store)
        let linked = #expect(throws: StoreAccessError.self) { try Salvager.salvage(store: link, into: setup.output) }
        #expect(linked?.exitStatus == .noInput)
        #expect(linked?.recoverySuggestion == "pass the real path, or add --follow-symlinks if the link is trusted")
        #expect(setup.outputFolderNames().isEmpty)
        let followed = try Salvager.salvage(store: link, into: setup.output, options: SalvageOptions(followsSymlinks: true))
        #expect(followed.tables.first { $0.name == "people" }?.rows.recovered == Int(SalvageFixtures.lastLivePerson()))
    }

    @Test func emptyOrForeignInputHasNothingToSalvage() throws {
        let setup = try Setup()
        let empty = setup.directory.path("input/empty.sqlite")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let error = #expect(throws: StoreAccessError.self) { try Salvager.salvage(store: empty, into: setup.output) }
        #expect(error?.description == "\(empty): is empty (0 bytes) and has no -wal content")
        #expect(error?.exitStatus == .notAStore)

        let text = setup.directory.path("input/notes.txt")
        try Data(String(repeating: "not a database at all. ", count: 2000).utf8).write(to: URL(fileURLWithPath: text))
        let foreign = #expect(throws: SalvageError.self) { try Salvager.salvage(store: text, into: setup.output) }
        #expect(foreign?.description == "\(text): nothing to salvage: no page of it reads as an SQLite page")
        #expect(foreign?.exitStatus == .notAStore)
        #expect(setup.outputFolderNames().isEmpty)
    }

    /// Two whole pages and a byte (the hostile-input campaign's `truncated-8193` of a sample with
    /// 31 tables): page 1 is the schema tree's interior page, page 2 a pointer map; no schema row
    /// and no table page survive. Nothing to recover is a result, not a bug: an empty database
    /// (it was a 0-byte file, which failed salvage's own check: exit 70).
    @Test func aStoreWithNoRecoverableTableGivesAnEmptyDatabase() throws {
        let setup = try Setup()
        try FileManager.default.removeItem(atPath: setup.store)
        do {
            let connection = try SQLiteConnection(path: setup.store, options: SQLiteOpenOptions(mode: .create))
            try connection.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = FULL")
            for table in 0..<60 {
                let columns = (0..<20).map { "ZCOLUMN_NUMBER_\($0)_OF_A_LONG_NAME TEXT" }.joined(separator: ", ")
                try connection.execute("CREATE TABLE ZTABLE\(table) (Z_PK INTEGER PRIMARY KEY, \(columns))")
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: setup.store))[100] == 0x05, "page 1 is an interior page of the schema tree")
        try SalvageFixtures.truncate(setup.store, to: 2 * 4096 + 1)
        let before = try setup.inputSnapshot()
        let report = try Salvager.salvage(store: setup.store, into: setup.output)
        #expect(report.error == nil)
        let connection = try SQLiteConnection(path: setup.output, options: SQLiteOpenOptions(mode: .immutable))
        #expect(try connection.rows("PRAGMA integrity_check").compactMap { $0.first?.string } == ["ok"])
        #expect(try connection.scalar("SELECT count(*) FROM sqlite_schema")?.int64 == 0)
        #expect(setup.outputFolderNames() == ["salvaged.sqlite"])
        #expect(try setup.inputSnapshot() == before)
    }

    /// A failure at any point — before, while and after the rows are written, and after the file
    /// is linked into place — leaves nothing at the output and nothing in its folder.
    @Test(arguments: Salvager.Stage.allCases)
    func injectedFailureLeavesNothingBehind(stage: Salvager.Stage) throws {
        struct Injected: Error {}
        let setup = try Setup()
        let before = try setup.inputSnapshot()
        #expect(throws: (any Error).self) {
            try Salvager.salvage(store: setup.store, into: setup.output, options: SalvageOptions(), progress: nil, cancellation: nil, result: nil) {
                if $0 == stage { throw Injected() }
            }
        }
        #expect(setup.outputFolderNames().isEmpty, "left behind at \(stage): \(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// A flush of the new file that fails on its thread (`BackgroundFlush`: here the flusher is
    /// pointed at `/dev/full`, whose `fdatasync` fails with EINVAL) fails the salvage, exit 74,
    /// with nothing published: Linux reports a writeback error once per open file, and the
    /// publisher's `fsync` could then succeed over pages that never reached the disk.
    @Test(arguments: [false, true])
    func aFlushThatFailsFailsTheSalvage(coreData: Bool) throws {
        let setup = try Setup(rows: 3000, coreData: coreData)
        let before = try setup.inputSnapshot()
        var made: BackgroundFlush?
        let error = #expect(throws: SalvageError.self) {
            try Salvager.salvage(
                store: setup.store, into: setup.output, options: setup.options, progress: nil, cancellation: nil, result: nil,
                flush: { _ in
                    let flush = BackgroundFlush(path: "/dev/full")
                    made = flush
                    return flush
                }, faultInjection: nil)
        }
        #expect(made?.flushes == 1, "the salvage asked for no flush")
        #expect(error == .writeFailed(path: setup.output, reason: String(cString: strerror(EINVAL))), "\(String(describing: error))")
        #expect(error?.exitStatus == .ioError)
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// The new file is the same, byte for byte, whether it was flushed as it was written (and
    /// how often: every 8 MiB and once complete) or, the system refusing the flushing thread, only
    /// by the publisher's `fsync`.
    @Test func theFlushingThreadChangesNoByte() throws {
        let setup = try Setup(rows: 20_000)
        var outputs: [Data] = []
        for thread in [true, false] {
            let output = setup.outputFolder + "/salvaged-\(thread).sqlite"
            var made: BackgroundFlush?
            _ = try Salvager.salvage(
                store: setup.store, into: output, options: SalvageOptions(), progress: nil, cancellation: nil, result: nil,
                flush: { path in
                    let flush = BackgroundFlush(path: path, startThread: { thread ? JoinableThread($0) : nil })
                    made = flush
                    return flush
                }, faultInjection: nil)
            #expect((made?.flushes ?? 0) >= (thread ? 1 : 0) && (thread || made?.flushes == 0), "\(thread): \(String(describing: made?.flushes))")
            outputs.append(try Data(contentsOf: URL(fileURLWithPath: output)))
        }
        #expect(outputs[0] == outputs[1])
    }

    /// A cancellation (SIGINT, SIGTERM) as the last pass begins — from there on the work is
    /// SQLite's (deferred indexes, fix-ups, its check of the new file), with no page left for the
    /// salvage's own loop to see the cancellation between — ends the run as interrupted (exit
    /// 75) with nothing left: SQLite's progress handler stops its statement, and its
    /// "interrupted" is the interruption, not a write failure (exit 74). In plain mode SQLite's
    /// check used to run to its end, then the run published the store (exit 0); on the
    /// 765 MB benchmark store the 1 s watchdog ended such runs instead.
    @Test(arguments: [false, true])
    func aCancellationDuringSQLitesWorkIsAnInterruption(coreData: Bool) throws {
        let setup = try Setup(rows: 3000, coreData: coreData)
        let before = try setup.inputSnapshot()
        let cancellation = CancellationFlag()
        var reached = false
        let error = #expect(throws: SalvageError.self) {
            try Salvager.salvage(
                store: setup.store, into: setup.output, options: setup.options,
                progress: { progress in
                    guard progress.phase == .finish else { return }
                    reached = true
                    cancellation.cancel()
                }, cancellation: cancellation)
        }
        #expect(reached, "the run never reached its last pass")
        #expect(error == .interrupted, "\(String(describing: error))")
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// A cancellation while the finished file is flushed to disk (its fsync takes a while on a
    /// large store), just before the publish: the run stops there, nothing published. Before, it
    /// published and reported success (a review's SIGTERM at that moment: exit 0 with the file
    /// in place, 5 of 34 runs of `migrate`; salvage has the same step).
    @Test(arguments: [false, true])
    func aCancellationJustBeforeThePublishPublishesNothing(coreData: Bool) throws {
        let setup = try Setup(rows: 300, coreData: coreData)
        let cancellation = CancellationFlag()
        let error = #expect(throws: SalvageError.self) {
            try Salvager.salvage(
                store: setup.store, into: setup.output, options: setup.options, progress: nil, cancellation: cancellation, result: nil
            ) { stage in
                if stage == .beforePublishing { cancellation.cancel() }
            }
        }
        #expect(error == .interrupted, "\(String(describing: error))")
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
    }

    /// A page the salvage wrote itself that SQLite would not vouch for — two cells of a table
    /// leaf swapped, so its rowids are out of order, written into the new file once the bulk
    /// load's last page is in — is caught by SQLite's check of the new file, and nothing is
    /// published. In Core Data mode that check runs while SQLite writes the rest (`OutputCheck`,
    /// on a snapshot of the file taken at that point); in plain mode, at the end.
    @Test(arguments: [false, true])
    func aWrittenPageSQLiteWouldNotVouchForIsNeverPublished(coreData: Bool) throws {
        let setup = try Setup(coreData: coreData)
        let before = try setup.inputSnapshot()
        var swapped: Int?
        let error = setup.salvageChangingTheWrittenFile { swapped = try Self.swapFirstTwoCellsOfTheLastTableLeaf(in: $0) }
        #expect(swapped != nil, "no table leaf of two cells to swap")
        guard case .verificationFailed(let path, let reason) = error else {
            Issue.record("expected the check to refuse the file, got \(String(describing: error))")
            return
        }
        #expect(path == setup.output)
        #expect(reason.contains("quick_check") && reason.contains("out of order"), "\(reason)")
        #expect(error?.exitStatus == .internalError)
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// A written root page made no b-tree page at all, which stops SQLite's check itself with
    /// "malformed" instead of a finding (plain mode), and which SQLite's own later work meets
    /// before the check's verdict (Core Data mode: the join table's rows are counted): the run
    /// still ends with the check's finding — exit 70, "a bug" — not with SQLite's "malformed" as
    /// a write failure (exit 74, which advises free space).
    @Test(arguments: [false, true])
    func aRootPageSQLiteCannotReadIsStillTheChecksFinding(coreData: Bool) throws {
        let setup = try Setup(coreData: coreData)
        let before = try setup.inputSnapshot()
        let error = setup.salvageChangingTheWrittenFile { file in
            let root = try CoreDataSalvageFixtures.rootPage(of: coreData ? "Z_1TAGS" : "people", in: file)
            try SalvageFixtures.overwrite(file, at: (root - 1) * 4096, with: Data([0]))
        }
        guard case .verificationFailed(let path, let reason) = error else {
            Issue.record("expected the check's finding, got \(String(describing: error))")
            return
        }
        #expect(path == setup.output)
        #expect(reason.hasPrefix("quick_check: "), "\(reason)")
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// SQLite refusing a statement while the new store is written — here `Z_PRIMARYKEY` renamed
    /// under the salvage once its pages are in, so its `Z_MAX` update meets "no such table"
    /// (SQLITE_ERROR, code 1) — is this tool's bug (exit 70), said so; it was a write failure
    /// (exit 74) advising free disk space, which would not have helped.
    @Test func anSQLErrorWhileWritingIsABugNotAFullDisk() throws {
        let setup = try Setup(coreData: true)
        let before = try setup.inputSnapshot()
        let error = setup.salvageChangingTheWrittenFile { file in
            try SQLiteConnection(path: file, options: SQLiteOpenOptions(mode: .readWrite)).execute("ALTER TABLE Z_PRIMARYKEY RENAME TO Z_ELSEWHERE")
        }
        guard case .writeRefused(let path, let reason) = error else {
            Issue.record("expected SQLite's refusal, got \(String(describing: error))")
            return
        }
        #expect(path == setup.output)
        #expect(reason == "no such table: Z_PRIMARYKEY (SQLite code 1)")
        #expect(error?.description == "SQLite refused what salvage wrote into \(setup.output): \(reason); nothing was left at \(setup.output)")
        #expect(error?.exitStatus == .internalError)
        #expect(error?.recoverySuggestion?.contains("disk space") == true && error?.recoverySuggestion?.contains("bug") == true)
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// How an SQLite error while writing ends the run, by its result code (and the system's
    /// error number SQLite recorded): only the file system failing for room (disk full, a
    /// write's I/O error, the file-size limit) is exit 74 with the disk-space hint; a file the
    /// folder refuses (cannot open, read only, permission) is the output folder's, exit 73,
    /// naming it; memory running out is exit 74 saying so; any other code (an SQL error, a
    /// constraint) is SQLite refusing the tool's own statements, exit 70. Every one of the
    /// refusals and memory used to be "free disk space".
    @Test(arguments: [
        // Extended codes are C macros Swift does not import: SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED,
        // SQLITE_IOERR_NOMEM, SQLITE_CONSTRAINT_UNIQUE.
        (SQLITE_FULL, 0, StoreRescue.ExitStatus.ioError, "free disk space"), (SQLITE_IOERR | 3 << 8, 0, .ioError, "free disk space"),
        (SQLITE_CANTOPEN, ENOSPC, .ioError, "free disk space"), (SQLITE_IOERR | 3 << 8, EROFS, .cannotCreateOutput, "not a lack of disk space: make"),
        (SQLITE_CANTOPEN, 0, .cannotCreateOutput, "not a lack of disk space: make"), (SQLITE_CANTOPEN, EACCES, .cannotCreateOutput, "not a lack of disk space: make"),
        (SQLITE_READONLY | 4 << 8, 0, .cannotCreateOutput, "not a lack of disk space: make"), (SQLITE_PERM, 0, .cannotCreateOutput, "not a lack of disk space: make"),
        (SQLITE_NOMEM, 0, .ioError, "not a lack of disk space: free memory"), (SQLITE_IOERR | 12 << 8, 0, .ioError, "not a lack of disk space: free memory"),
        (SQLITE_ERROR, 0, .internalError, "this is a bug"), (SQLITE_CONSTRAINT | 8 << 8, 0, .internalError, "this is a bug"),
        (SQLITE_CANTOPEN, EMFILE, .ioError, "not a lack of disk space: raise the limit on open files"),
    ])
    func sqliteErrorsWhileWritingAreClassifiedByTheirCode(code: Int32, systemErrno: Int32, status: StoreRescue.ExitStatus, hint: String) throws {
        let setup = try Setup()
        let error = #expect(throws: SalvageError.self) {
            try Salvager.salvage(store: setup.store, into: setup.output, options: SalvageOptions(), progress: nil, cancellation: nil, result: nil) {
                if $0 == .rowsWritten { throw SQLiteError(resultCode: code, message: "injected", systemErrno: systemErrno) }
            }
        }
        #expect(error?.exitStatus == status)
        #expect(error?.description.contains("injected (SQLite code \(code))") == true, "\(String(describing: error))")
        #expect(error?.recoverySuggestion?.hasPrefix(hint) == true, "\(String(describing: error?.recoverySuggestion))")
        if status == .cannotCreateOutput {
            #expect(error?.description.contains("a file in \(setup.outputFolder) could not be created or written") == true)
            #expect(error?.recoverySuggestion?.contains("make \(setup.outputFolder) writable") == true)
        }
        if systemErrno != 0 { #expect(error?.description.contains(String(cString: strerror(systemErrno))) == true) }
        #expect(setup.outputFolderNames().isEmpty, "left behind: \(setup.outputFolderNames())")
    }

    /// The output's folder made read-only part way (here its private folder, once salvage's own
    /// pages are in and SQLite is to write the rest: `chattr +i` for root, who ignores modes;
    /// mode 0500 otherwise): SQLite cannot create its `-wal`/`-journal` there (SQLITE_CANTOPEN).
    /// That is the folder's problem, exit 73 naming it and what to try — it was exit 74 and
    /// "free disk space or raise the file-size limit", which does not help. A folder that
    /// refuses files also refuses their removal, so the private folder stays (the next run
    /// removes it once stale); nothing is at the output.
    @Test func aFolderMadeReadOnlyPartWayIsNotADiskFull() throws {
        let setup = try Setup(coreData: true)
        let before = try setup.inputSnapshot()
        var lock: UnwritableFolder?
        defer { lock?.restore() }
        let error = #expect(throws: SalvageError.self) {
            try Salvager.salvage(
                store: setup.store, into: setup.output, options: setup.options,
                progress: nil, cancellation: nil, result: nil
            ) { stage in
                guard stage == .pagesWritten else { return }
                let workspace = try #require(try FileManager.default.contentsOfDirectory(atPath: setup.outputFolder).first { $0.hasPrefix(".salvage") })
                lock = try UnwritableFolder(setup.outputFolder + "/" + workspace)
            }
        }
        let reason = try #require(lock?.expectedReason)
        lock?.restore()
        guard case .writeDenied(let path, let folder, let detail) = error else {
            Issue.record("expected the folder's refusal, got \(String(describing: error))")
            return
        }
        #expect(path == setup.output && folder == setup.outputFolder)
        // Root's immutable folder: SQLITE_CANTOPEN (14); an ordinary user's mode 0500:
        // SQLITE_READONLY_DIRECTORY (1544). Either way SQLite keeps no reason; the folder's is said.
        #expect((detail.contains("(SQLite code 14)") || detail.contains("(SQLite code 1544)")) && detail.hasSuffix(": \(reason)"), "\(detail)")
        #expect(error?.description == "writing \(setup.output) failed: a file in \(setup.outputFolder) could not be created or written: \(detail); nothing was left at \(setup.output)")
        #expect(error?.recoverySuggestion == "not a lack of disk space: make \(setup.outputFolder) writable for this user (check its permissions, and that its file system is not mounted read-only), or give --out a path in a folder you can write to; then run the command again")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(setup.outputFolderNames().allSatisfy { $0.hasPrefix(".salvage") }, "\(setup.outputFolderNames())")
        #expect(try setup.inputSnapshot() == before)
    }

    /// Swaps the first two cell pointers of the last table leaf page (of two cells or more) in
    /// the database at `path`; returns its page number.
    static func swapFirstTwoCellsOfTheLastTableLeaf(in path: String) throws -> Int? {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let pageSize = SalvageFixtures.u16(data, at: 16)
        for page in stride(from: data.count / pageSize, through: 2, by: -1) {
            let start = (page - 1) * pageSize
            guard data[start] == 0x0D, SalvageFixtures.u16(data, at: start + 3) >= 2 else { continue }
            // In place: SQLite and the salvage hold the file open.
            try SalvageFixtures.overwrite(path, at: start + 8, with: data[(start + 10)..<(start + 12)] + data[(start + 8)..<(start + 10)])
            return page
        }
        return nil
    }

    @Test func cancellationStopsAndRemovesEverything() throws {
        let setup = try Setup(rows: 3000)
        let flag = CancellationFlag()
        var calls = 0
        let error = #expect(throws: SalvageError.self) {
            try Salvager.salvage(store: setup.store, into: setup.output, progress: { _ in
                calls += 1
                if calls == 2 { flag.cancel() }
            }, cancellation: flag)
        }
        #expect(error == .interrupted)
        #expect(error?.description == "interrupted; partial files were removed and the store was left untouched")
        #expect(error?.exitStatus == .temporaryFailure)
        #expect(setup.outputFolderNames().isEmpty)
    }
}
