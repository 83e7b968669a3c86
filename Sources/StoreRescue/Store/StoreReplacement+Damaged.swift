import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store SQLite cannot settle (found before SQLite is asked, or reported by it).
struct DamageFound: Error {
    var reason: String
}

extension StoreReplacement {
    /// Why the main file cannot be handed to SQLite, judged from its first 100 bytes: SQLite
    /// deletes the `-wal` and `-journal` of an empty main file, and folds a `-wal` into a file it
    /// then calls not a database. Nil when the header is an SQLite header (or unreadable here:
    /// SQLite then reports why).
    ///
    /// - Throws: `StoreReplacementError.cannotRead` when no file descriptor was left to open the
    ///   main file: the limit's (exit 74), and nothing is known of the store yet.
    func headerDamage() throws -> String? {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.prefix(of: storePath, count: SQLiteFileHeader.size, followsSymlinks: false)
        } catch .tooManyOpenFiles {
            throw StoreReplacementError.cannotRead(path: storePath, code: EMFILE)
        } catch {
            return nil
        }
        if bytes.isEmpty { return "it is empty (0 bytes)" }
        guard let header = SQLiteFileHeader(bytes: bytes) else { return "it has no SQLite header" }
        guard header.hasValidPageSize else { return "its SQLite header has an impossible page size (\(header.pageSize))" }
        return nil
    }

    /// A damaged store: refused, or (`moveSidecarsAside`) locked as SQLite would lock it, checked
    /// by the caller, its `-wal` (or hot `-journal`) folded into a copy of its main file put in its place (`Fold`),
    /// its sidecars moved into the folder, then replaced.
    func replaceDamaged(with newFile: String, identity: FileIdentity, reason: String, policy: DamagedStorePolicy,
                        whileLocked: ((LockedStore) throws -> Void)?, beforeFolding: ((FileIdentity) throws -> Void)? = nil,
                        faultInjection: ((Step) throws -> Void)?) throws -> Result {
        guard case .moveSidecarsAside(let folder) = policy else {
            throw StoreReplacementError.cannotSettle(path: storePath, reason: reason)
        }
        let store = try LockedStore(path: storePath, writable: true)
        defer { store.close() }
        guard store.lockAsSQLiteWould(waitingAtMost: lockTimeout, cancellation: cancellation) else { throw inUse() }
        try faultInjection?(.locked)
        // Checked before the hook preserves anything and the sidecars move (a file found
        // swapped there left the store without its -wal: a review).
        let descriptor = try prepareNewFile(newFile, identity: identity)
        defer { close(descriptor) }
        try whileLocked?(store)
        // From here the original main file's bytes are the caller's to have kept (`whileLocked`).
        let fold = try foldSidecar(of: store, beforeRename: beforeFolding)
        defer { fold?.store.close() }
        if fold != nil { try faultInjection?(.folded) }
        let moved = try moveSidecars(into: folder)
        try faultInjection?(.sidecarsMoved)
        let strays = presentSidecars()
        guard strays.isEmpty else { throw StoreReplacementError.sidecarsRemain(path: storePath, sidecars: strays) }
        try putInPlace(newFile, descriptor: descriptor)
        try faultInjection?(.renamed)
        return Result(settled: false, settledSidecars: [], movedSidecars: moved, replacedExisting: true,
                      foldedSidecar: fold.map { FoldedSidecar(name: $0.source, pages: $0.pages) })
    }

    /// No main file: stray sidecars are refused, or moved aside (`moveSidecarsAside`); then the
    /// new file takes the free name (never replacing a store that appeared meanwhile).
    func putInPlaceOfMissingStore(_ newFile: String, identity: FileIdentity, ifDamaged policy: DamagedStorePolicy,
                                  faultInjection: ((Step) throws -> Void)?) throws -> Result {
        let descriptor = try prepareNewFile(newFile, identity: identity)
        defer { close(descriptor) }
        var moved: [String] = []
        let strays = presentSidecars()
        if !strays.isEmpty {
            guard case .moveSidecarsAside(let folder) = policy else {
                throw StoreReplacementError.sidecarsRemain(path: storePath, sidecars: strays)
            }
            moved = try moveSidecars(into: folder)
            try faultInjection?(.sidecarsMoved)
        }
        do {
            try FileMover.move(newFile, to: storePath)
        } catch let error as FileMoveError {
            if case .destinationExists = error { throw StoreReplacementError.renameFailed(path: storePath, code: EEXIST) }
            throw error
        }
        guard FileIdentity(path: storePath) == identity else {
            throw StoreReplacementError.newFileUnusable(path: storePath, reason: "is not the file this process put there: something replaced it in the same instant")
        }
        try faultInjection?(.renamed)
        return Result(settled: false, settledSidecars: [], movedSidecars: moved, replacedExisting: false)
    }

    /// Moves the present sidecars (`-wal`, `-journal`, `-shm`, in that order) into `folder`
    /// under their own names; refuses before moving anything when a name is taken there.
    ///
    /// - Returns: the new paths.
    func moveSidecars(into folder: String) throws -> [String] {
        let name = (storePath as NSString).lastPathComponent
        let sources = presentSidecars()
        let targets = sources.map { folder + "/" + name + String($0.dropFirst(storePath.count)) }
        if let taken = targets.first(where: Self.exists) { throw FileMoveError.destinationExists(path: taken) }
        var moved: [String] = []
        for (source, target) in zip(sources, targets) {
            try FileMover.move(source, to: target)
            moved.append(target)
        }
        return moved
    }
}
