import Foundation

/// One value read from or bound to SQLite, by its storage class.
public enum SQLiteValue: Sendable, Equatable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    public var int64: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var string: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var data: Data? {
        switch self {
        case .blob(let value): return value
        default: return nil
        }
    }

    public var isNull: Bool { self == .null }
}
