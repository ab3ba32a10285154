import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Turns ``HTTPClient/TransportKind`` into a ``Transport``.
enum TransportFactory {
    /// The transport of operations that were not created by a client: `.automatic` with the
    /// default settings.
    static let shared: any Transport = {
        #if os(Linux)
            if resolve(.automatic, sessionConfiguration: .default) == .curl, let curl = CurlTransport.shared { return curl }
        #endif
        return URLSessionTransport.shared
    }()

    /// A transport for a client with `configuration`.
    static func make(for configuration: HTTPClient.Configuration) -> any Transport {
        #if os(Linux)
            make(for: configuration, library: CurlLibrary.shared)
        #else
            make(for: configuration, library: ())
        #endif
    }

    #if os(Linux)
        typealias LoadedLibrary = Result<CurlLibrary, CurlLibrary.LoadError>
    #else
        typealias LoadedLibrary = Void
    #endif

    /// A transport for `configuration`, with libcurl as `library` says it loaded.
    static func make(
        for configuration: HTTPClient.Configuration, library: LoadedLibrary, note: (String) -> Void = noteFallback
    ) -> any Transport {
        // One place for the connection limit, whichever transport reads it.
        let session = configuration.sessionConfiguration.copy() as! URLSessionConfiguration
        session.httpMaximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        let kind = resolve(configuration.transport, sessionConfiguration: session)
        #if os(Linux)
            if kind == .urlSession, configuration.assignedMaximumConnectionsPerHost == nil {
                session.httpMaximumConnectionsPerHost = Self.corelibsConnectionsPerHost
            }
            if kind == .curl {
                switch library {
                case .success(let library):
                    let settings = CurlTransport.Settings(
                        sessionConfiguration: session, tls: configuration.tls, route: RouteSettings(configuration), library: library)
                    return CurlTransport(library: library, settings: settings)
                case .failure(let error):
                    note("libcurl could not be loaded (\(error)); using URLSession")
                }
            }
        #else
            if kind == .curl { note("the curl transport exists on Linux only; using URLSession") }
        #endif
        return URLSessionTransport(
            configuration: session, tls: configuration.tls, route: RouteSettings(configuration),
            pumpsBodyStreams: configuration.pumpsBodyStreams)
    }

    /// The URLSession transport's default connections per host on Linux: corelibs sets no
    /// connection-cache size, so libcurl keeps 4 idle connections per transfer in its multi
    /// handle and closes the rest whenever the handle drains to one transfer.
    static let corelibsConnectionsPerHost = 4

    /// What `.automatic` (or an explicit kind) means here: `.curl` or `.urlSession`.
    static func resolve(
        _ kind: HTTPClient.TransportKind, sessionConfiguration: URLSessionConfiguration,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> HTTPClient.TransportKind {
        guard kind == .automatic else { return kind }
        switch environment["CONVEYOR_TRANSPORT"]?.lowercased() {
        case "curl": return .curl
        case "urlsession": return .urlSession
        default: break
        }
        #if os(Linux)
            if registersOwnProtocols(sessionConfiguration) { return .urlSession }
            return (try? CurlLibrary.shared.get()) != nil ? .curl : .urlSession
        #else
            return .urlSession
        #endif
    }

    /// Whether the configuration lists `URLProtocol` classes beyond Foundation's own (whose
    /// names start with an underscore on Linux).
    static func registersOwnProtocols(_ configuration: URLSessionConfiguration) -> Bool {
        (configuration.protocolClasses ?? []).contains { !String(describing: $0).hasPrefix("_") }
    }

    private static let notes = Lock(Set<String>())

    /// Prints a note to standard error, once per process and text.
    static func noteFallback(_ text: String) {
        guard notes.withLock({ $0.insert(text).inserted }) else { return }
        FileHandle.standardError.write(Data("Conveyor: \(text).\n".utf8))
    }
}
