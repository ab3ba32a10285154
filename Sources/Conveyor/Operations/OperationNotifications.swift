import Foundation

extension Notification.Name {
    /// Posted when an ``HTTPRequestOperation`` starts its transfer; `object` is the operation.
    /// The logger and the activity indicator observe it.
    public static let conveyorOperationDidStart = Notification.Name("org.conveyor.operation.didStart")

    /// Posted when an ``HTTPRequestOperation`` finishes (success, failure or cancellation), just
    /// before its completion block is scheduled; `object` is the operation.
    public static let conveyorOperationDidFinish = Notification.Name("org.conveyor.operation.didFinish")

    /// Posted when an ``HTTPRequestOperation``'s first request goes out, after the authenticator
    /// and the adapters; `object` is the operation, `userInfo["request"]` the request as sent.
    /// The logger's `→` line comes from it. Not posted for a request the transport refuses.
    static let conveyorOperationWillSend = Notification.Name("org.conveyor.operation.willSend")
}
