import Conveyor
import ConveyorTesting
import Foundation

/// Runs `body` with a fresh LocalHTTPServer and a client pointed at it; stops the server after.
@discardableResult
func withServer<T>(
    configuration: HTTPClient.Configuration = .default,
    _ body: (LocalHTTPServer, HTTPClient) async throws -> T
) async throws -> T {
    let server = try LocalHTTPServer.started()
    defer { server.stop() }
    let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
    return try await body(server, client)
}

extension HTTPClient.Configuration {
    /// The defaults with another idle timeout.
    static func timeout(_ seconds: TimeInterval) -> Self {
        var configuration = Self.default
        configuration.timeout = seconds
        return configuration
    }
}

extension Data {
    /// The body parsed as a JSON object.
    var jsonObject: [String: Any] { (try? JSONSerialization.jsonObject(with: self)) as? [String: Any] ?? [:] }
}

extension String {
    /// The string without one trailing `suffix`.
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
