// Stand-in for the parts of the os module (unified logging) Conveyor uses, from Apple's
// documentation of Logger, OSLogType, OSLogMessage and OSLogPrivacy. Type-checking only.

/// `struct OSLogType : Equatable, RawRepresentable`
public struct OSLogType: Equatable, RawRepresentable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let `default` = OSLogType(rawValue: 0)
    public static let info = OSLogType(rawValue: 1)
    public static let debug = OSLogType(rawValue: 2)
    public static let error = OSLogType(rawValue: 16)
    public static let fault = OSLogType(rawValue: 17)
}

/// `struct OSLogPrivacy`
public struct OSLogPrivacy: Sendable {
    let level: Int
    public static let `public` = OSLogPrivacy(level: 0)
    public static let `private` = OSLogPrivacy(level: 1)
    public static let sensitive = OSLogPrivacy(level: 2)
    public static let auto = OSLogPrivacy(level: 3)
}

/// `struct OSLogInterpolation : StringInterpolationProtocol`
public struct OSLogInterpolation: StringInterpolationProtocol {
    public init(literalCapacity: Int, interpolationCount: Int) {}
    public mutating func appendLiteral(_ literal: String) {}
    /// `mutating func appendInterpolation(_ argumentString: @autoclosure @escaping () -> String, align: OSLogStringAlignment = .none, privacy: OSLogPrivacy = .auto)`, alignment left out.
    public mutating func appendInterpolation(_ argumentString: @autoclosure @escaping () -> String, privacy: OSLogPrivacy = .auto) {}
}

/// `struct OSLogMessage : ExpressibleByStringInterpolation, ExpressibleByStringLiteral`
public struct OSLogMessage: ExpressibleByStringInterpolation {
    public init(stringInterpolation: OSLogInterpolation) {}
    public init(stringLiteral value: String) {}
}

/// `struct Logger` (macOS 11, iOS 14)
public struct Logger: @unchecked Sendable {
    /// `init(subsystem: String, category: String)`
    public init(subsystem: String, category: String) {}
    /// `func log(level: OSLogType, _ message: OSLogMessage)`
    public func log(level: OSLogType, _ message: OSLogMessage) {}
}
