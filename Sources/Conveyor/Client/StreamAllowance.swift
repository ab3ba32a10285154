import ConveyorLocking
import Foundation

/// Where a client's streams run: an operation queue and a transport of their own.
///
/// A stream (``HTTPClient/stream(_:bufferLimit:)``, ``ServerSentEvents``) holds an operation and a
/// connection for as long as it is open — minutes or hours. On the client's own queue and
/// connection pool, six open streams took every connection to their host
/// (``HTTPClient/Configuration/maximumConnectionsPerHost``) and eight every operation slot
/// (``HTTPClient/Configuration/maximumConcurrentOperations``), and ordinary requests waited until
/// their idle timeout. Here streams are limited by neither: each open stream holds one connection
/// of a second pool, made on the first stream, with the client's TLS, cookie and session
/// settings; ordinary requests keep theirs.
final class StreamAllowance: Sendable {
    // Sendable: `queue` is thread-safe and never replaced; the transport, made on first use, is
    // behind one Lock.

    /// Where streams run.
    var queue: OperationQueue { queueReference.value }
    /// A `LockedReference` that needs no lock (never replaced; `OperationQueue` synchronizes
    /// itself), so that sendability does not rest on the SDK marking `OperationQueue` `Sendable`.
    private let queueReference: LockedReference<OperationQueue> = {
        let queue = OperationQueue()
        queue.name = "org.conveyor.client.streams"
        // Every stream runs at once: a stream waiting in a queue behind others would never start.
        queue.maxConcurrentOperationCount = OperationQueue.defaultMaxConcurrentOperationCount
        return LockedReference(queue)
    }()
    private let madeTransport = Lock<(any Transport)?>(nil)

    /// The streams' transport, made on first use from `configuration` without a per-host
    /// connection limit: one connection per open stream.
    func transport(for configuration: HTTPClient.Configuration) -> any Transport {
        madeTransport.withLock { made in
            if let made { return made }
            var streamConfiguration = configuration
            streamConfiguration.maximumConnectionsPerHost = Self.connectionsPerHost
            let transport = TransportFactory.make(for: streamConfiguration)
            made = transport
            return transport
        }
    }

    /// The per-host connection limit of the streams' pool: high enough never to be the limit
    /// (libcurl's 0 would mean "none", but URLSession needs a number).
    static let connectionsPerHost = 10_000
}
