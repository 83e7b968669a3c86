import Foundation
import SRSQLite

/// A scalar SQL function written in Swift, registered on one connection.
///
/// Functions are registered `SQLITE_DIRECTONLY`: callable from the statements this tool writes,
/// never from a store's own schema (a view, trigger, index or `CHECK` of a hostile file cannot
/// reach them). A thrown error becomes the statement's error, with its description as message.
///
/// ```swift
/// try connection.registerFunction("double_it", argumentCount: 1) { values in
///     guard case .integer(let n) = values[0] else { return .null }
///     return .integer(n * 2)
/// }
/// ```
extension SQLiteConnection {
    /// The body of a scalar function: the arguments in, one value out.
    public typealias ScalarFunction = ([SQLiteValue]) throws -> SQLiteValue

    private final class FunctionBox {
        let body: ScalarFunction
        init(_ body: @escaping ScalarFunction) { self.body = body }
    }

    /// Registers (or replaces) `name` on this connection.
    ///
    /// - Parameters:
    ///   - argumentCount: the number of arguments (-1: any number).
    ///   - isDeterministic: same arguments, same result (lets SQLite reuse results); false for
    ///     functions such as `uuid()`.
    public func registerFunction(
        _ name: String, argumentCount: Int32, isDeterministic: Bool = true, _ body: @escaping ScalarFunction
    ) throws {
        let box = Unmanaged.passRetained(FunctionBox(body)).toOpaque()
        var flags = SQLITE_UTF8 | SQLITE_DIRECTONLY
        if isDeterministic { flags |= SQLITE_DETERMINISTIC }
        let rc = sqlite3_create_function_v2(
            handle, name, argumentCount, flags, box,
            { context, count, arguments in
                guard let context, let user = sqlite3_user_data(context) else { return }
                let box = Unmanaged<FunctionBox>.fromOpaque(user).takeUnretainedValue()
                var values: [SQLiteValue] = []
                values.reserveCapacity(Int(count))
                for index in 0..<Int(count) {
                    values.append(SQLiteConnection.value(of: arguments?[index]))
                }
                do {
                    SQLiteConnection.setResult(try box.body(values), on: context)
                } catch {
                    let message = "\(error)"
                    sqlite3_result_error(context, message, -1)
                }
            },
            nil, nil,
            { user in
                guard let user else { return }
                Unmanaged<FunctionBox>.fromOpaque(user).release()
            })
        try check(rc)
    }

    static func value(of pointer: OpaquePointer?) -> SQLiteValue {
        guard let pointer else { return .null }
        switch sqlite3_value_type(pointer) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(pointer))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(pointer))
        case SQLITE_TEXT:
            guard let text = sqlite3_value_text(pointer) else { return .text("") }
            let count = Int(sqlite3_value_bytes(pointer))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(pointer))
            guard count > 0, let bytes = sqlite3_value_blob(pointer) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    static func setResult(_ value: SQLiteValue, on context: OpaquePointer) {
        switch value {
        case .null: sqlite3_result_null(context)
        case .integer(let n): sqlite3_result_int64(context, n)
        case .real(let d): sqlite3_result_double(context, d)
        case .text(let text):
            text.withCString { srsqlite_result_text_transient(context, $0, Int32(strlen($0))) }
        case .blob(let data):
            data.withUnsafeBytes { buffer in
                srsqlite_result_blob_transient(context, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count))
            }
        }
    }
}
