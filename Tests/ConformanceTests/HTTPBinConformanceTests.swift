import Conveyor
import Foundation
import Testing

/// The core behaviours against a local httpbin: a server Conveyor's authors did not write.
@Suite("Conformance with httpbin")
struct HTTPBinConformanceTests {
    let client: HTTPClient

    init() async throws {
        client = HTTPClient(baseURL: try await HTTPBin.baseURL())
    }

    struct Echo: Decodable, Sendable {
        let args: [String: String]
        let headers: [String: String]
        let url: String
    }

    struct FormEcho: Decodable, Sendable {
        let form: [String: String]
        let headers: [String: String]
    }

    /// GETs `path` through the callback API and times it up to its completion block, so a busy
    /// test run that resumes late cannot inflate the duration.
    func timedGet(_ path: String) async -> (error: ConveyorError?, duration: Duration) {
        let finished = FinishTime()
        let completions = Completions()
        let start = ContinuousClock.now
        client.get(
            path,
            success: { _, _ in
                finished.mark()
                completions.add(nil)
            },
            failure: { _, error in
                finished.mark()
                completions.add(error)
            })
        await completions.first()
        return (completions.all.first ?? nil, (finished.instant ?? .now) - start)
    }

    @Test("GET with a query string: httpbin decodes the arguments back")
    func getWithQuery() async throws {
        let echo = try await client.get("get", parameters: ["q": "swift", "emoji": "👍🏽", "reserved": "a&b=c/d?"], as: Echo.self)
        #expect(echo.args == ["q": "swift", "emoji": "👍🏽", "reserved": "a&b=c/d?"])
    }

    @Test("POST form: httpbin decodes the form fields back")
    func postForm() async throws {
        let data = try await client.post("post", parameters: ["name": "Zoë", "count": 3, "flag": true])
        let echo = try JSONDecoder().decode(FormEcho.self, from: data)
        #expect(echo.form == ["name": "Zoë", "count": "3", "flag": "1"])
        #expect(echo.headers["Content-Type"] == "application/x-www-form-urlencoded; charset=utf-8")
    }

    @Test("Default headers and the User-Agent arrive")
    func defaultHeaders() async throws {
        client.setDefaultHeader("X-Conveyor-Test", value: "yes")
        let echo = try await client.get("headers", as: [String: [String: String]].self)
        let headers = try #require(echo["headers"])
        #expect(headers["X-Conveyor-Test"] == "yes")
        #expect(headers["User-Agent"]?.contains("Conveyor/") == true)
        // From the user's locale; Conveyor sends none in the C or POSIX locale (CI's), where
        // corelibs URLSession adds its own "en" and the curl transport nothing.
        if let sent = HTTPClient(configuration: .default).defaultValue(forHeader: "Accept-Language") {
            #expect(headers["Accept-Language"] == sent)
        } else {
            #expect(headers["Accept-Language"] == nil || headers["Accept-Language"] == "en")
        }
    }

    @Test("Basic auth with the right header succeeds")
    func basicAuthRight() async throws {
        client.setAuthorizationHeader(username: "user", password: "passwd")
        let body = try await client.get("basic-auth/user/passwd", as: [String: AnyDecodable].self)
        #expect(body["authenticated"]?.bool == true)
    }

    @Test("Basic auth with a right credential answering the challenge succeeds")
    func basicAuthCredential() async throws {
        client.defaultCredential = URLCredential(user: "user", password: "passwd", persistence: .none)
        let body = try await client.get("basic-auth/user/passwd", as: [String: AnyDecodable].self)
        #expect(body["user"]?.string == "user")
    }

    @Test(
        "Basic auth with wrong or missing credentials fails with the 401, not a hang",
        arguments: ["header", "credential", "missing"])
    func basicAuthFails(mode: String) async throws {
        switch mode {
        case "header": client.setAuthorizationHeader(username: "user", password: "wrong")
        case "credential": client.defaultCredential = URLCredential(user: "user", password: "wrong", persistence: .none)
        default: break
        }
        let (error, duration) = await timedGet("basic-auth/user/passwd")
        #expect(error?.statusCode == 401)
        // No hang (corelibs alone waits for ever on a Basic 401): 30 s keeps clear of a loaded
        // machine (5 s failed at 5.98 s and 6.44 s) and of the 60 s idle timeout.
        #expect(duration < .seconds(30))
    }

    @Test(
        "/hidden-basic-auth: right credentials succeed, wrong or missing ones get its 404, none hangs",
        arguments: ["right", "wrong", "missing"])
    func hiddenBasicAuth(mode: String) async throws {
        if mode != "missing" { client.setAuthorizationHeader(username: "user", password: mode == "right" ? "passwd" : "nope") }
        let (error, duration) = await timedGet("hidden-basic-auth/user/passwd")
        if mode == "right" { #expect(error == nil) } else { #expect(error?.statusCode == 404) }
        // No hang (corelibs alone waits for ever on a Basic 401): 30 s keeps clear of a loaded
        // machine (5 s failed at 5.98 s and 6.44 s) and of the 60 s idle timeout.
        #expect(duration < .seconds(30))
    }

    @Test("/status/404 and /status/500 fail with the status and the response", arguments: [404, 500])
    func statusFailures(code: Int) async throws {
        await #expect {
            try await client.get("status/\(code)")
        } throws: { error in
            guard case .unacceptableStatusCode(let status, let response, _) = error as? ConveyorError else { return false }
            return status == code && response.url?.path == "/status/\(code)"
        }
    }

    @Test("/status/418 fails with httpbin's body in the error")
    func statusWithBody() async throws {
        await #expect {
            try await client.get("status/418")
        } throws: { error in
            let error = error as? ConveyorError
            return error?.statusCode == 418 && error?.responseData.map { String(decoding: $0, as: UTF8.self) }?.contains("teapot") == true
        }
    }

    @Test("/redirect/3 is followed to /get")
    func redirects() async throws {
        let response = try await client.response(method: .get, path: "redirect/3")
        #expect(response.statusCode == 200)
        #expect(response.metrics.redirectCount == 3)
        #expect(response.request.url?.path == "/get")
    }

    @Test("Cancelling /delay/10 finishes before httpbin answers, with a cancellation error, once")
    func cancelDelay() async throws {
        let completions = Completions()
        let started = AsyncStream.makeStream(of: Void.self)
        let finishedAt = FinishTime()
        let operation = client.operation(
            // httpbin's longest delay: the cancel must come before the answer, on a loaded machine too.
            with: try client.request(method: .get, path: "delay/10"), success: { _, _ in completions.add(nil) },
            failure: { _, error in
                finishedAt.mark()
                completions.add(error)
            })
        // Cancelled from a dispatch thread the moment it starts: a cancel from this task waited
        // for a cooperative thread, and beside four CPU-bound processes httpbin answered first.
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidStart, object: operation, queue: nil) {
            [operation] _ in
            DispatchQueue.global().async { operation.cancel() }
            started.continuation.yield()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let enqueuedAt = ContinuousClock.now
        client.enqueue(operation)
        for await _ in started.stream { break }
        await completions.first()
        // The bound is the promise itself: httpbin answers 10 s after the request arrives, so a
        // failure block that ran sooner after the enqueue (measured in the block, so a late test
        // resumption cannot fail it) finished the operation before the answer, not on it.
        let finished = try #require(finishedAt.instant)
        #expect(finished - enqueuedAt < .seconds(10))
        client.configuration.callbackQueue.sync {}
        #expect(completions.all.count == 1)
        #expect(completions.all.first??.isCancelled == true)
    }

    @Test("200 concurrent GETs through one client all succeed")
    func concurrentGets() async throws {
        try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<200 {
                group.addTask { try await client.get("get", parameters: ["i": index], as: Echo.self).args["i"] }
            }
            var seen = Set<String>()
            for try await value in group { if let value { seen.insert(value) } }
            #expect(seen.count == 200)
        }
    }
}

/// A JSON value decoded loosely, for httpbin answers of mixed types.
struct AnyDecodable: Decodable, Sendable {
    let bool: Bool?
    let string: String?
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        bool = try? container.decode(Bool.self)
        string = try? container.decode(String.self)
    }
}
