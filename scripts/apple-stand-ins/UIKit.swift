// Stand-in for the parts of UIKit Conveyor uses, from Apple's documentation (iOS 18 SDK):
// views and the application are main-actor isolated; UIImage is left non-Sendable (stricter
// than needed). Type-checking only: no behaviour.
@_exported import Foundation

/// `class UIImage : NSObject`
open class UIImage: NSObject {
    /// `init?(data: Data)`
    public init?(data: Data) { nil }
}

/// `@MainActor class UIResponder : NSObject`
@MainActor open class UIResponder: NSObject {}

/// `@MainActor class UIView : UIResponder`
@MainActor open class UIView: UIResponder {}

/// `@MainActor class UIImageView : UIView`
@MainActor open class UIImageView: UIView {
    /// `var image: UIImage? { get set }`
    open var image: UIImage?
}

/// `struct UIBackgroundTaskIdentifier : RawRepresentable, Hashable, Sendable`
public struct UIBackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `static let invalid: UIBackgroundTaskIdentifier`
    public static let invalid = UIBackgroundTaskIdentifier(rawValue: 0)
}

/// `@MainActor class UIApplication : UIResponder`
@MainActor open class UIApplication: UIResponder {
    /// `class var shared: UIApplication { get }`, unavailable in app extensions.
    @available(iOSApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    open class var shared: UIApplication { fatalError("stand-in") }

    /// `func beginBackgroundTask(expirationHandler handler: (@MainActor @Sendable () -> Void)? = nil) -> UIBackgroundTaskIdentifier`
    open func beginBackgroundTask(expirationHandler handler: (@MainActor @Sendable () -> Void)? = nil) -> UIBackgroundTaskIdentifier {
        .invalid
    }

    /// `func endBackgroundTask(_ identifier: UIBackgroundTaskIdentifier)`
    open func endBackgroundTask(_ identifier: UIBackgroundTaskIdentifier) {}

    /// `nonisolated class let didReceiveMemoryWarningNotification: NSNotification.Name`
    nonisolated public static let didReceiveMemoryWarningNotification = NSNotification.Name(
        "UIApplicationDidReceiveMemoryWarningNotification")
}
