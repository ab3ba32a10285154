import Foundation

/// What the operation tells a transport about one attempt, beside its request: the transport
/// reads these from here, never from the request (whose `timeoutInterval` is only where an
/// operation takes its idle timeout's default from).
struct AttemptPlan: Sendable {
    /// The operation's idle timeout (see ``ResolvedSettings/Timeouts/idle``): zero, negative,
    /// NaN or infinite for none. The operation runs the timer itself; a transport with a timer
    /// of its own keeps that one behind it.
    var idleTimeout: TimeInterval
}
