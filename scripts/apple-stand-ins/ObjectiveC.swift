// swift-format-ignore-file
// (the SDK's own names, C functions and constants, are kept as documented)
// Stand-in for the ObjectiveC runtime's associated objects, from Apple's documentation of
// objc_getAssociatedObject(_:_:) and objc_setAssociatedObject(_:_:_:_:). Type-checking only.

/// Documented as `enum objc_AssociationPolicy : UInt`.
public enum objc_AssociationPolicy: UInt, Sendable {
    case OBJC_ASSOCIATION_ASSIGN = 0
    case OBJC_ASSOCIATION_RETAIN_NONATOMIC = 1
    case OBJC_ASSOCIATION_COPY_NONATOMIC = 3
    case OBJC_ASSOCIATION_RETAIN = 769
    case OBJC_ASSOCIATION_COPY = 771
}

/// `func objc_getAssociatedObject(_ object: Any, _ key: UnsafeRawPointer) -> Any?`
public func objc_getAssociatedObject(_ object: Any, _ key: UnsafeRawPointer) -> Any? { nil }

/// `func objc_setAssociatedObject(_ object: Any, _ key: UnsafeRawPointer, _ value: Any?, _ policy: objc_AssociationPolicy)`
public func objc_setAssociatedObject(_ object: Any, _ key: UnsafeRawPointer, _ value: Any?, _ policy: objc_AssociationPolicy) {}

// Foundation's, not the ObjectiveC runtime's: corelibs Foundation (Linux) has no bound streams,
// and no stand-in can be named Foundation, so it is declared here, the module Conveyor's
// Apple branch for it imports (Sources/Conveyor/Transport/BoundStreamPair.swift).
import Foundation

extension Stream {
    /// From Apple's documentation of `getBoundStreams(withBufferSize:inputStream:outputStream:)`:
    /// `class func getBoundStreams(withBufferSize bufferSize: Int, inputStream: AutoreleasingUnsafeMutablePointer<InputStream?>?, outputStream: AutoreleasingUnsafeMutablePointer<OutputStream?>?)`.
    /// `AutoreleasingUnsafeMutablePointer` exists only with the Objective-C runtime; callers
    /// pass `&variable`, which converts to this pointer type as to that one.
    public class func getBoundStreams(
        withBufferSize bufferSize: Int, inputStream: UnsafeMutablePointer<InputStream?>?, outputStream: UnsafeMutablePointer<OutputStream?>?
    ) {}
}
