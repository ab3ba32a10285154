import Foundation

/// Checks parameters before any traffic and converts them into values `JSONSerialization` and
/// `PropertyListSerialization` accept, so an unsupported value is a typed error naming its key
/// path instead of an Objective-C exception (Apple) or a trap (Linux).
enum SerializableValue {
    enum Format { case json, propertyList }

    static func convert(_ parameters: Parameters, for format: Format) throws -> [String: Any] {
        var result: [String: Any] = [:]
        for (key, value) in parameters { result[key] = try convert(value, path: key, format: format) }
        return result
    }

    static func convert(_ value: Any, path: String, format: Format) throws -> Any {
        func unsupported() -> ConveyorError {
            .parameterEncodingFailed(reason: .unsupportedValue(key: path, type: "\(type(of: value))"))
        }
        if QueryStringEncoder.isNil(value) {
            // Property lists have no null.
            guard format == .json else { throw unsupported() }
            return NSNull()
        }
        switch value {
        case let string as String: return string
        case let substring as Substring: return String(substring)
        case let bool as Bool: return bool
        case let integer as any BinaryInteger:
            if let exact = Int(exactly: integer) { return exact }
            if let exact = UInt64(exactly: integer) { return NSNumber(value: exact) }
            throw unsupported()
        case let double as Double:
            guard double.isFinite else { throw unsupported() }
            return double
        case let float as Float:
            guard float.isFinite else { throw unsupported() }
            return Double(float)
        case let decimal as Decimal:
            guard decimal.isFinite else { throw unsupported() }
            return NSDecimalNumber(decimal: decimal)
        case let number as NSNumber:
            guard number.doubleValue.isFinite else { throw unsupported() }
            return number
        case let date as Date:
            return format == .propertyList ? date : date.formatted(.iso8601)
        case let data as Data:
            return format == .propertyList ? data : data.base64EncodedString()
        case let url as URL: return url.absoluteString
        case let uuid as UUID: return uuid.uuidString
        case let array as [Any]:
            return try array.enumerated().map { try convert($1, path: "\(path)[\($0)]", format: format) }
        case let dictionary as [String: Any]:
            var result: [String: Any] = [:]
            for (key, element) in dictionary { result[key] = try convert(element, path: "\(path).\(key)", format: format) }
            return result
        case let set as Set<AnyHashable>:
            return try set.map(\.base).sorted { "\($0)" < "\($1)" }.map { try convert($0, path: "\(path)[]", format: format) }
        default:
            throw unsupported()
        }
    }

    /// Turns an `Encodable` value into parameters by way of JSON, for serializers whose format
    /// has no encoder of its own (the query string).
    static func parameters<Value: Encodable>(from value: Value, encoder: JSONEncoder) throws -> Parameters {
        let data: Data
        do { data = try encoder.encode(value) } catch {
            throw ConveyorError.parameterEncodingFailed(reason: .encoderFailed(error))
        }
        guard let parameters = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConveyorError.parameterEncodingFailed(reason: .unsupportedValue(key: "", type: "\(Value.self) (not a keyed container)"))
        }
        return parameters
    }
}
