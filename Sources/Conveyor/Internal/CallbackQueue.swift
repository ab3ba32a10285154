import Dispatch

extension DispatchQueue {
    /// The queue Conveyor delivers completions on unless configured otherwise.
    ///
    /// On Apple platforms this is `.main`, as UI code expects. On Linux a command-line program
    /// often blocks its main thread (a semaphore, `readLine()`, `waitUntilFinished()`), and then
    /// blocks scheduled on `DispatchQueue.main` never run: so there it is one serial queue
    /// owned by Conveyor, which keeps completions ordered without stranding anybody.
    public static var conveyorDefaultCallbackQueue: DispatchQueue {
        #if canImport(Darwin)
            return .main
        #else
            return linuxCallbackQueue
        #endif
    }
}

private let linuxCallbackQueue = DispatchQueue(label: "org.conveyor.callbacks", qos: .userInitiated)

/// Where response bodies are parsed: off the callback queue, so a large JSON body does not
/// hold up other completions, and off the transport's delegate queue, so it does not hold up
/// other transfers.
let conveyorProcessingQueue = DispatchQueue(
    label: "org.conveyor.processing", qos: .userInitiated, attributes: .concurrent
)
