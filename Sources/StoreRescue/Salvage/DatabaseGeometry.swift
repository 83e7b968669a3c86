/// How the pages of a damaged database are laid out: page size, reserved bytes, text encoding,
/// page count, and where the freelist starts — each taken from the header when it can be
/// trusted, otherwise from the `-wal` header or worked out from the pages themselves.
struct DatabaseGeometry: Sendable, Equatable {
    enum PageSizeSource: String, Sendable, Codable {
        /// Bytes 16–17 of a header whose magic and fields are valid.
        case header
        /// The `-wal` header (the main file's header was unreadable).
        case writeAheadLog
        /// Guessed from which page size makes the file's pages parse (`PageSizeGuesser`).
        case guessed
    }

    enum TextEncoding: UInt32, Sendable, Codable {
        case utf8 = 1, utf16le = 2, utf16be = 3

        var name: String {
            switch self {
            case .utf8: return "UTF-8"
            case .utf16le: return "UTF-16le"
            case .utf16be: return "UTF-16be"
            }
        }

        /// Text stored in this encoding, decoded (invalid sequences replaced).
        func string(from bytes: UnsafeRawBufferPointer) -> String {
            switch self {
            case .utf8: return String(decoding: bytes, as: UTF8.self)
            case .utf16le, .utf16be:
                let units = stride(from: 0, to: bytes.count - 1, by: 2).map { index -> UInt16 in
                    let pair = UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
                    return self == .utf16le ? pair : pair.byteSwapped
                }
                return String(decoding: units, as: UTF16.self)
            }
        }
    }

    var pageSize: Int
    var reservedBytes: Int
    var textEncoding: TextEncoding
    var pageSizeSource: PageSizeSource
    /// True when the 100-byte header was valid and used.
    var isHeaderTrusted: Bool
    /// From a trusted header: the first freelist trunk page and the number of free pages.
    var firstFreelistTrunk: UInt32?
    var freelistPageCount: UInt32?
    /// From a trusted header, when its version-valid-for number says it is current.
    var headerPageCount: UInt32?
    /// From a trusted header: whether pointer-map pages exist (auto-vacuum); nil when unknown.
    var isAutoVacuum: Bool?
    /// What could not be taken from the header, for the report.
    var notes: [String]
    /// The header was unusable and no page parses as a b-tree page at any page size: the file
    /// holds nothing SQLite wrote (unless the WAL does).
    var hasNoRecognisablePage = false

    var usableSize: Int { pageSize - reservedBytes }

    /// The encoding page 1's schema rows are written in, told by their first value — `table`,
    /// `index`, `view` or `trigger`, five to seven letters that read as one of them in exactly one
    /// encoding — on page 1 if it is a leaf, else on the leaf its leftmost pointers lead to (at
    /// most four levels down); nil when no such row is found. The header's byte 56 is one byte:
    /// damaged to another valid value, it turned every text in the file into the wrong encoding
    /// and the schema into none.
    static func schemaTextEncoding(pageSize: Int, usableSize: Int, read: (_ offset: Int64, _ buffer: inout [UInt8]) -> Bool) -> TextEncoding? {
        let words = ["table", "index", "view", "trigger"]
        var page: UInt32 = 1
        var buffer = [UInt8](repeating: 0, count: pageSize)
        var columns: [RecordColumn] = []
        for _ in 0..<5 {
            guard read(Int64(page - 1) * Int64(pageSize), &buffer) else { return nil }
            let found: (encoding: TextEncoding?, child: UInt32?) = buffer.withUnsafeBytes { bytes in
                guard let header = BTreePageHeader(page: bytes, pageNumber: page, usableSize: usableSize) else { return (nil, nil) }
                if header.kind == .tableInterior {
                    guard let offset = header.cellOffset(0, in: bytes),
                        let cell = TableCell.interior(in: bytes, at: offset, usableSize: usableSize)
                    else { return (nil, header.rightChild) }
                    return (nil, cell.leftChild)
                }
                guard header.kind == .tableLeaf else { return (nil, nil) }
                for index in 0..<min(header.cellCount, 32) {
                    guard let offset = header.cellOffset(index, in: bytes), let cell = TableCell.leaf(in: bytes, at: offset, usableSize: usableSize)
                    else { continue }
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[cell.localStart..<cell.localStart + cell.localSize])
                    guard RecordDecoder.decode(payload, declaredSize: cell.payloadSize, into: &columns) != .malformed,
                        let first = columns.first, first.isAvailable, first.storageClass == .text
                    else { continue }
                    let text = first.bytes(in: payload)
                    for encoding in [TextEncoding.utf8, .utf16le, .utf16be] where words.contains(encoding.string(from: text)) {
                        return (encoding, nil)
                    }
                }
                return (nil, nil)
            }
            if let encoding = found.encoding { return encoding }
            guard let child = found.child, child > 1 else { return nil }
            page = child
        }
        return nil
    }

    /// Takes the freelist head and count (and auto-vacuum) from the header of the committed page
    /// 1 when it lives in the `-wal`: the main file's header is the last checkpoint's. Only over a
    /// trusted header, and only from bytes that are a header of the same page size.
    mutating func takeCommittedHeader(_ bytes: [UInt8]) {
        guard isHeaderTrusted, let header = SQLiteFileHeader(bytes: bytes), header.hasValidPageSize, header.pageSize == pageSize else { return }
        func u32(_ offset: Int) -> UInt32 {
            UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        firstFreelistTrunk = u32(32)
        freelistPageCount = u32(36)
        isAutoVacuum = header.largestRootPage != 0
    }

    /// Works out the geometry from the first 100 bytes of the main file, its size, the page size a
    /// valid `-wal` declares, and a way to read any bytes of the main file.
    static func determine(
        headerBytes: [UInt8], fileSize: Int64, walPageSize: Int?, read: (_ offset: Int64, _ buffer: inout [UInt8]) -> Bool
    ) -> DatabaseGeometry {
        var notes: [String] = []
        let header = SQLiteFileHeader(bytes: headerBytes)
        var geometry = DatabaseGeometry(
            pageSize: 4096, reservedBytes: 0, textEncoding: .utf8, pageSizeSource: .guessed, isHeaderTrusted: false,
            firstFreelistTrunk: nil, freelistPageCount: nil, headerPageCount: nil, isAutoVacuum: nil, notes: [])
        if let header, header.hasValidPageSize, headerBytes.count >= 100,
            header.pageSize - Int(headerBytes[20]) >= 480, headerBytes[21] == 64, headerBytes[22] == 32, headerBytes[23] == 32
        {
            geometry.pageSize = header.pageSize
            geometry.pageSizeSource = .header
            geometry.isHeaderTrusted = true
            // A header can be valid yet wrong (a replaced byte that still spells a power of two):
            // the pages overrule it only when they clearly say another size.
            if let other = PageSizeGuesser.contradicts(headerPageSize: header.pageSize, fileSize: fileSize, read: read) {
                notes.append("the header's page size \(header.pageSize) does not fit the pages; using \(other), which does")
                geometry.pageSize = other
                geometry.pageSizeSource = .guessed
                geometry.isHeaderTrusted = false
            }
        } else if let walPageSize {
            notes.append("the database header is unreadable; the page size (\(walPageSize)) comes from the -wal header")
            geometry.pageSize = walPageSize
            geometry.pageSizeSource = .writeAheadLog
        } else if let guess = PageSizeGuesser.guess(fileSize: fileSize, read: read) {
            notes.append("the database header is unreadable; page size \(guess) guessed from the pages")
            geometry.pageSize = guess
        } else {
            notes.append("the database header is unreadable and no page parses at any page size; assuming 4096")
            geometry.hasNoRecognisablePage = true
        }
        guard geometry.isHeaderTrusted, let header else {
            if geometry.pageSizeSource != .header { notes.append("text assumed UTF-8, no reserved bytes (Core Data's settings)") }
            geometry.notes = notes
            return geometry
        }
        geometry.reservedBytes = Int(headerBytes[20])
        // Reserved bytes are never used by b-tree content: pages whose cells reach into them say
        // the byte is damaged.
        if geometry.reservedBytes > 0, PageSizeGuesser.contentReaches(into: geometry.pageSize - geometry.reservedBytes,
                                                                        pageSize: geometry.pageSize, fileSize: fileSize, read: read)
        {
            notes.append("the header reserves \(geometry.reservedBytes) bytes per page, but the pages use them; assuming none")
            geometry.reservedBytes = 0
        }
        let named = TextEncoding(rawValue: header.textEncoding)
        let written = schemaTextEncoding(pageSize: geometry.pageSize, usableSize: geometry.usableSize, read: read)
        switch (named, written) {
        case (let named?, let written?) where named != written:
            notes.append("the header names text encoding \(header.textEncoding), but the schema's text is \(written.name); using \(written.name)")
            geometry.textEncoding = written
        case (let named?, _):
            geometry.textEncoding = named
        case (nil, let written?):
            notes.append("the header names text encoding \(header.textEncoding), which does not exist; the schema's text is \(written.name)")
            geometry.textEncoding = written
        case (nil, nil):
            notes.append("the header names text encoding \(header.textEncoding), which does not exist; assuming UTF-8")
        }
        let bytes = headerBytes
        func u32(_ offset: Int) -> UInt32 {
            UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        geometry.firstFreelistTrunk = u32(32)
        geometry.freelistPageCount = u32(36)
        geometry.headerPageCount = header.headerPageCount
        geometry.isAutoVacuum = header.largestRootPage != 0
        geometry.notes = notes
        return geometry
    }
}
