import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells whether a settled store (its WAL folded into the main file) still holds exactly the
/// database a backup snapshot was taken of: page for page, except the page-1 header fields that
/// settling, the online backup or another SQLite library rewrite without changing the content.
///
/// `upgrade` runs it while it holds the store's exclusive lock, just before the rename: any
/// transaction another process committed after the backup makes a page differ (or the page count,
/// or the schema cookie), so the upgraded store can never replace data it was not made from.
///
/// Ignored header bytes (sqlite.org/fileformat2.html, "The Database Header"): 18–19 (write and
/// read version: WAL or rollback), 24–27 (file change counter), 40–43 (the schema cookie: the
/// online backup sets the copy's to its own previous value plus one, whatever the source's — a
/// schema change still shows in page 1's content, which is compared), 92–95 (version-valid-for)
/// and 96–99 (the writing library's version number). Checked against real files: a WAL store
/// snapshotted with the backup API, then switched to rollback mode, differs in exactly 18, 19, 27
/// and 95.
enum SnapshotComparison {
    static let ignoredHeaderRanges: [Range<Int>] = [18..<20, 24..<28, 40..<44, 92..<100]

    /// What differs, or nil when the two files hold the same database.
    struct Difference: Equatable, CustomStringConvertible {
        var description: String
    }

    /// Compares the store's main file — `storeSize` bytes, read through `readStore(buffer,
    /// offset)` (the replacement's locked descriptor: opening and closing the path again would
    /// drop SQLite's lock) — with the file at `snapshot`.
    static func compare(
        storeSize: Int64, readStore: (UnsafeMutableRawBufferPointer, Int64) throws -> Int, snapshot: String,
        bufferSize: Int = 1 << 20
    ) throws -> Difference? {
        let other: ReadableFile
        do { other = try ReadableFile(path: snapshot, followsSymlinks: false) } catch {
            throw UpgradeError.snapshotUnreadable(path: snapshot, reason: error.description)
        }
        // Bytes after the database's last page (garbage appended to the file) are no part of
        // the database: SQLite ignores them, and the online backup copies pages only. A store
        // that grew by pages says so in its header's page count (bytes 28–31, compared).
        guard storeSize >= other.size else {
            return Difference(description: "the store is \(storeSize) bytes, its snapshot \(other.size)")
        }
        let left = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        let right = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer {
            left.deallocate()
            right.deallocate()
        }
        var offset: Int64 = 0
        while offset < other.size {
            let wanted = Int(min(Int64(bufferSize), other.size - offset))
            let leftCount: Int, rightCount: Int
            do {
                leftCount = try readStore(UnsafeMutableRawBufferPointer(rebasing: left[0..<wanted]), offset)
                rightCount = try other.read(into: UnsafeMutableRawBufferPointer(rebasing: right[0..<wanted]), at: offset)
            } catch {
                throw UpgradeError.snapshotUnreadable(path: snapshot, reason: "\(error)")
            }
            guard leftCount == wanted, rightCount == wanted else {
                return Difference(description: "a file ended early near byte \(offset)")
            }
            if offset == 0 {
                for range in ignoredHeaderRanges where range.upperBound <= wanted {
                    for index in range {
                        left[index] = 0
                        right[index] = 0
                    }
                }
            }
            if memcmp(left.baseAddress!, right.baseAddress!, wanted) != 0 {
                var index = 0
                while index < wanted && left[index] == right[index] { index += 1 }
                return Difference(description: "their content differs from byte \(offset + Int64(index)) on")
            }
            offset += Int64(wanted)
        }
        return nil
    }
}
