import Conveyor
import Foundation

/// One step of the demo: a name, what it shows, and the code that shows it.
struct DemoStep: Sendable {
    let name: String
    let summary: String
    let run: @Sendable (DemoClient) async throws -> String
}

/// The demo's API client: the pattern Conveyor is built for, one subclass per API.
final class DemoClient: HTTPClient, @unchecked Sendable {
    // @unchecked Sendable: adds no state to HTTPClient, whose state is behind its Mutex.

    override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
        super.init(baseURL: baseURL, configuration: configuration)
        setDefaultHeader("Accept", value: "application/json")
    }

    struct Echo: Decodable, Sendable {
        let args: [String: String]
        let headers: [String: String]
        let url: String
    }

    struct FormEcho: Decodable, Sendable {
        let form: [String: String]
    }

    /// A typed endpoint, async.
    func echo(_ parameters: Parameters) async throws -> Echo {
        try await get("get", parameters: parameters, as: Echo.self)
    }
}

enum DemoSteps {
    static let all: [DemoStep] = [
        DemoStep(name: "get", summary: "a JSON GET decoded into a Decodable model") { client in
            let echo = try await client.echo(["q": "conveyor", "lang": "swift"])
            return "args \(echo.args.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")), User-Agent \(echo.headers["User-Agent"] ?? "?")"
        },
        DemoStep(name: "callback", summary: "the AFNetworking-style callback API, with the operation returned") { client in
            let status = try await withCheckedThrowingContinuation { continuation in
                client.get("get", parameters: ["style": "callback"], success: { operation, _ in
                    continuation.resume(returning: operation.response?.statusCode ?? 0)
                }, failure: { _, error in
                    continuation.resume(throwing: error)
                })
            }
            return "success block ran with status \(status)"
        },
        DemoStep(name: "form-post", summary: "a form-encoded POST echoed back") { client in
            let data = try await client.post("post", parameters: ["name": "Zoë", "city": "Zürich"])
            let form = try JSONDecoder().decode(DemoClient.FormEcho.self, from: data).form
            return "server decoded \(form.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
        },
        DemoStep(name: "auth", summary: "Basic auth: right credentials succeed, wrong ones fail fast (no hang)") { client in
            client.setAuthorizationHeader(username: "user", password: "passwd")
            defer { client.clearAuthorizationHeader() }
            _ = try await client.get("basic-auth/user/passwd")
            client.setAuthorizationHeader(username: "user", password: "wrong")
            let start = ContinuousClock.now
            do {
                _ = try await client.get("basic-auth/user/passwd")
                throw DemoFailure("a wrong password was accepted")
            } catch let error as ConveyorError where error.statusCode == 401 {
                return "right password: 200; wrong password: 401 after \(ContinuousClock.now - start)"
            }
        },
        DemoStep(name: "redirect", summary: "a chain of 3 redirects followed by Conveyor itself") { client in
            let response = try await client.response(method: .get, path: "redirect/3")
            return "\(response.metrics.redirectCount) redirects, ended at \(response.request.url?.path ?? "?") with \(response.statusCode)"
        },
        DemoStep(name: "errors", summary: "a 404 becomes a typed, readable ConveyorError") { client in
            do {
                _ = try await client.get("status/404")
                throw DemoFailure("404 did not fail")
            } catch let error as ConveyorError {
                guard error.statusCode == 404 else { throw error }
                return "\(error)"
            }
        },
        DemoStep(name: "timeout", summary: "a fractional idle timeout (0.5 s) against a slow endpoint") { client in
            var configuration = HTTPClient.Configuration.default
            configuration.timeout = 0.5
            let impatient = HTTPClient(baseURL: client.baseURL, configuration: configuration)
            let start = ContinuousClock.now
            do {
                _ = try await impatient.get("delay/3")
                throw DemoFailure("no timeout")
            } catch let error as ConveyorError where error.isTimeout {
                return "timed out after \(ContinuousClock.now - start): \(error)"
            }
        },
        DemoStep(name: "cancel", summary: "cancelling the awaiting Task cancels the operation") { client in
            let task = Task { try await client.get("delay/3") }
            task.cancel()
            do {
                _ = try await task.value
                throw DemoFailure("not cancelled")
            } catch let error as ConveyorError where error.isCancelled {
                return "\(error)"
            }
        },
        DemoStep(name: "concurrent", summary: "50 GETs in flight through one client") { client in
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 { group.addTask { _ = try await client.echo(["i": "\(index)"]) } }
                try await group.waitForAll()
            }
            return "50 responses in \(ContinuousClock.now - start)"
        },
    ]
}

struct DemoFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
