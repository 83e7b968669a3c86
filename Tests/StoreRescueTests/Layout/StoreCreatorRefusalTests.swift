import Foundation
import SRSQLite
import Testing
@testable import StoreRescue

/// `create` never replaces or shadows anything, and a failure at any point leaves the folder as
/// it was.
@Suite struct StoreCreatorRefusalTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Item", properties: [.attribute(AttributeDescription(name: "name", type: .string))])
    ])

    static func refusal(at path: String) -> StoreCreationError? {
        do {
            try StoreCreator.create(model: model, versionIdentifiers: nil, at: path)
            return nil
        } catch let error as StoreCreationError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func existingTargetIsNeverReplaced() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("precious".utf8)))
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let error = Self.refusal(at: path)
        #expect(error == .targetExists(path: path))
        #expect(error?.description == "\(path) already exists; refusing to overwrite it")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(error?.recoverySuggestion?.contains("no --force") == true)
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before)
    }

    @Test(arguments: ["-wal", "-shm", "-journal"])
    func existingSidecarIsNeverShadowed(suffix: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        #expect(FileManager.default.createFile(atPath: path + suffix, contents: Data("committed frames".utf8)))
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let error = Self.refusal(at: path)
        #expect(error == .sidecarExists(path: path, sidecar: path + suffix))
        #expect(error?.description == "\(path + suffix) exists; refusing to create \(path) next to another store's sidecar")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before)
    }

    /// A target named as the sidecar of a store that exists (`X-wal` beside `X`): SQLite would
    /// delete it (or, as `-shm`, overwrite it) the first time anything opened X. A review had
    /// `create` and `migrate` write there with exit 0.
    @Test(arguments: ["-wal", "-shm", "-journal"])
    func aTargetThatWouldBeAnotherStoresSidecarIsRefused(suffix: String) throws {
        let directory = try TemporaryDirectory()
        let store = directory.path("store.sqlite")
        try StoreFixtureBuilder.database(at: store, sql: "CREATE TABLE t (a)")
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let error = Self.refusal(at: store + suffix)
        #expect(error == .targetIsSidecar(path: store + suffix, store: store))
        #expect(error?.description == "\(store + suffix) would be a sidecar of \(store), which exists; refusing to create a store there (SQLite deletes or overwrites such a file when it opens \(store))")
        #expect(error?.exitStatus == .cannotCreateOutput)
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before)
        // With no store of that name, or a folder of that name, the name is only a name.
        #expect(Self.refusal(at: directory.path("other.sqlite") + suffix) == nil)
        try FileManager.default.createDirectory(atPath: directory.path("Folder"), withIntermediateDirectories: false)
        #expect(Self.refusal(at: directory.path("Folder") + suffix) == nil)
    }

    /// An empty path (`--out ""`) is said to be one (a review's message read "cannot create :
    /// folder  is a folder"), for `create` and for salvage's output.
    @Test func anEmptyPathIsRefusedAsOne() throws {
        let error = Self.refusal(at: "")
        #expect(error == .emptyPath && error?.exitStatus == .cannotCreateOutput)
        #expect(error?.description == "cannot create a store at an empty path")
        #expect(SalvageError(creation: .emptyPath).description == "cannot write the salvaged store at an empty path")
    }

    @Test func symlinkAtTheTargetIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: directory.path("elsewhere.sqlite"))
        let error = Self.refusal(at: path)
        #expect(error == .targetIsSymlink(path: path))
        #expect(error?.description == "\(path) is a symbolic link; refusing to create a store through it")
        #expect(!FileManager.default.fileExists(atPath: directory.path("elsewhere.sqlite")), "the dangling link was not followed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["store.sqlite"])
    }

    @Test func folderThatIsNotAFolder() throws {
        let directory = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: directory.path("file"), contents: Data()))
        let underFile = directory.path("file") + "/store.sqlite"
        let error = Self.refusal(at: underFile)
        #expect(error == .folderUnusable(path: underFile, folder: directory.path("file"), reason: "is not a folder"))
        #expect(error?.exitStatus == .cannotCreateOutput)
        let missing = directory.path("absent") + "/store.sqlite"
        #expect(Self.refusal(at: missing) == .folderUnusable(path: missing, folder: directory.path("absent"), reason: "does not exist"))
        #expect(Self.refusal(at: directory.url.path + "/")?.exitStatus == .cannotCreateOutput)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["file"])
    }

    @Test(.disabled(if: geteuid() == 0, "root writes into read-only folders; folderThatIsNotAFolder covers the refusal"))
    func folderThatIsNotWritable() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path("locked")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o555])
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder) }
        let error = Self.refusal(at: folder + "/store.sqlite")
        guard case .folderUnusable(_, let reportedFolder, let reason)? = error else {
            Issue.record("expected folderUnusable, got \(String(describing: error))")
            return
        }
        #expect(reportedFolder == folder)
        #expect(reason.hasPrefix("is not writable"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    struct InjectedFailure: Error, Equatable {}

    /// Whatever the stage, a failure leaves the folder exactly as it was: no store, no sidecar,
    /// no private folder.
    @Test(arguments: StoreCreator.Stage.allCases)
    func failureAtAnyStageLeavesNothingBehind(stage: StoreCreator.Stage) throws {
        let directory = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: directory.path("neighbour.txt"), contents: Data("keep".utf8)))
        let before = try StoreFixtureBuilder.snapshot(of: directory.url.path)
        let path = directory.path("store.sqlite")
        // Failures during writing are reported as write failures, carrying the cause.
        let error = #expect(throws: (any Error).self) {
            try StoreCreator.create(
                model: Self.model, versionIdentifiers: nil, at: path, options: StoreCreationOptions(includesPersistentHistory: true),
                result: nil, faultInjection: { if $0 == stage { throw InjectedFailure() } })
        }
        #expect(error.map { "\($0)".contains("InjectedFailure") } == true, "\(stage): \(String(describing: error))")
        #expect(try StoreFixtureBuilder.snapshot(of: directory.url.path) == before, "\(stage)")
        // And without the fault the same call succeeds, so the test injected a real failure.
        try StoreCreator.create(model: Self.model, versionIdentifiers: nil, at: path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["neighbour.txt", "store.sqlite"])
    }

    /// How a failure while writing ends `create`, by SQLite's result code (and the system's
    /// error number it recorded) or a system call's: only no room (disk full, a write's I/O
    /// error, the file-size limit) is exit 74 with the free-space hint; a file the folder refuses
    /// (cannot open, read only, permission) is the folder's, exit 73, naming it; memory running
    /// out is 74 saying so; SQL SQLite refuses is this tool's bug (70). CANTOPEN, READONLY,
    /// PERM and NOMEM all read "check free space" (74) until stop 27.
    @Test(arguments: [
        // Extended codes are C macros Swift does not import: SQLITE_IOERR_WRITE, SQLITE_READONLY_DIRECTORY,
        // SQLITE_IOERR_NOMEM.
        (SQLITE_FULL, 0, StoreRescue.ExitStatus.ioError, "check free space"), (SQLITE_IOERR | 3 << 8, 0, .ioError, "check free space"),
        (SQLITE_CANTOPEN, ENOSPC, .ioError, "check free space"), (SQLITE_IOERR | 3 << 8, EROFS, .cannotCreateOutput, "not a lack of disk space: make"),
        (SQLITE_CANTOPEN, 0, .cannotCreateOutput, "not a lack of disk space: make"), (SQLITE_CANTOPEN, EACCES, .cannotCreateOutput, "not a lack of disk space: make"),
        (SQLITE_READONLY | 6 << 8, 0, .cannotCreateOutput, "not a lack of disk space: make"), (SQLITE_PERM, 0, .cannotCreateOutput, "not a lack of disk space: make"),
        (SQLITE_NOMEM, 0, .ioError, "not a lack of disk space: free memory"), (SQLITE_IOERR | 12 << 8, 0, .ioError, "not a lack of disk space: free memory"),
        (SQLITE_ERROR, 0, .internalError, "please report this"),
        (SQLITE_CANTOPEN, EMFILE, .ioError, "not a lack of disk space: raise the limit on open files"),
        (SQLITE_CANTOPEN, ENFILE, .ioError, "not a lack of disk space: raise the limit on open files"),
    ])
    func sqliteErrorsWhileWritingAreClassifiedByTheirCode(code: Int32, systemErrno: Int32, status: StoreRescue.ExitStatus, hint: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let error = #expect(throws: StoreCreationError.self) {
            try StoreCreator.create(
                model: Self.model, versionIdentifiers: nil, at: path, options: StoreCreationOptions(), result: nil,
                faultInjection: { if $0 == .schemaWritten { throw SQLiteError(resultCode: code, message: "injected", systemErrno: systemErrno) } })
        }
        #expect(error?.exitStatus == status, "\(String(describing: error))")
        #expect(error?.description.contains("injected (SQLite code \(code))") == true, "\(String(describing: error))")
        #expect(error?.recoverySuggestion?.hasPrefix(hint) == true, "\(String(describing: error?.recoverySuggestion))")
        if status == .cannotCreateOutput {
            #expect(error == .writeDenied(path: path, folder: directory.url.path, reason: "injected (SQLite code \(code))" + (systemErrno == 0 ? "" : ": \(String(cString: strerror(systemErrno)))")))
            #expect(error?.recoverySuggestion?.contains("make \(directory.url.path) writable") == true)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    /// A system call refused while publishing (the link into place): `EROFS`, `EACCES` and
    /// `EPERM` are the folder's (73), `ENOMEM` memory, `ENOSPC` and `EIO` no room (74).
    @Test(arguments: [(EROFS, StoreRescue.ExitStatus.cannotCreateOutput), (EACCES, .cannotCreateOutput), (EPERM, .cannotCreateOutput),
                      (ENOMEM, .ioError), (ENOSPC, .ioError), (EIO, .ioError), (EMFILE, .ioError)])
    func systemCallFailuresAreClassifiedByTheirErrno(code: Int32, status: StoreRescue.ExitStatus) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let error = #expect(throws: StoreCreationError.self) {
            try StoreCreator.create(
                model: Self.model, versionIdentifiers: nil, at: path, options: StoreCreationOptions(), result: nil,
                faultInjection: { if $0 == .beforePublishing { throw POSIXFailure(operation: "link", code: code) } })
        }
        #expect(error?.exitStatus == status, "\(String(describing: error))")
        switch WriteFailure.kind(ofErrno: code) {
        case .denied: #expect(error == .writeDenied(path: path, folder: directory.url.path, reason: "link: \(String(cString: strerror(code)))"))
        case .outOfMemory: #expect(error == .outOfMemory(path: path, reason: "link: \(String(cString: strerror(code)))"))
        case .tooManyOpenFiles: #expect(error == .tooManyOpenFiles(path: path, reason: "link: \(String(cString: strerror(code)))"))
        case .noRoom, .refused: #expect(error == .writeFailed(path: path, reason: "link: \(String(cString: strerror(code)))"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    /// The private folder made read-only just after it was made (`chattr +i` for root, who
    /// ignores modes; mode 0500 otherwise): the store's file cannot be created there. That is
    /// the destination folder's problem, exit 73 naming it — not "check free space" (74).
    @Test func aFolderMadeReadOnlyPartWayIsNotADiskFull() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        var lock: UnwritableFolder?
        defer { lock?.restore() }
        let error = #expect(throws: StoreCreationError.self) {
            try StoreCreator.create(
                model: Self.model, versionIdentifiers: nil, at: path, options: StoreCreationOptions(), result: nil,
                faultInjection: { stage in
                    guard stage == .workspaceCreated else { return }
                    let workspace = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).first { $0.hasPrefix(".create") })
                    lock = try UnwritableFolder(directory.path(workspace))
                })
        }
        let reason = try #require(lock?.expectedReason)
        lock?.restore()
        guard case .writeDenied(let reportedPath, let folder, let detail) = error else {
            Issue.record("expected the folder's refusal, got \(String(describing: error))")
            return
        }
        #expect(reportedPath == path && folder == directory.url.path)
        #expect(detail.hasSuffix(": \(reason)"), "\(detail)")
        #expect(error?.exitStatus == .cannotCreateOutput)
        // A folder that refuses files refuses their removal too: only the private folder may stay.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).allSatisfy { $0.hasPrefix(".create") })
    }

    @Test func modelThatCannotBeLaidOutWritesNothing() throws {
        let directory = try TemporaryDirectory()
        let bad = ManagedObjectModel(entities: [EntityDescription(name: "A", superentityName: "Missing")])
        #expect(throws: LayoutError.unknownSuperentity(entity: "A", superentity: "Missing")) {
            try StoreCreator.create(model: bad, versionIdentifiers: nil, at: directory.path("store.sqlite"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test func optionsReachTheMetadata() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let uuid = try #require(UUID(uuidString: "F2A1C4B6-1C2D-4E5F-8A9B-0C1D2E3F4A5B"))
        let result = try StoreCreator.create(
            model: Self.model, versionIdentifiers: ["v4"], at: path,
            options: StoreCreationOptions(frameworkVersion: 866, storeUUID: uuid, additionalMetadata: ["STUnique": .integer(9)]))
        #expect(result.uuid == "F2A1C4B6-1C2D-4E5F-8A9B-0C1D2E3F4A5B")
        #expect(result.tables == ["ZITEM", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        #expect(result.entityCount == 1 && result.indexCount == 0 && !result.modelCacheWritten)
        let report = StoreInspector.inspect(path: path)
        #expect(report.metadata?.uuid == "F2A1C4B6-1C2D-4E5F-8A9B-0C1D2E3F4A5B")
        #expect(report.metadata?.frameworkVersion == 866)
        #expect(report.metadata?.hashesDigest == nil, "framework 866 writes no digest")
        #expect(report.metadata?.versionIdentifiers == ["v4"])
        #expect(report.metadata?.otherKeys["STUnique"] == .integer(9))
        // Core Data's own mode: SQLite's default file mode less the umask, never the 0700 of
        // the private folder it was built in.
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o600 } == 0o600 && mode.map { $0 & 0o111 } == 0)
    }
}
