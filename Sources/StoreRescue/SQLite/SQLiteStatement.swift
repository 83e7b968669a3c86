import Foundation
import SRSQLite

/// One compiled statement of a `SQLiteConnection`.
public final class SQLiteStatement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection
    public let sql: String

    init(connection: SQLiteConnection, sql: String) throws {
        connection.statementObserver?(sql)
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw connection.lastError(rc == SQLITE_OK ? SQLITE_MISUSE : rc, sql: sql)
        }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Binds values to `?` parameters, in order.
    public func bind(_ values: [SQLiteValue]) throws {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                rc = v.withCString { srsqlite_bind_text_transient(handle, index, $0, Int32(strlen($0))) }
            case .blob(let v):
                rc = v.withUnsafeBytes { buffer in
                    srsqlite_bind_blob_transient(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count))
                }
            }
            try connection.check(rc, sql: sql)
        }
    }

    /// Advances to the next row; false when the statement is done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.lastError(rc, sql: sql)
        }
    }

    /// Resets the statement so it can run again with new bindings.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    public func columnName(_ index: Int) -> String {
        sqlite3_column_name(handle, Int32(index)).map { String(cString: $0) } ?? ""
    }

    /// The value of column `index` in the current row.
    public func column(_ index: Int) -> SQLiteValue {
        let i = Int32(index)
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, i))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, i) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, i))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, i))
            guard count > 0, let bytes = sqlite3_column_blob(handle, i) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    /// Every column of the current row.
    public func row() -> [SQLiteValue] {
        (0..<columnCount).map(column)
    }
}
