import Foundation

/// Values written into generated SQL as literals. Every value that comes from a model or a
/// catalog (defaults, entity numbers, names in messages) goes through here or is bound.
enum SQLLiteral {
    static func value(_ value: SQLiteValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let n): return String(n)
        case .real(let d):
            guard d.isFinite else { return d.isNaN ? "NULL" : (d > 0 ? "9e999" : "-9e999") }
            return String(format: "%.17g", d).contains(where: { $0 == "." || $0 == "e" || $0 == "n" })
                ? String(format: "%.17g", d) : String(format: "%.17g", d) + ".0"
        case .text(let text): return string(text)
        case .blob(let data): return "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }

    /// `'text'` with inner quotes doubled.
    static func string(_ text: String) -> String {
        "'" + text.replacingLiterally("'", with: "''") + "'"
    }

    /// `base."ZTABLE"`.
    static func table(_ name: String, in schema: String) -> String {
        schema + "." + name.quotedSQLIdentifier
    }

    /// `r."ZCOLUMN"`.
    static func column(_ name: String, of alias: String) -> String {
        alias + "." + name.quotedSQLIdentifier
    }
}
