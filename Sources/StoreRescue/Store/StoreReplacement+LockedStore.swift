import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension StoreReplacement {
    /// The store as it is under a replacement's lock, for the caller's `whileLocked` check (is it
    /// still what was backed up?) or copy.
    ///
    /// Its reads go through a descriptor the replacement opened once the lock was held and closes
    /// only after releasing it. Opening the store's path again and closing it would release every
    /// POSIX lock this process holds on the file — SQLite's lock among them, silently — so a
    /// check reads through this, never through the path. Usable only inside `whileLocked`.
    public final class LockedStore {
        /// The store's main file.
        public let path: String
        private var descriptor: Int32

        init(path: String, writable: Bool) throws {
            let opened = open(path, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard opened >= 0 else { throw StoreReplacementError.cannotRead(path: path, code: errno) }
            var info = stat()
            guard fstat(opened, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                Self.closeDescriptor(opened)
                throw StoreReplacementError.notARegularFile(path: path)
            }
            self.path = path
            descriptor = opened
        }

        deinit { close() }

        /// The file's size now.
        public func size() throws -> Int64 {
            var info = stat()
            guard descriptor >= 0, fstat(descriptor, &info) == 0 else {
                throw StoreReplacementError.cannotRead(path: path, code: descriptor >= 0 ? errno : EBADF)
            }
            return Int64(info.st_size)
        }

        /// Reads up to `buffer.count` bytes at `offset`; returns how many (0 at the end).
        public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
            guard descriptor >= 0 else { throw StoreReplacementError.cannotRead(path: path, code: EBADF) }
            var total = 0
            while total < buffer.count {
                let count = pread(descriptor, buffer.baseAddress! + total, buffer.count - total, off_t(offset + Int64(total)))
                if count < 0 {
                    if errno == EINTR { continue }
                    throw StoreReplacementError.cannotRead(path: path, code: errno)
                }
                if count == 0 { break }
                total += count
            }
            return total
        }

        /// Hands the whole file to `body`, 1 MiB at a time, in order.
        public func readAll(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while case let count = try read(into: buffer, at: offset), count > 0 {
                try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                offset += Int64(count)
            }
        }

        /// The SHA-256 of the whole file, lowercase hexadecimal.
        public func sha256() throws -> String {
            var hasher = SHA256()
            try readAll { hasher.update(bufferPointer: $0) }
            return hasher.finalize().hexString
        }

        /// Keeps the store's bytes, as they are under the lock, at `destination` (a new name in
        /// an existing folder; nothing there is replaced), so that they outlive the rename over
        /// the store: the quarantine of an upgrade's clean fallback, a damaged store's raw copy.
        ///
        /// On the store's file system, a hard link: no byte is copied, and the old main file
        /// stays at `destination` once the new file takes the store's name. `link` opens and
        /// closes no descriptor of the store, so SQLite's lock is kept. Across file systems (or
        /// where hard links are not supported) the bytes are copied through this descriptor into
        /// a temporary beside `destination` (`SafeFileOutput`), compared (size and SHA-256) with
        /// the store read again, then `fsync`ed and published without replacing anything.
        ///
        /// ```swift
        /// try replacement.replace(with: migrated) { store in
        ///     try store.preserve(at: quarantine + "/default.store")
        /// }
        /// ```
        ///
        /// - Returns: `source` the store's path (where it still is), `destination`, and
        ///   `wasCopied` (false: a hard link).
        /// - Throws: `FileMoveError` (`destinationExists`, `moveFailed`, `copyMismatch`,
        ///   `unreadable`), `SafeFileOutputError` when the copy cannot be written,
        ///   `StoreReplacementError.cannotRead`. Thrown inside `whileLocked`, nothing is replaced.
        @discardableResult
        public func preserve(at destination: String) throws -> FileMover.Move {
            try preserve(at: destination) { source, destination in link(source, destination) == 0 ? 0 : errno }
        }

        /// `preserve`, with the hard link replaceable (tests make it fail with `EXDEV`); `linking`
        /// returns 0 or errno.
        func preserve(at destination: String, linking: (_ source: String, _ destination: String) -> Int32) throws -> FileMover.Move {
            guard descriptor >= 0 else { throw StoreReplacementError.cannotRead(path: path, code: EBADF) }
            // Opened before the link: the quarantine's name for the old bytes must survive a crash.
            let folder = try StoreReplacement.reserveFolder(of: destination)
            switch linking(path, destination) {
            case 0:
                folder.sync()
                return FileMover.Move(source: path, destination: destination, wasCopied: false)
            case EEXIST:
                throw FileMoveError.destinationExists(path: destination)
            case EXDEV, EPERM, ENOTSUP, EOPNOTSUPP, EMLINK:
                try copy(to: destination)
                return FileMover.Move(source: path, destination: destination, wasCopied: true)
            case let code:
                throw FileMoveError.moveFailed(source: path, destination: destination, code: code)
            }
        }

        private func copy(to destination: String) throws {
            if StoreReplacement.exists(destination) { throw FileMoveError.destinationExists(path: destination) }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { throw StoreReplacementError.cannotRead(path: path, code: errno) }
            let output = try SafeFileOutput(destinationPath: destination, permissions: info.st_mode & 0o777)
            defer { output.discard() }
            try readAll { try output.write($0) }
            let copied = try FileMover.digest(output.temporaryPath, reportedAs: destination)
            var hasher = SHA256()
            var size: Int64 = 0
            try readAll { bytes in
                hasher.update(bufferPointer: bytes)
                size += Int64(bytes.count)
            }
            guard copied == FileMover.Digest(size: size, sha256: hasher.finalize()) else {
                throw FileMoveError.copyMismatch(source: path, destination: destination)
            }
            do {
                try output.publish()
            } catch SafeFileOutputError.destinationExists, SafeFileOutputError.destinationIsSymbolicLink {
                throw FileMoveError.destinationExists(path: destination)
            }
        }

        /// Takes a write lock on the bytes SQLite locks (its pending, reserved and shared bytes
        /// at 1 GiB), which no SQLite connection of any process can read or write past, waiting
        /// up to `timeout` for the connections that hold them (false at once when `cancellation`
        /// is set). An open-file-description lock on Linux (not dropped by other descriptors'
        /// closes, and in conflict with this process's own SQLite locks too); a POSIX lock elsewhere.
        func lockAsSQLiteWould(waitingAtMost timeout: TimeInterval, cancellation: CancellationFlag? = nil) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                if tryLock() { return true }
                if Date() >= deadline || cancellation?.isCancelled == true { return false }
                usleep(20_000)
            }
        }

        private func tryLock() -> Bool {
            var lock = flock()
            lock.l_type = Int16(F_WRLCK)
            lock.l_whence = Int16(SEEK_SET)
            lock.l_start = off_t(Self.sqlitePendingByte)
            lock.l_len = 512  // pending byte, reserved byte, 510 shared bytes
            lock.l_pid = 0
            #if os(Linux)
            if fcntl(descriptor, Self.linuxOFDSetLock, &lock) == 0 { return true }
            if errno != EINVAL { return false }  // EAGAIN/EACCES: held; EINVAL: no OFD locks (before Linux 3.15)
            #endif
            return fcntl(descriptor, F_SETLK, &lock) == 0
        }

        /// `PENDING_BYTE` in SQLite's os.h.
        static let sqlitePendingByte = 0x4000_0000
        /// `F_OFD_SETLK` (Linux ≥ 3.15), which Glibc's Swift module does not export.
        static let linuxOFDSetLock: Int32 = 37

        func close() {
            guard descriptor >= 0 else { return }
            Self.closeDescriptor(descriptor)
            descriptor = -1
        }

        private static func closeDescriptor(_ descriptor: Int32) {
            #if canImport(Glibc)
            _ = Glibc.close(descriptor)
            #else
            _ = Darwin.close(descriptor)
            #endif
        }
    }
}
