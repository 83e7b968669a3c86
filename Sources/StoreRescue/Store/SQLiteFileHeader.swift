import Foundation

/// The first 100 bytes of an SQLite database file, decoded. Read straight from the file, so it
/// describes a file SQLite itself may refuse to open.
public struct SQLiteFileHeader: Sendable, Equatable, Codable {
    public static let magic = Array("SQLite format 3\u{0}".utf8)
    public static let size = 100

    public var pageSize: Int
    /// 1 for a rollback journal, 2 for WAL (bytes 18–19).
    public var writeVersion: UInt8
    public var readVersion: UInt8
    public var fileChangeCounter: UInt32
    /// The database size in pages from the header, when it is valid (SQLite ≥ 3.7.0 writers).
    public var headerPageCount: UInt32?
    public var textEncoding: UInt32
    public var userVersion: UInt32
    /// Non-zero for auto-vacuum; `incrementalVacuum` tells full (1) from incremental (2).
    public var largestRootPage: UInt32
    public var incrementalVacuum: UInt32
    /// The `SQLITE_VERSION_NUMBER` of the library that last wrote the file.
    public var lastWriterVersionNumber: UInt32

    /// Decodes a header, or returns nil when `bytes` do not start with the SQLite magic.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= Self.size, Array(bytes[0..<16]) == Self.magic else { return nil }
        func u16(_ o: Int) -> UInt32 { UInt32(bytes[o]) << 8 | UInt32(bytes[o + 1]) }
        func u32(_ o: Int) -> UInt32 {
            UInt32(bytes[o]) << 24 | UInt32(bytes[o + 1]) << 16 | UInt32(bytes[o + 2]) << 8 | UInt32(bytes[o + 3])
        }
        let rawPageSize = u16(16)
        pageSize = rawPageSize == 1 ? 65536 : Int(rawPageSize)
        writeVersion = bytes[18]
        readVersion = bytes[19]
        fileChangeCounter = u32(24)
        let inHeaderSize = u32(28)
        let versionValidFor = u32(92)
        headerPageCount = (inHeaderSize > 0 && versionValidFor == fileChangeCounter) ? inHeaderSize : nil
        textEncoding = u32(56)
        userVersion = u32(60)
        largestRootPage = u32(52)
        incrementalVacuum = u32(64)
        lastWriterVersionNumber = u32(96)
    }

    /// True when the page size is one SQLite can write: a power of two from 512 to 65536.
    public var hasValidPageSize: Bool {
        pageSize >= 512 && pageSize <= 65536 && pageSize & (pageSize - 1) == 0
    }

    public var journalMode: String {
        switch writeVersion {
        case 1: return "rollback"
        case 2: return "wal"
        default: return "unknown(\(writeVersion))"
        }
    }

    public var autoVacuum: String {
        if largestRootPage == 0 { return "none" }
        return incrementalVacuum != 0 ? "incremental" : "full"
    }

    public var textEncodingName: String {
        switch textEncoding {
        case 1: return "UTF-8"
        case 2: return "UTF-16le"
        case 3: return "UTF-16be"
        default: return "unknown(\(textEncoding))"
        }
    }

    /// `3040001` → `3.40.1`.
    public var lastWriterVersion: String {
        let n = lastWriterVersionNumber
        return "\(n / 1_000_000).\(n / 1000 % 1000).\(n % 1000)"
    }
}
