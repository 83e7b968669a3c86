import Foundation
import SRSQLite

/// The SQL functions migration statements call, registered on the connection that runs them
/// (never reachable from a store's own schema: `SQLITE_DIRECTONLY`).
///
/// - `uuid()`: a new random UUID, as the 16 bytes Core Data stores (custom stages use it to
///   give each object an identifier).
/// - `storerescue_convert(value, type, entity, attribute, pk)`: `value` in the storage form of
///   attribute type `type` (`AttributeType.rawValue`); a value that does not convert stops the
///   statement with an error naming the entity, attribute, `Z_PK` and value.
/// - `storerescue_fits(value, type)`: 1 when `value` converts, else 0 (for dry-run counts).
/// - `storerescue_missing(entity, attribute, pk)`: stops the statement, as a value that does not
///   convert does: a custom step left a required attribute without a value. Only ever reached
///   through `COALESCE(value, storerescue_missing(…))` (`requiring`), so it costs nothing per row.
/// - `storerescue_convert_or_null(…)` and `storerescue_missing_or_null(…)`: the same, but NULL
///   where those stop the statement (`nonStopping`), for checks that read the writer's values and
///   must leave a value that does not convert to the check that reports it.
enum MigrationFunctions {
    static let convert = "storerescue_convert"
    static let fits = "storerescue_fits"
    static let missing = "storerescue_missing"
    static let convertOrNull = "storerescue_convert_or_null"
    static let missingOrNull = "storerescue_missing_or_null"
    static let convertOrKeep = "storerescue_convert_or_keep"
    /// The prefix of a conversion error's message, so the migrator can tell it from SQLite's own.
    static let conversionFailurePrefix = "storerescue: value does not convert: "

    static func register(on connection: SQLiteConnection) throws {
        try connection.registerFunction("uuid", argumentCount: 0, isDeterministic: false) { _ in
            .blob(StorageValue.uuidBytes(UUID()))
        }
        // Values already in storage form stay in C (srsqlite_convert_fast); the rest come here.
        try connection.check(srsqlite_register_convert(connection.handle, convert, { context, count, arguments in
            guard let context else { return }
            let values = (0..<Int(count)).map { SQLiteConnection.value(of: arguments?[$0]) }
            do {
                SQLiteConnection.setResult(try MigrationFunctions.convertSlowly(values), on: context)
            } catch {
                sqlite3_result_error(context, "\(error)", -1)
            }
        }))
        try connection.check(srsqlite_register_convert(connection.handle, convertOrNull, { context, count, arguments in
            guard let context else { return }
            let values = (0..<Int(count)).map { SQLiteConnection.value(of: arguments?[$0]) }
            SQLiteConnection.setResult((try? MigrationFunctions.convertSlowly(values)) ?? .null, on: context)
        }))
        try connection.check(srsqlite_register_convert(connection.handle, convertOrKeep, { context, count, arguments in
            guard let context else { return }
            let values = (0..<Int(count)).map { SQLiteConnection.value(of: arguments?[$0]) }
            SQLiteConnection.setResult((try? MigrationFunctions.convertSlowly(values)) ?? values.first ?? .null, on: context)
        }))
        try connection.registerFunction(missingOrNull, argumentCount: 3) { _ in .null }
        // Not deterministic: SQLite must never evaluate it once up front as a constant.
        try connection.registerFunction(missing, argumentCount: 3, isDeterministic: false) { values in
            let pk = values[2].int64.map(String.init) ?? "?"
            let attribute = values[1].string ?? "?"
            throw ConversionFailure(
                message: conversionFailurePrefix + "\(values[0].string ?? "?").\(attribute) of the object with Z_PK \(pk) is NULL, "
                    + "and \(attribute) is required")
        }
        try registerProbes(on: connection)
        try connection.registerFunction(fits, argumentCount: 2) { values in
            guard case .integer(let code) = values[1], let type = AttributeType(rawValue: Int(code)) else { return .integer(0) }
            return .integer(StorageValue.convert(values[0], to: type) == nil ? 0 : 1)
        }
    }

    /// `storerescue_convert` for the values the C fast path does not take.
    static func convertSlowly(_ values: [SQLiteValue]) throws -> SQLiteValue {
        guard values.count == 5, case .integer(let code) = values[1], let type = AttributeType(rawValue: Int(code)) else { return .null }
        if let converted = StorageValue.convert(values[0], to: type) { return converted }
        let entity = values[2].string ?? "?", attribute = values[3].string ?? "?"
        let pk = values[4].int64.map(String.init) ?? "?"
        throw ConversionFailure(message: conversionFailurePrefix + "\(entity).\(attribute) of the object with Z_PK \(pk) is \(describe(values[0])), which is not \(type.modelFileName.first.map { "AEIOU".contains($0) } == true ? "an" : "a") \(type.modelFileName)")
    }

    struct ConversionFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// A value as a message shows it: capped, with its storage class.
    static func describe(_ value: SQLiteValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let n): return "the integer \(n)"
        case .real(let d): return "the number \(d)"
        case .text(let text): return "the text \"\(text.count > 60 ? String(text.prefix(57)) + "…" : text)\""
        case .blob(let data): return "\(data.count) bytes of data"
        }
    }

    /// `sql` (a required attribute's value, computed by a custom step), stopping the statement
    /// at the first object where it is NULL: Core Data's validation refuses to save such an
    /// object, and the migration must say so, naming it, rather than fail its final check.
    static func requiring(_ sql: String, entity: String, attribute: String, pk: String) -> String {
        "COALESCE(\(sql), \(missing)(\(SQLLiteral.string(entity)), \(SQLLiteral.string(attribute)), \(pk)))"
    }

    /// `sql` (an expression the writer inserts) with `storerescue_convert` and
    /// `storerescue_missing` replaced by their twins that yield NULL instead of stopping the
    /// statement: a uniqueness check over the values the writer computes then passes over a value
    /// that does not convert (or a required one left NULL) instead of failing with its error —
    /// that value is the conversion check's to report (134140), or the writer's (exit 3).
    static func nonStopping(_ sql: String) -> String {
        sql.replacingLiterally(convert + "(", with: convertOrNull + "(").replacingLiterally(missing + "(", with: missingOrNull + "(")
    }

    /// `sql` with `storerescue_convert` replaced by its twin that keeps a value that does not
    /// convert as it is (and `storerescue_missing` by NULL): what an earlier hop's attribute is
    /// where the analysis asks only whether it is NULL — a value that does not convert there is
    /// not missing, and is that hop's conversion check's to report (134140), not a later hop's
    /// required-value check's (134110).
    static func keepingUnconverted(_ sql: String) -> String {
        sql.replacingLiterally(convert + "(", with: convertOrKeep + "(").replacingLiterally(missing + "(", with: missingOrNull + "(")
    }

    /// Written before every call of a function whose result differs at each call (`uuid()`,
    /// `random()`, …) in the SQL of an expression, where it is a comment: see `probing`.
    static let drawnMark = "/*storerescue:drawn*/"

    /// How many fixed values `probing` tries.
    static let probeCount = 8

    /// `sql` with each marked call of a function that draws its value replaced by one that
    /// returns the fixed value number `probe` (of `probeCount`): where every probe gives the same
    /// result, the object's value does not depend on the draw (`coalesce(code, hex(uuid()))`
    /// for an object with a code, `'x' || (abs(random()) % 1)`), and a uniqueness check compares
    /// it; where any two differ, the value is drawn, and left out.
    ///
    /// Why eight values and not two: with only the lowest and highest, `abs(random()) % 7`
    /// (7 divides 2^63 − 1), `min(random(), 0)` or `CASE WHEN random() < 0 …` came out the same
    /// for both, were compared, and a review's dry run and run refused two objects whose drawn
    /// values would have differed (and `upgrade --on-failure clean` then replaced a store that
    /// migrates with an empty one). No fixed set proves that a value never depends on the draw;
    /// these — 0, 1, −1, both extremes (not `Int64.min`: `abs` of it overflows) and three large
    /// values of mixed bits, blobs of as many byte patterns — part every expression of the
    /// draw's value, sign, parity, small remainders or bytes that the reviews tried.
    static func probing(_ sql: String, probe: Int) -> String {
        guard sql.contains(drawnMark) else { return sql }
        var result = sql
        for name in ExpressionTranslator.drawnFunctions {
            result = result.replacingLiterally(drawnMark + name + "(", with: probeName(name, probe: probe) + "(")
        }
        return result
    }

    private static func probeName(_ name: String, probe: Int) -> String { "storerescue_probe\(probe)_\(name.lowercased())" }

    /// The integers the probes of `random()` and `last_insert_rowid()` return.
    static let probeIntegers: [Int64] = [
        0, Int64.max, 1, -1, -Int64.max, 6_364_136_223_846_793_005, -3_141_592_653_589_793_238, 4_294_967_311,
    ]

    /// The byte the probe `probe` of `uuid()` or `randomblob(n)` puts at `offset`.
    static func probeByte(_ probe: Int, at offset: Int) -> UInt8 {
        switch probe {
        case 0: return 0x00
        case 1: return 0xFF
        case 2: return 0x01
        case 3: return offset == 0 ? 0x80 : 0x00
        case 4: return offset % 2 == 0 ? 0x55 : 0xAA
        case 5: return UInt8(truncatingIfNeeded: offset &* 151 &+ 89)
        case 6: return 0x7F
        default: return UInt8(truncatingIfNeeded: 0xC3 ^ (offset &* 29))
        }
    }

    /// The fixed values `probing` calls return: blobs of the size the function draws (`uuid()`
    /// 16 bytes, `randomblob(n)` n, capped), of `probeByte`'s patterns; integers `probeIntegers`.
    private static func registerProbes(on connection: SQLiteConnection) throws {
        for name in ExpressionTranslator.drawnFunctions {
            for probe in 0..<probeCount {
                try connection.registerFunction(probeName(name, probe: probe), argumentCount: -1) { values in
                    switch name {
                    case "UUID": return .blob(Data((0..<16).map { probeByte(probe, at: $0) }))
                    case "RANDOMBLOB":
                        let count = Int(min(max(values.first?.int64 ?? 1, 1), 1 << 16))
                        return .blob(Data((0..<count).map { probeByte(probe, at: $0) }))
                    default: return .integer(probeIntegers[probe])
                    }
                }
            }
        }
    }

    /// `storerescue_convert(expression, …)` for `attribute` of `entity`.
    static func converting(_ expression: String, to type: AttributeType, entity: String, attribute: String, pk: String) -> String {
        "\(convert)(\(expression), \(type.rawValue), \(SQLLiteral.string(entity)), \(SQLLiteral.string(attribute)), \(pk))"
    }
}
