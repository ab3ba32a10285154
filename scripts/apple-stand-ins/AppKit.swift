// Stand-in for the parts of AppKit Conveyor uses, from Apple's documentation (macOS 15 SDK):
// views are main-actor isolated; NSImage is left non-Sendable (stricter than needed).
// Type-checking only: no behaviour.
@_exported import Foundation

/// `class NSImage : NSObject`
open class NSImage: NSObject {
    /// `init?(data: Data)`
    public init?(data: Data) { nil }
}

/// `@MainActor class NSResponder : NSObject`
@MainActor open class NSResponder: NSObject {}

/// `@MainActor class NSView : NSResponder`
@MainActor open class NSView: NSResponder {}

/// `@MainActor class NSControl : NSView`
@MainActor open class NSControl: NSView {}

/// `@MainActor class NSImageView : NSControl`
@MainActor open class NSImageView: NSControl {
    /// `var image: NSImage? { get set }`
    open var image: NSImage?
}
