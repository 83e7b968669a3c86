import Foundation

/// Turns a custom stage's expression, written with model names (`substr(content, 1, 40)`), into
/// SQL over the migrator's tables (`substr((r."ZCONTENT"), 1, 40)`), so that catalogs never
/// depend on column names.
///
/// A small tokenizer of SQLite's expression grammar: string and blob literals, numbers, quoted
/// identifiers (`"name"`, `` `name` ``, `[name]`), bare identifiers, operators. A bare or quoted
/// identifier that names a property in scope becomes that property's SQL; one followed by `(` is
/// a function; SQLite's expression keywords stay as they are. Anything else is refused with a
/// message naming it: an unknown name, a qualified name (`t.x`), a parameter (`?`, `:x`), a
/// subquery (`SELECT`), a `;`.
struct ExpressionTranslator {
    /// What an expression may name: property name → the SQL that gives its value.
    let scope: [String: String]

    struct Failure: Error, Equatable, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// Keywords that may appear in an expression and never name a property.
    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "NULL", "IS", "IN", "LIKE", "GLOB", "REGEXP", "MATCH", "ESCAPE", "BETWEEN", "CASE", "WHEN",
        "THEN", "ELSE", "END", "CAST", "AS", "COLLATE", "EXISTS", "DISTINCT", "TRUE", "FALSE", "ISNULL", "NOTNULL",
        "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "INTEGER", "REAL", "TEXT", "BLOB", "NUMERIC", "NOCASE",
        "BINARY", "RTRIM", "FILTER", "OVER", "ALL", "ASC", "DESC",
    ]
    /// Keywords that would let an expression reach beyond the object it is about.
    static let refusedKeywords: Set<String> = ["SELECT", "FROM", "WHERE", "VALUES", "WITH", "INSERT", "UPDATE", "DELETE", "PRAGMA", "ATTACH", "RAISE"]
    /// Functions that reach outside the object: `fts3_tokenizer` returns a tokenizer's address in
    /// this process's memory (a hostile catalog's map wrote it into the store: its status even
    /// changed from run to run with the address), `load_extension` loads code.
    static let refusedFunctions: Set<String> = ["FTS3_TOKENIZER", "LOAD_EXTENSION"]
    /// Functions whose result differs at every call: an expression holding one must be
    /// evaluated once per object (the migrator does not copy it into later expressions).
    static let nondeterministicFunctions: Set<String> = ["UUID", "RANDOM", "RANDOMBLOB", "CHANGES", "LAST_INSERT_ROWID", "TOTAL_CHANGES"]
    /// Those whose value differs from one object to the next within the writer's one statement
    /// (`INSERT … SELECT`): drawn values, and the rowid of the row inserted before. `changes()`
    /// and `total_changes()` are the same for every object of a statement (SQLite counts a
    /// statement's changes when it ends): a uniqueness check compares them as they are (a
    /// review's dry run took them for drawn and passed objects the run then refused).
    static let drawnFunctions: Set<String> = ["UUID", "RANDOM", "RANDOMBLOB", "LAST_INSERT_ROWID"]

    /// The SQL for `expression`, every name replaced by its SQL in parentheses.
    func translate(_ expression: String) throws(Failure) -> String {
        try translateReporting(expression).sql
    }

    /// The SQL, and whether the expression calls a function whose result differs at each call.
    func translateReporting(_ expression: String) throws(Failure) -> (sql: String, isNondeterministic: Bool) {
        // In any case: SQLite reads `/*STORERESCUE:DRAWN*/` in a literal as text, but the mark
        // must mean only the translator's own (a review's literal changed the check's values).
        if expression.range(of: MigrationFunctions.drawnMark, options: .caseInsensitive) != nil {
            throw Failure(reason: "\(MigrationFunctions.drawnMark) is the migrator's own mark; an expression may not hold it")
        }
        let scalars = Array(expression.unicodeScalars)
        var output = ""
        var index = 0
        var isNondeterministic = false
        var depth = 0
        func peekNonSpace(from start: Int) -> Unicode.Scalar? {
            var i = start
            while i < scalars.count, scalars[i].properties.isWhitespace { i += 1 }
            return i < scalars.count ? scalars[i] : nil
        }
        while index < scalars.count {
            let c = scalars[index]
            switch c {
            case "'":
                let end = try Self.closing("'", in: scalars, from: index, what: "string")
                output += String(String.UnicodeScalarView(scalars[index...end]))
                index = end + 1
            case "\"", "`", "[":
                let close: Unicode.Scalar = c == "[" ? "]" : c
                let end = try Self.closing(close, in: scalars, from: index, what: "quoted name")
                var name = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                if c != "[" { name = name.replacingLiterally(String(c) + String(c), with: String(c)) }
                if peekNonSpace(from: end + 1) == "." { throw Failure(reason: "\"\(name)\" is qualified with a table name; name the property alone") }
                guard let sql = scope[name] else { throw unknown(name) }
                output += "(" + sql + ")"
                index = end + 1
            case _ where ("0"..."9").contains(c) || (c == "." && index + 1 < scalars.count && ("0"..."9").contains(scalars[index + 1])):
                // A number: digits, a fraction, an exponent, or hexadecimal (0x1F).
                var end = index + 1
                let isHex = c == "0" && end < scalars.count && (scalars[end] == "x" || scalars[end] == "X")
                if isHex { end += 1 }
                while end < scalars.count {
                    let d = scalars[end]
                    if ("0"..."9").contains(d) || d == "." || (isHex && d.properties.isASCIIHexDigit) {
                        end += 1
                    } else if !isHex, d == "e" || d == "E" {
                        end += 1
                        if end < scalars.count, scalars[end] == "+" || scalars[end] == "-" { end += 1 }
                    } else {
                        break
                    }
                }
                output += String(String.UnicodeScalarView(scalars[index..<end]))
                index = end
            case "?", ":", "@", "$":
                throw Failure(reason: "parameters (\(c)…) are not allowed in an expression")
            case ";":
                throw Failure(reason: "\";\" is not allowed: an expression is one value")
            case _ where c == "_" || c.properties.isAlphabetic:
                var end = index
                while end < scalars.count, scalars[end] == "_" || scalars[end] == "$" || scalars[end].properties.isAlphabetic
                    || ("0"..."9").contains(scalars[end])
                {
                    end += 1
                }
                let word = String(String.UnicodeScalarView(scalars[index..<end]))
                let upper = word.uppercased()
                if (upper == "X" || upper == "x"), end < scalars.count, scalars[end] == "'" {
                    let close = try Self.closing("'", in: scalars, from: end, what: "blob literal")
                    output += String(String.UnicodeScalarView(scalars[index...close]))
                    index = close + 1
                    continue
                }
                let next = peekNonSpace(from: end)
                if Self.refusedKeywords.contains(upper) {
                    throw Failure(reason: "\(word) is not allowed: an expression computes one value from the object's own properties")
                }
                if next == "." { throw Failure(reason: "\"\(word).…\" is a qualified name; name the property alone") }
                if next == "(" && scope[word] == nil {
                    if Self.refusedFunctions.contains(upper) {
                        throw Failure(reason: "\(word)() is not allowed: it reaches outside the object (a memory address, or code to load)")
                    }
                    if Self.nondeterministicFunctions.contains(upper) { isNondeterministic = true }
                    if Self.drawnFunctions.contains(upper) {
                        // Marked, so a uniqueness check can tell which objects' values it draws:
                        // the mark, the name in capitals and its "(" with nothing between, the
                        // one form `MigrationFunctions.probing` replaces (`random ()` once went
                        // unprobed, and the dry run's answer then changed from run to run).
                        output += MigrationFunctions.drawnMark + upper
                        while end < scalars.count, scalars[end] != "(" { end += 1 }
                        index = end
                        continue
                    }
                    if upper == "PRINTF" || upper == "FORMAT" { try Self.checkFormat(of: word, in: scalars, after: end) }
                    output += word
                } else if let sql = scope[word] {
                    output += "(" + sql + ")"
                } else if Self.keywords.contains(upper) {
                    output += word
                } else {
                    throw unknown(word)
                }
                index = end
            case "(":
                depth += 1
                output.unicodeScalars.append(c)
                index += 1
            case ")":
                depth -= 1
                guard depth >= 0 else { throw Failure(reason: "unbalanced \")\"") }
                output.unicodeScalars.append(c)
                index += 1
            default:
                output.unicodeScalars.append(c)
                index += 1
            }
        }
        guard depth == 0 else { throw Failure(reason: "unbalanced \"(\"") }
        guard !output.trimmingCharacters(in: .whitespaces).isEmpty else { throw Failure(reason: "the expression is empty") }
        return (output, isNondeterministic)
    }

    /// The widest field `printf`/`format` may pad to. SQLite (3.40) spends its time in a loop per
    /// character past its length limit: `printf('%.*c', 2147483647, 'x')` costs 17 s per object.
    static let maximumFormatWidth = 100_000

    /// `printf(` / `format(` must start with a literal format whose widths and precisions are
    /// written in it (no `*`) and at most `maximumFormatWidth`.
    private static func checkFormat(of function: String, in scalars: [Unicode.Scalar], after end: Int) throws(Failure) {
        var i = end
        while i < scalars.count, scalars[i] != "(" { i += 1 }
        i += 1
        while i < scalars.count, scalars[i].properties.isWhitespace { i += 1 }
        guard i < scalars.count, scalars[i] == "'" else {
            throw Failure(reason: "\(function)'s format must be a string literal ('%05d'), so that its widths can be checked")
        }
        let close = try closing("'", in: scalars, from: i, what: "string")
        let format = Array(String(String.UnicodeScalarView(scalars[(i + 1)..<close])).replacingLiterally("''", with: "'").unicodeScalars)
        var j = 0
        while j < format.count {
            guard format[j] == "%" else { j += 1; continue }
            j += 1
            while j < format.count, "-+ 0#!,".unicodeScalars.contains(format[j]) { j += 1 }
            for part in 0..<2 {
                if part == 1 {
                    guard j < format.count, format[j] == "." else { break }
                    j += 1
                }
                if j < format.count, format[j] == "*" {
                    throw Failure(reason: "\(function)'s format takes a width or precision from an argument (*); write it in the format")
                }
                var digits = 0
                var value = 0
                while j < format.count, ("0"..."9").contains(format[j]) {
                    digits += 1
                    if digits <= 9 { value = value * 10 + Int(format[j].value - 48) }
                    j += 1
                }
                if digits > 9 || value > maximumFormatWidth {
                    throw Failure(reason: "\(function)'s format pads a field wider than \(maximumFormatWidth) characters")
                }
            }
            j += 1  // the conversion character (or the second % of %%)
        }
    }

    private func unknown(_ name: String) -> Failure {
        let known = scope.keys.sorted()
        return Failure(reason: "\"\(name)\" is not a property here (known: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
    }

    private static func closing(_ quote: Unicode.Scalar, in scalars: [Unicode.Scalar], from start: Int, what: String) throws(Failure) -> Int {
        var i = start + 1
        while i < scalars.count {
            if scalars[i] == quote {
                if i + 1 < scalars.count, scalars[i + 1] == quote, quote != "]" {
                    i += 2
                    continue
                }
                return i
            }
            i += 1
        }
        throw Failure(reason: "unterminated \(what)")
    }
}
