import Foundation

/// What `setShouldExecuteAsBackgroundTask` asked for, and the task held meanwhile.
struct BackgroundTaskRequest: Sendable {
    let expirationHandler: (@Sendable () -> Void)?
    /// The held task; nil before it begins, once it ended, and when the system granted none
    /// (`UIBackgroundTaskIdentifier.invalid` is never stored).
    var identifier: Int?
    #if canImport(UIKit) && !os(watchOS)
        /// How the task begins and ends, captured where the application may be named.
        let application: BackgroundTaskApplication
    #endif
}

extension HTTPRequestOperation {
    /// Asks the system for time to finish when the app goes to the background (AFNetworking's
    /// `setShouldExecuteAsBackgroundTaskWithExpirationHandler:`).
    ///
    /// On iOS, tvOS and visionOS a background task begins when the operation starts and ends
    /// when it finishes; if the system expires it first, `expirationHandler` runs, the operation
    /// is cancelled and the task ends before the system's expiration call returns. When the system
    /// grants no time, the operation runs without a task. On macOS, watchOS and Linux there are no
    /// such tasks and this does nothing; on Linux, see ``HTTPClient/drain(timeout:queued:completionGrace:)``
    /// and ``GracefulShutdown`` for finishing transfers when the process is told to stop.
    ///
    /// Unavailable in app extensions, which have no `UIApplication` (nor, as AFNetworking notes,
    /// background tasks of this kind).
    /// - Parameter expirationHandler: Runs on the main thread when time runs out; nil for none.
    @available(iOSApplicationExtension, unavailable, message: "App extensions have no UIApplication background tasks")
    @available(tvOSApplicationExtension, unavailable, message: "App extensions have no UIApplication background tasks")
    @available(visionOSApplicationExtension, unavailable, message: "App extensions have no UIApplication background tasks")
    @available(macCatalystApplicationExtension, unavailable, message: "App extensions have no UIApplication background tasks")
    public func setShouldExecuteAsBackgroundTask(expirationHandler: (@Sendable () -> Void)? = nil) {
        #if canImport(UIKit) && !os(watchOS)
            let request = BackgroundTaskRequest(
                expirationHandler: expirationHandler, identifier: nil, application: .fromSharedApplication())
        #else
            let request = BackgroundTaskRequest(expirationHandler: expirationHandler, identifier: nil)
        #endif
        transfer { $0.backgroundTask = request }
    }

    /// Begins the requested background task, if any (called at start).
    func beginBackgroundTaskIfRequested() {
        #if canImport(UIKit) && !os(watchOS)
            guard let request = transfer({ $0.backgroundTask }), request.identifier == nil else { return }
            DispatchQueue.main.async { [self] in
                MainActor.assumeIsolated {
                    let identifier = request.application.begin { [self] in
                        // The system calls this on the main thread and suspends the app when it
                        // returns: the task ends inside it (synchronously, see endBackgroundTaskIfAny).
                        request.expirationHandler?()
                        cancel()
                        endBackgroundTaskIfAny()
                    }
                    // `.invalid`: no time was granted, and there is nothing to end.
                    guard let identifier else { return }
                    let finished = transfer { machine -> Bool in
                        machine.backgroundTask?.identifier = identifier
                        return machine.lifecycle == .finished
                    }
                    if finished { endBackgroundTaskIfAny() }
                }
            }
        #endif
    }

    /// Ends the background task, if one is held (called at finish, and by the expiration handler).
    /// On the main thread it ends before this returns, as the expiration handler requires; from
    /// another thread it ends on the main queue.
    func endBackgroundTaskIfAny() {
        #if canImport(UIKit) && !os(watchOS)
            let held = transfer { machine -> (identifier: Int, application: BackgroundTaskApplication)? in
                guard let request = machine.backgroundTask, let identifier = request.identifier else { return nil }
                machine.backgroundTask?.identifier = nil
                return (identifier, request.application)
            }
            guard let held else { return }
            if Thread.isMainThread {
                MainActor.assumeIsolated { held.application.end(held.identifier) }
            } else {
                DispatchQueue.main.async { MainActor.assumeIsolated { held.application.end(held.identifier) } }
            }
        #endif
    }
}
