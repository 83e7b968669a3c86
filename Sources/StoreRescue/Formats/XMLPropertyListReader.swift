import Foundation

/// Reads XML property lists through Foundation's `PropertyListSerialization` and converts the
/// result to `PropertyListValue`, within the same limits as binary ones.
///
/// Core Data writes binary property lists everywhere this tool looks; XML support is a
/// convenience for hand-made fixtures and exported metadata.
enum XMLPropertyListReader {
    /// True when `bytes` start (after an optional byte-order mark and white space) with `<?xml`,
    /// `<!DOCTYPE plist` or `<plist`.
    static func looksLikeXML(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        return [Array("<?xml".utf8), Array("<!DOCTYPE plist".utf8), Array("<plist".utf8)].contains { rest.starts(with: $0) }
    }

    static func decode(_ data: Data, limits: PropertyListLimits) throws -> PropertyListValue {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            // Foundation's own message is in the debug description; the full error is verbose.
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw PropertyListError.unreadableXML(reason: reason)
        }
        var count = 0
        return try convert(object, depth: 0, count: &count, limits: limits)
    }

    /// Converts one Foundation property list object, refusing anything that is not one.
    static func convert(_ object: Any, depth: Int, count: inout Int, limits: PropertyListLimits) throws -> PropertyListValue {
        count += 1
        guard count <= limits.maximumObjectCount else { throw PropertyListError.valueLimitExceeded(limit: limits.maximumObjectCount) }
        if type(of: object) == Bool.self, let flag = object as? Bool { return .boolean(flag) }
        switch object {
        case let string as String: return .string(string)
        case let data as Data: return .data(data)
        case let date as Date: return .date(date)
        case let number as NSNumber:
            let kind = String(cString: number.objCType)
            if kind == "c" || kind == "B" { return .boolean(number.boolValue) }
            if kind == "d" || kind == "f" { return .real(number.doubleValue) }
            if kind == "Q" || kind == "L" || kind == "I", number.uint64Value > UInt64(Int64.max) {
                throw PropertyListError.unreadableXML(reason: "integer \(number.uint64Value) does not fit in 64 bits")
            }
            return .integer(number.int64Value)
        case let array as [Any]:
            guard depth < limits.maximumDepth else { throw PropertyListError.depthLimitExceeded(limit: limits.maximumDepth) }
            return .array(try array.map { try convert($0, depth: depth + 1, count: &count, limits: limits) })
        case let dictionary as [String: Any]:
            guard depth < limits.maximumDepth else { throw PropertyListError.depthLimitExceeded(limit: limits.maximumDepth) }
            var result: [String: PropertyListValue] = [:]
            for (key, value) in dictionary {
                result[key] = try convert(value, depth: depth + 1, count: &count, limits: limits)
            }
            return .dictionary(result)
        default:
            throw PropertyListError.unreadableXML(reason: "unexpected value of type \(type(of: object))")
        }
    }
}
