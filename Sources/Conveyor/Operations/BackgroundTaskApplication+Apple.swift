#if canImport(UIKit) && !os(watchOS)
    import UIKit

    /// `UIApplication`'s background-task calls, as closures.
    ///
    /// `UIApplication.shared` is unavailable in app extensions, and a package an extension links
    /// must build without it. Only ``fromSharedApplication()`` names it, and only
    /// `setShouldExecuteAsBackgroundTask` calls that (both unavailable in extensions); the
    /// operation's start and finish, which extensions do run, reach the application through the
    /// closures stored in the request.
    struct BackgroundTaskApplication: Sendable {
        /// Begins a task whose expiration runs the handler; nil when the system granted none.
        let begin: @MainActor @Sendable (_ expirationHandler: @escaping @MainActor @Sendable () -> Void) -> Int?
        /// Ends the task.
        let end: @MainActor @Sendable (_ identifier: Int) -> Void

        /// The calls on `UIApplication.shared`.
        @available(iOSApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        static func fromSharedApplication() -> BackgroundTaskApplication {
            BackgroundTaskApplication(
                begin: { expirationHandler in
                    let identifier = UIApplication.shared.beginBackgroundTask { expirationHandler() }
                    return identifier == .invalid ? nil : identifier.rawValue
                },
                end: { identifier in UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: identifier)) })
        }
    }
#endif
