// Stand-in for the parts of the Network framework Conveyor uses, from Apple's documentation
// of NWPathMonitor, NWPath and NWInterface.InterfaceType. Type-checking only: no behaviour.
import Dispatch

/// `struct NWInterface`
public struct NWInterface: Sendable, Hashable {
    /// `enum InterfaceType`
    public enum InterfaceType: Sendable, Hashable {
        case other, wifi, cellular, wiredEthernet, loopback
    }
    /// `let type: NWInterface.InterfaceType`
    public let type: InterfaceType
    /// `let name: String`
    public let name: String
}

/// `struct NWPath : Equatable, Sendable`
public struct NWPath: Sendable, Equatable {
    /// `enum Status : Equatable, Hashable`
    public enum Status: Sendable, Hashable {
        case satisfied, unsatisfied, requiresConnection
    }
    /// `let status: NWPath.Status`
    public let status: Status
    /// `let availableInterfaces: [NWInterface]`
    public let availableInterfaces: [NWInterface]
    /// `let isExpensive: Bool`
    public let isExpensive: Bool
    /// `let isConstrained: Bool`
    public let isConstrained: Bool
    /// `func usesInterfaceType(_ type: NWInterface.InterfaceType) -> Bool`
    public func usesInterfaceType(_ type: NWInterface.InterfaceType) -> Bool { false }
}

/// `final class NWPathMonitor : @unchecked Sendable`
public final class NWPathMonitor: @unchecked Sendable {
    /// `init()`
    public init() {}
    /// `init(requiredInterfaceType: NWInterface.InterfaceType)`
    public init(requiredInterfaceType: NWInterface.InterfaceType) {}
    /// `var pathUpdateHandler: ((_ newPath: NWPath) -> Void)?`, documented `@Sendable` in the Swift 6 SDKs.
    public var pathUpdateHandler: (@Sendable (_ newPath: NWPath) -> Void)?
    /// `var currentPath: NWPath { get }`
    public var currentPath: NWPath { NWPath(status: .unsatisfied, availableInterfaces: [], isExpensive: false, isConstrained: false) }
    /// `var queue: DispatchQueue? { get }`
    public var queue: DispatchQueue? { nil }
    /// `func start(queue: DispatchQueue)`
    public func start(queue: DispatchQueue) {}
    /// `func cancel()`
    public func cancel() {}
}
