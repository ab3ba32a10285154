import Conveyor
import Foundation

/// One client per API, as a singleton configured at start-up: the pattern of AFNetworking's
/// `+sharedClient`. Each endpoint is a typed method, in an async form and a callback form.
final class HTTPBinAPI: HTTPClient, @unchecked Sendable {
    // @unchecked Sendable: adds no stored state; HTTPClient keeps its own behind one Mutex.

    /// The API's base URL: `HTTPBIN_URL` from the environment, else a local httpbin on 8080.
    static var baseURLFromEnvironment: URL {
        URL(string: ProcessInfo.processInfo.environment["HTTPBIN_URL"] ?? "http://127.0.0.1:8080/")!
    }

    /// The one client the app uses.
    static let shared = HTTPBinAPI(baseURL: baseURLFromEnvironment)

    override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
        var configuration = configuration
        configuration.idleTimeout = 10
        configuration.retryPolicy = .attempts(2)
        super.init(baseURL: baseURL, configuration: configuration)
        setDefaultHeader("Accept", value: "application/json")
        register(JSONRequestOperation.self)
        #if DEBUG
            // Request/response logging in debug builds only (to stderr; secrets redacted).
            NetworkLogger.shared.level = .info
            NetworkLogger.shared.startLogging()
        #endif
    }

    // MARK: - Models

    /// `/get`'s echo.
    struct Echo: Decodable, Sendable {
        let args: [String: String]
        let headers: [String: String]
        let url: String
    }

    /// `/post`'s echo of a JSON body.
    struct JSONEcho<Body: Decodable & Sendable>: Decodable, Sendable {
        let json: Body
    }

    /// `/json`'s document.
    struct Slideshow: Decodable, Sendable {
        struct Slide: Decodable, Sendable {
            let title: String
        }
        struct Show: Decodable, Sendable {
            let title: String
            let author: String
            let slides: [Slide]
        }
        let slideshow: Show
    }

    /// A new pet, sent as JSON.
    struct Pet: Codable, Sendable, Equatable {
        let name: String
        let age: Int
    }

    /// `/basic-auth`'s answer.
    struct Authenticated: Decodable, Sendable {
        let authenticated: Bool
        let user: String
    }

    // MARK: - Endpoints, async

    /// `GET /get` with `query`.
    func echo(_ query: [String: String]) async throws -> Echo {
        try await get("get", parameters: query, as: Echo.self)
    }

    /// `GET /json`.
    func slideshow() async throws -> Slideshow {
        try await get("json", as: Slideshow.self)
    }

    /// `POST /post` with `pet` as a JSON body; returns what the server decoded.
    func create(_ pet: Pet) async throws -> Pet {
        let response = try await response(method: .post, path: "post", body: pet, requestSerializer: JSONRequestSerializer())
        return try JSONDecoder().decode(JSONEcho<Pet>.self, from: response.data).json
    }

    /// Logs in to the account httpbin's `/basic-auth/ada/lovelace` knows, with these credentials.
    func login(user: String, password: String) async throws -> Authenticated {
        setAuthorizationHeader(username: user, password: password)
        defer { clearAuthorizationHeader() }
        return try await get("basic-auth/ada/lovelace", as: Authenticated.self)
    }

    // MARK: - Endpoints, callbacks (AFNetworking style)

    /// `GET /get` with `query`; `completion` runs on the client's callback queue.
    @discardableResult
    func echo(_ query: [String: String], completion: @escaping @Sendable (Result<Echo, ConveyorError>) -> Void) -> HTTPRequestOperation {
        get(
            "get", parameters: query,
            success: { operation, _ in
                do {
                    completion(.success(try JSONDecoder().decode(Echo.self, from: operation.responseData ?? Data())))
                } catch {
                    completion(
                        .failure(
                            .responseSerializationFailed(underlying: error, response: operation.response, data: operation.responseData)))
                }
            },
            failure: { _, error in
                completion(.failure(error))
            })
    }
}
