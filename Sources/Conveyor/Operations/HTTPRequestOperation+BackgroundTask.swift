import Foundation

#if canImport(UIKit) && !os(watchOS)
    import UIKit
#endif

/// What `setShouldExecuteAsBackgroundTask` asked for, and the task held meanwhile.
struct BackgroundTaskRequest: Sendable {
    let expirationHandler: (@Sendable () -> Void)?
    var identifier: Int?
}

extension HTTPRequestOperation {
    /// Asks the system for time to finish when the app goes to the background (AFNetworking's
    /// `setShouldExecuteAsBackgroundTaskWithExpirationHandler:`).
    ///
    /// On iOS, tvOS and visionOS a background task begins when the operation starts and ends
    /// when it finishes; if the system expires it first, `expirationHandler` runs, the operation
    /// is cancelled and the task ends. On macOS, watchOS and Linux there are no such tasks and
    /// this does nothing; on Linux, see ``HTTPClient/drain(timeout:queued:completionGrace:)`` and
    /// ``GracefulShutdown`` for finishing transfers when the process is told to stop.
    /// - Parameter expirationHandler: Runs on the main thread when time runs out; nil for none.
    public func setShouldExecuteAsBackgroundTask(expirationHandler: (@Sendable () -> Void)? = nil) {
        transfer { $0.backgroundTask = BackgroundTaskRequest(expirationHandler: expirationHandler, identifier: nil) }
    }

    /// Begins the requested background task, if any (called at start).
    func beginBackgroundTaskIfRequested() {
        #if canImport(UIKit) && !os(watchOS)
            guard let request = transfer({ $0.backgroundTask }), request.identifier == nil else { return }
            DispatchQueue.main.async { [self] in
                MainActor.assumeIsolated {
                    let identifier = UIApplication.shared.beginBackgroundTask { [self] in
                        request.expirationHandler?()
                        cancel()
                        endBackgroundTaskIfAny()
                    }
                    let finished = mutableState.withLock { state -> Bool in
                        state.transfer.backgroundTask?.identifier = identifier.rawValue
                        return state.transfer.lifecycle == .finished
                    }
                    if finished { endBackgroundTaskIfAny() }
                }
            }
        #endif
    }

    /// Ends the background task, if one is held (called at finish).
    func endBackgroundTaskIfAny() {
        #if canImport(UIKit) && !os(watchOS)
            let identifier = mutableState.withLock { state -> Int? in
                defer { state.transfer.backgroundTask?.identifier = nil }
                return state.transfer.backgroundTask?.identifier
            }
            guard let identifier else { return }
            DispatchQueue.main.async {
                MainActor.assumeIsolated { UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: identifier)) }
            }
        #endif
    }
}
