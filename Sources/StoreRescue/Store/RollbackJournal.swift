import Foundation

/// What a hot rollback `-journal` puts back when SQLite rolls it back (file format §3): for each
/// page, the original content it journaled, and the database size before the transaction.
///
/// Read by SQLite's playback rules (`pager_playback` in `pager.c`), so that a fold made from it
/// holds what SQLite would read:
/// - the first header (8-byte magic, record count, checksum nonce, original size in pages,
///   sector size, page size) must be whole, with a page size and sector size SQLite accepts;
///   a journal without the magic (zeroed by PERSIST mode, empty) is not hot: nil;
/// - records follow each header, one sector in; a record count of `0xFFFFFFFF` means "as many
///   as the file holds"; each segment's next header starts at the next sector boundary, and the
///   playback ends at the first header without the magic or that the file cannot hold;
/// - a record with page 0 or the pending-byte page ends the playback; one for a page past the
///   original size is skipped, its checksum unread; one whose checksum (the segment's nonce
///   plus every 200th byte of the page, from the end) fails ends the playback; every other
///   record is written in turn, so a page's last record wins (SQLite replays them all);
/// - the database is cut (or extended) to the original size before any record is applied.
///
/// A journal that names a super-journal (a transaction across attached databases, which Core
/// Data never makes) is reported (`namesSuperJournal`): whether SQLite plays it back depends on
/// another file, so it is not folded.
///
/// Written here rather than by asking SQLite: SQLite plays a hot journal back only into the
/// store itself, and a damaged store must not be written (`StoreReplacement`).
struct RollbackJournal: Sendable {
    static let magic: [UInt8] = [0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7]
    static let headerFields = 28
    /// `PENDING_BYTE`: the page holding it is never journaled.
    static let pendingByte: Int64 = 0x4000_0000

    var pageSize: Int
    /// The database size in pages before the transaction the journal undoes.
    var originalPageCount: UInt32
    /// Page number → offset of its journaled content (the page's last record: SQLite writes
    /// every record in turn).
    var pages: [UInt32: Int64]
    var namesSuperJournal: Bool

    /// Reads the journal open at `descriptor` (`size` bytes); nil when it is not a hot journal
    /// SQLite would play back (see the type's discussion).
    static func read(descriptor: Int32, size: Int64) -> RollbackJournal? {
        guard size >= Int64(headerFields) else { return nil }
        var header = [UInt8](repeating: 0, count: headerFields)
        guard FileReading.read(descriptor, into: &header, at: 0) == headerFields, Array(header[0..<8]) == magic else { return nil }
        let pageSize = Int(word(header, 24)), sectorSize = Int(word(header, 20))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0,
              sectorSize >= 32, sectorSize <= 65536, sectorSize & (sectorSize - 1) == 0,
              size >= Int64(sectorSize)
        else { return nil }
        var journal = RollbackJournal(pageSize: pageSize, originalPageCount: word(header, 16), pages: [:], namesSuperJournal: false)
        if size >= 16 {
            var tail = [UInt8](repeating: 0, count: 16)
            if FileReading.read(descriptor, into: &tail, at: size - 16) == 16, Array(tail[8..<16]) == magic {
                let length = Int64(word(tail, 0))
                journal.namesSuperJournal = length > 0 && length <= size - 16
            }
        }
        let recordSize = Int64(pageSize + 8)
        let pendingPage = UInt32(truncatingIfNeeded: pendingByte / Int64(pageSize) + 1)
        var record = [UInt8](repeating: 0, count: Int(recordSize))
        var headerOffset: Int64 = 0
        var segmentHeader = header
        while true {
            let nonce = word(segmentHeader, 12)
            let recordsStart = headerOffset + Int64(sectorSize)
            var count = Int64(word(segmentHeader, 8))
            if count == 0xFFFF_FFFF { count = max(0, (size - recordsStart) / recordSize) }
            var offset = recordsStart
            for _ in 0..<count {
                guard offset + recordSize <= size, FileReading.read(descriptor, into: &record, at: offset) == record.count else {
                    return journal  // a short read ends the playback
                }
                // `pager_playback_one_page`'s order: page 0 or the pending-byte page ends it; a page
                // past the original size is skipped unchecked; a bad checksum ends it (a review
                // found both orders reversed, and the first record winning).
                let page = word(record, 0)
                guard page != 0, page != pendingPage else { return journal }
                offset += recordSize
                guard page <= journal.originalPageCount else { continue }
                guard checksum(record, pageSize: pageSize, nonce: nonce) == word(record, 4 + pageSize) else { return journal }
                journal.pages[page] = offset - recordSize + 4
            }
            // The next segment's header, at the next sector boundary.
            headerOffset = offset == 0 ? 0 : ((offset - 1) / Int64(sectorSize) + 1) * Int64(sectorSize)
            guard headerOffset + Int64(sectorSize) <= size,
                  FileReading.read(descriptor, into: &segmentHeader, at: headerOffset) == headerFields,
                  Array(segmentHeader[0..<8]) == magic
            else { return journal }
        }
    }

    /// `pager_cksum`: the nonce plus every 200th byte of the page, from 200 bytes before its end.
    static func checksum(_ record: [UInt8], pageSize: Int, nonce: UInt32) -> UInt32 {
        var sum = nonce
        var index = pageSize - 200
        while index > 0 {
            sum &+= UInt32(record[4 + index])
            index -= 200
        }
        return sum
    }

    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
