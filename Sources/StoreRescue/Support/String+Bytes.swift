/// Byte-level (UTF-8) comparisons of text that names a file or goes into SQL or a shell.
///
/// Swift's `String` compares `Character`s, with canonical equivalence: `"Caf\u{E9}" ==
/// "Cafe\u{301}"` is true, though they name two files on Linux; `"s\u{600}-wal".hasSuffix("-wal")`
/// is false (U+0600 joins the character after it), though the file system sees `-wal` there; a
/// quote or a `;` followed by a combining mark is another character than the quote. SQLite, the
/// file system and the shell read bytes, and so must every check that decides what they are
/// given (reviews rv7: `backup --keep` pruned another store's backups; a new store was written at
/// another store's `-wal`).
extension String {
    /// The same bytes: the same file name, the same SQL text (not canonical equivalence).
    func hasSameBytes(as other: String) -> Bool {
        utf8.elementsEqual(other.utf8)
    }

    /// Whether the UTF-8 bytes end with `suffix`'s.
    func hasByteSuffix(_ suffix: String) -> Bool {
        utf8.count >= suffix.utf8.count && utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
    }

    /// Whether the UTF-8 bytes begin with `prefix`'s.
    func hasBytePrefix(_ prefix: String) -> Bool {
        utf8.count >= prefix.utf8.count && utf8.prefix(prefix.utf8.count).elementsEqual(prefix.utf8)
    }

    /// Whether the UTF-8 bytes begin with `prefix`'s, ASCII letters compared without case (the
    /// way SQLite compares names).
    func hasASCIICaseInsensitiveBytePrefix(_ prefix: String) -> Bool {
        func folded(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }
        return utf8.count >= prefix.utf8.count && zip(utf8, prefix.utf8).allSatisfy { folded($0) == folded($1) }
    }

    /// The name as SQLite tells names apart: its UTF-8 bytes with ASCII letters folded (SQLite
    /// folds ASCII only; `uppercased()` also folds `ı` to `I` and `ſ` to `S`, and `==` compares
    /// canonically, so `Z_PR\u{131}MARYKEY` was Core Data's `Z_PRIMARYKEY` to it). ASCII letters
    /// are folded to upper case, so keys of ASCII names sort as `uppercased()` sorted them
    /// (`SQLiteNameKey.precedes`): `match` lists its differences in that order.
    var sqliteNameKey: [UInt8] {
        utf8.map { (97...122).contains($0) ? $0 - 32 : $0 }
    }

    /// Whether `self` and `other` name the same table, column or index to SQLite.
    func isSameSQLiteName(as other: String) -> Bool {
        sqliteNameKey == other.sqliteNameKey
    }

    /// Whether the UTF-8 bytes hold `part`'s, ASCII letters compared without case.
    func containsASCIICaseInsensitiveBytes(_ part: String) -> Bool {
        let haystack = sqliteNameKey, needle = part.sqliteNameKey
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<start + needle.count].elementsEqual(needle)
        }
    }

    /// `path`'s folder and last component, split at its last `/` byte: nil without one.
    var splitAtLastSlash: (folder: String, name: String)? {
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        // Decoded from the bytes: `String` slicing rounds an index to a character, and `/` with
        // a combining mark after it is one character.
        return (String(decoding: utf8[..<slash], as: UTF8.self), String(decoding: utf8[utf8.index(after: slash)...], as: UTF8.self))
    }

    /// This string with every occurrence of `target` replaced by `replacement`, compared byte
    /// for byte in UTF-8 (so scalar for scalar).
    ///
    /// Why not Foundation's `replacingOccurrences(of:with:)`: it compares composed character
    /// sequences, so a quote followed by a combining mark (`'` U+0301) is not a quote to it, and
    /// is left undoubled: `"a'\u{301}b"` came back unchanged from the SQL literal quoting, and a
    /// table name `x"\u{301} …` from a hostile store ended its quoted identifier early — the
    /// rest of the name read as SQL. SQLite and the shell read bytes; so does this. Searching
    /// UTF-8 for a valid UTF-8 `target` can only match at scalar boundaries (a lead byte never
    /// occurs inside a sequence), so the result is valid UTF-8. It is also what the migration's
    /// SQL rewriting wants, and several times faster than Foundation's bridged search on Linux
    /// (a catalog of 10,000 create steps spent 15% of its `upgrade` there).
    ///
    /// - Precondition: `target` is not empty.
    func replacingLiterally(_ target: String, with replacement: String) -> String {
        precondition(!target.isEmpty, "an empty target")
        var source = self
        return source.withUTF8 { text in
            let pattern = Array(target.utf8)
            let first = pattern[0]
            let count = text.count, length = pattern.count
            var output: [UInt8] = []
            var copied = 0
            var index = 0
            while index + length <= count {
                guard text[index] == first else {
                    index += 1
                    continue
                }
                var matches = true
                for offset in 1..<length where text[index + offset] != pattern[offset] {
                    matches = false
                    break
                }
                guard matches else {
                    index += 1
                    continue
                }
                if output.isEmpty { output.reserveCapacity(count + 16) }
                output.append(contentsOf: text[copied..<index])
                output.append(contentsOf: replacement.utf8)
                index += length
                copied = index
            }
            guard copied > 0 else { return self }
            output.append(contentsOf: text[copied..<count])
            return String(decoding: output, as: UTF8.self)
        }
    }
}

/// Orders `String.sqliteNameKey`s: bytes compared in turn, a shorter key first.
enum SQLiteNameKey {
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.lexicographicallyPrecedes(b)
    }
}
