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
        // Read back with exact types: corelibs' `JSONSerialization` hands numbers over as
        // `NSNumber`s that cast to `Bool` and `Double` alike, so a form body wrote `2` as `2.0`
        // and, with literal booleans, `1` as `true` (found by the independent attack).
        guard case .object(let members)? = try? JSONDecoder().decode(ExactJSON.self, from: data) else {
            throw ConveyorError.parameterEncodingFailed(reason: .unsupportedValue(key: "", type: "\(Value.self) (not a keyed container)"))
        }
        return members.mapValues(\.value)
    }
}

/// A JSON value with the type it was written with: a boolean, an integer and a fraction stay
/// apart on every platform.
private enum ExactJSON: Decodable {
    case null
    case bool(Bool)
    case integer(Int)
    case number(Double)
    case string(String)
    case array([ExactJSON])
    case object([String: ExactJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? container.decode(Int.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([ExactJSON].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: ExactJSON].self))
        }
    }

    /// The value as the serializers take parameters (`NSNull` for null, as `JSONSerialization` gave).
    var value: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let bool): return bool
        case .integer(let integer): return integer
        case .number(let number): return number
        case .string(let string): return string
        case .array(let array): return array.map(\.value)
        case .object(let members): return members.mapValues(\.value)
        }
    }
}
