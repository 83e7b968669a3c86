/// Works out the page size of a database from its pages, for a header that is gone or wrong.
///
/// Over the same stretch of the file, each candidate size S reads a page at every multiple of S.
/// Every true page start is a multiple of any smaller size, so for S at most the true size T the
/// number of pages that parse as b-tree pages is about the same, while for S above T it halves
/// with each doubling. And the fraction of reads that parse drops below T (reads land mid-page).
/// So T is the largest size whose count is near the best count.
enum PageSizeGuesser {
    static let candidates = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
    /// How much of the file is read, once: enough to see a few dozen pages of any size.
    static let region: Int64 = 1 << 20
    /// Fewer plausible pages than this is no evidence against a header.
    static let minimumEvidence = 4

    struct Evidence {
        /// Reads that parsed as a b-tree page with cells, and all reads made.
        var plausible: Int
        var reads: Int
        var fraction: Double { reads == 0 ? 0 : Double(plausible) / Double(reads) }
    }

    /// The likely page size, or nil when no page parses at any size.
    static func guess(fileSize: Int64, read: (_ offset: Int64, _ buffer: inout [UInt8]) -> Bool) -> Int? {
        let evidence = gather(fileSize: fileSize, read: read)
        return choose(evidence)
    }

    /// Whether the pages contradict `headerPageSize` clearly enough to overrule the header: another
    /// size is the likely one, with enough pages behind it, and the header's size either finds
    /// far fewer pages (too large) or parses far less often (too small).
    static func contradicts(headerPageSize: Int, fileSize: Int64, read: (_ offset: Int64, _ buffer: inout [UInt8]) -> Bool) -> Int? {
        let evidence = gather(fileSize: fileSize, read: read)
        guard let likely = choose(evidence), likely != headerPageSize, let best = evidence[likely],
            best.plausible >= minimumEvidence, let header = evidence[headerPageSize]
        else { return nil }
        let wrong = headerPageSize > likely
            ? Double(header.plausible) < 0.5 * Double(best.plausible)
            : header.fraction < 0.5 * best.fraction
        return wrong ? likely : nil
    }

    private static func choose(_ evidence: [Int: Evidence]) -> Int? {
        guard let most = evidence.values.map(\.plausible).max(), most > 0 else { return nil }
        return candidates.last { (evidence[$0]?.plausible ?? 0) * 4 >= most * 3 }
    }

    private static func gather(fileSize: Int64, read: (_ offset: Int64, _ buffer: inout [UInt8]) -> Bool) -> [Int: Evidence] {
        let length = Int(min(fileSize, region))
        var bytes = [UInt8](repeating: 0, count: length)
        guard length > 0, read(0, &bytes) else { return [:] }
        var result: [Int: Evidence] = [:]
        bytes.withUnsafeBytes { file in
            for size in candidates {
                var evidence = Evidence(plausible: 0, reads: 0)
                var offset = size  // page 1 starts with the file header: skipped
                while offset + size <= length {
                    evidence.reads += 1
                    let page = UnsafeRawBufferPointer(rebasing: file[offset..<offset + size])
                    if let header = BTreePageHeader(page: page, pageNumber: UInt32(offset / size + 1), usableSize: size),
                        header.cellCount > 0, header.cellOffset(0, in: page) != nil, header.cellOffset(header.cellCount - 1, in: page) != nil
                    {
                        evidence.plausible += 1
                    }
                    offset += size
                }
                result[size] = evidence
            }
        }
        return result
    }

    /// Whether b-tree pages (read at `pageSize`, over the first `region` bytes) have cells or a
    /// content area at or beyond `usableSize`: a reserved-bytes value the pages contradict.
    static func contentReaches(into usableSize: Int, pageSize: Int, fileSize: Int64, read: (_ offset: Int64, _ buffer: inout [UInt8]) -> Bool) -> Bool {
        let length = Int(min(fileSize, region)) / pageSize * pageSize
        var bytes = [UInt8](repeating: 0, count: length)
        guard length > 0, read(0, &bytes) else { return false }
        return bytes.withUnsafeBytes { file in
            var offset = pageSize
            while offset + pageSize <= length {
                let page = UnsafeRawBufferPointer(rebasing: file[offset..<offset + pageSize])
                if let header = BTreePageHeader(page: page, pageNumber: UInt32(offset / pageSize + 1), usableSize: pageSize), header.cellCount > 0,
                    (0..<header.cellCount).contains(where: { (header.cellOffset($0, in: page) ?? 0) >= usableSize })
                {
                    return true
                }
                offset += pageSize
            }
            return false
        }
    }
}
