import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte-for-byte copy of a store's files, for the one case the online backup cannot handle: a
/// store too damaged for SQLite to read, about to be replaced by `restore --force`. Its bytes are
/// kept so that nothing is lost, in `<folder>/<store file name>.<UTC time>[-n].raw/`.
enum RawStoreCopy {
    /// Copies the store's main file and its `-wal`/`-shm`/`-journal` into a new folder in `folder`.
    ///
    /// - Returns: the new folder.
    /// - Throws: `BackupError.destinationUnusable`, `SafeFileOutputError`, `GzipError.unreadable`.
    static func copy(store: String, into folder: String, date: Date) throws -> String {
        let parent = try BackupRunner.prepareDestination(folder)
        let name = (store as NSString).lastPathComponent
        var target = ""
        for suffix in 0..<1000 {
            let candidate = parent + "/" + name + "." + BackupNaming.timestamp(date) + (suffix == 0 ? "" : "-\(suffix)") + ".raw"
            if mkdir(candidate, 0o700) == 0 {
                target = candidate
                break
            }
            guard errno == EEXIST else {
                throw BackupError.destinationUnusable(path: parent, reason: SafeFileOutput.describe(errno))
            }
        }
        guard !target.isEmpty else { throw BackupError.destinationUnusable(path: parent, reason: "no free name for a raw copy") }
        for file in [store] + BackupRestorer.sidecarSuffixes.map({ store + $0 }) {
            var status = stat()
            guard lstat(file, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
            try copyFile(file, to: target + "/" + (file as NSString).lastPathComponent)
        }
        SafeFileOutput.syncFolder(parent)
        return target
    }

    private static func copyFile(_ source: String, to destination: String) throws {
        let input: ReadableFile
        do { input = try ReadableFile(path: source, followsSymlinks: false) } catch {
            throw GzipError.unreadable(path: source, reason: error.description)
        }
        let output = try SafeFileOutput(destinationPath: destination)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            do { count = try input.read(into: buffer) } catch { throw GzipError.unreadable(path: source, reason: error.description) }
            if count == 0 { break }
            try output.write(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
        }
        try output.publish()
    }
}
