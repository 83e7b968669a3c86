/// One token of SQL text, read the way SQLite's tokenizer (`sqlite3GetToken`) reads it, byte for
/// byte: white space and comments separate tokens and are not tokens; a `;` inside a quoted
/// name, a string or a comment is no statement end.
///
/// Used where SQL from a store decides what is run (`VersionWriter.isPlainCreateTable`): such
/// text is hostile, and a check that reads it otherwise than SQLite — splitting at every `;`
/// byte, or at white space only, so that `AS/**/SELECT` is one word — either refuses what is
/// plain or lets through what is not.
///
/// ```swift
/// SQLToken.tokens(of: #"CREATE TABLE "a;b" /* c */ (x)"#)?.map(\.text)
/// // ["CREATE", "TABLE", "\"a;b\"", "(", "x", ")"]
/// ```
struct SQLToken: Equatable {
    enum Kind: Equatable {
        /// A keyword, an unquoted name or a number: a run of SQLite's identifier bytes (ASCII
        /// letters and digits, `_`, `$`, every byte from 0x80).
        case word
        /// A name in `"…"`, `` `…` `` or `[…]`.
        case quotedName
        /// A string literal, `'…'` (SQLite also takes one where a name goes).
        case string
        case semicolon
        /// Any other single byte: `(`, `)`, `,`, `.`, an operator's.
        case punctuation
    }

    var kind: Kind
    /// The token's bytes as they are in the text, quotes included.
    var bytes: ArraySlice<UInt8>

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The tokens of `sql`, or nil when SQLite would stop at an illegal token: an unterminated
    /// quote or bracket, a NUL or a control byte that is not white space outside quotes (inside
    /// quotes they are the name's or literal's bytes; SQLite refuses a schema holding a NUL anyway).
    ///
    /// Stricter than SQLite in one place: a vertical tab (0x0B) is refused wherever it is, where
    /// SQLite takes one that follows other white space as white space.
    static func tokens(of sql: String) -> [SQLToken]? {
        let text = Array(sql.utf8)
        var tokens: [SQLToken] = []
        var index = 0
        while index < text.count {
            let byte = text[index]
            let start = index
            switch byte {
            case 9, 10, 12, 13, 32:
                index += 1
                continue
            case UInt8(ascii: "-") where index + 1 < text.count && text[index + 1] == UInt8(ascii: "-"):
                // To the end of the line (the newline is white space) or of the text.
                index = text[index...].firstIndex(of: 10) ?? text.count
                continue
            case UInt8(ascii: "/") where index + 1 < text.count && text[index + 1] == UInt8(ascii: "*"):
                // To the first `*/` after the opening one (`/*/` does not close it), or to the
                // end of the text: SQLite takes an unterminated comment as white space too.
                index = closingComment(in: text, from: index + 2) ?? text.count
                continue
            case UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "'"):
                guard let end = closingQuote(byte, in: text, from: index + 1) else { return nil }
                index = end + 1
                tokens.append(SQLToken(kind: byte == UInt8(ascii: "'") ? .string : .quotedName, bytes: text[start..<index]))
            case UInt8(ascii: "["):
                guard let end = text[(index + 1)...].firstIndex(of: UInt8(ascii: "]")) else { return nil }
                index = end + 1
                tokens.append(SQLToken(kind: .quotedName, bytes: text[start..<index]))
            case UInt8(ascii: ";"):
                index += 1
                tokens.append(SQLToken(kind: .semicolon, bytes: text[start..<index]))
            case _ where isIdentifierByte(byte):
                while index < text.count, isIdentifierByte(text[index]) { index += 1 }
                tokens.append(SQLToken(kind: .word, bytes: text[start..<index]))
            case 0..<32, 127:
                return nil
            default:
                index += 1
                tokens.append(SQLToken(kind: .punctuation, bytes: text[start..<index]))
            }
        }
        return tokens
    }

    /// Whether this is the keyword `keyword` (an ASCII word, compared without ASCII case).
    func isKeyword(_ keyword: String) -> Bool {
        kind == .word && bytes.count == keyword.utf8.count
            && zip(bytes, keyword.utf8).allSatisfy { Self.foldedASCII($0) == Self.foldedASCII($1) }
    }

    func isPunctuation(_ character: Unicode.Scalar) -> Bool {
        kind == .punctuation && bytes.count == 1 && bytes.first == UInt8(ascii: character)
    }

    /// Whether this token can be a name: a word, a quoted name, or a string (SQLite takes one
    /// where a name goes).
    var isName: Bool {
        kind == .word || kind == .quotedName || kind == .string
    }

    /// The index of the quote that closes one opened before `start` (a doubled quote is part
    /// of the text), or nil.
    private static func closingQuote(_ quote: UInt8, in text: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < text.count {
            if text[index] == quote {
                guard index + 1 < text.count, text[index + 1] == quote else { return index }
                index += 2
            } else {
                index += 1
            }
        }
        return nil
    }

    /// The index just past the `*/` that starts at `start` or later, or nil.
    private static func closingComment(in text: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < text.count {
            if text[index] == UInt8(ascii: "*"), text[index + 1] == UInt8(ascii: "/") { return index + 2 }
            index += 1
        }
        return nil
    }

    /// SQLite's `IdChar`: ASCII letters and digits, `_`, `$` and every byte from 0x80.
    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "$"), 0x80...:
            return true
        default:
            return false
        }
    }

    private static func foldedASCII(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
