import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("Authentication never hangs")
struct AuthenticationTests {
    @Test("Right Basic credentials in the default header succeed")
    func headerRight() async throws {
        try await withServer { _, client in
            client.setAuthorizationHeader(username: "user", password: "passwd")
            let body = try await client.get("basic-auth/user/passwd").jsonObject
            #expect(body["authenticated"] as? Bool == true)
        }
    }

    @Test(
        "A 401 challenge with no, or wrong, credentials fails with authenticationFailed, not a hang",
        arguments: [nil, "wrong"] as [String?])
    func challengeFails(password: String?) async throws {
        try await withServer { _, client in
            if let password { client.defaultCredential = URLCredential(user: "user", password: password, persistence: .none) }
            let probe = CompletionProbe()
            let start = ContinuousClock.now
            client.get("basic-auth/user/passwd", success: probe.success, failure: probe.failure)
            guard case .authenticationFailed(let response, _) = await probe.outcome().error else {
                Issue.record("expected authenticationFailed")
                return
            }
            #expect(response?.statusCode == 401)
            // Timed in the failure block, so a busy test run resuming late cannot fail it.
            let completedAt = try #require(probe.firstCompletionTime)
            // corelibs alone hangs here for ever; 30 s is far from a fast answer (~0.1 s) and
            // from the 60 s idle timeout (5 s failed at 5.98 s on a loaded machine).
            #expect(completedAt - start < .seconds(30))
        }
    }

    @Test("A wrong Authorization header gets the 401 as authenticationFailed")
    func headerWrong() async throws {
        try await withServer { _, client in
            client.setAuthorizationHeader(username: "user", password: "nope")
            await #expect {
                try await client.get("basic-auth/user/passwd")
            } throws: { error in
                // authenticationFailed itself, with the 401: not any error that carries the status.
                guard case .authenticationFailed(let response, _)? = error as? ConveyorError else { return false }
                return response?.statusCode == 401
            }
        }
    }

    @Test("The default credential answers the challenge; an operation's own credential overrides it")
    func credentialAnswersChallenge() async throws {
        try await withServer { server, client in
            client.defaultCredential = URLCredential(user: "user", password: "passwd", persistence: .none)
            let body = try await client.get("basic-auth/user/passwd").jsonObject
            #expect(body["user"] as? String == "user")
            #expect(server.requestCount(path: "/basic-auth/user/passwd") == 2)

            // A password no other test's text contains: credentials sent are masked by value in
            // every text of the process (a password "secret" masked the key `"secret"` in a
            // concurrent logger test).
            let probe = CompletionProbe()
            let operation = client.operation(
                with: try client.request(method: .get, path: "basic-auth/other/other-s3cret"), success: nil, failure: nil)
            operation.credential = URLCredential(user: "other", password: "other-s3cret", persistence: .none)
            probe.attach(to: operation)
            client.enqueue(operation)
            #expect(await probe.outcome().data?.jsonObject["user"] as? String == "other")
        }
    }

    @Test("A 401 without a challenge header is an ordinary status failure")
    func plain401() async throws {
        try await withServer { server, client in
            server.route("/no-challenge") { _ in .text("who are you?", status: 401) }
            await #expect {
                try await client.get("no-challenge")
            } throws: { error in
                let error = error as? ConveyorError
                return error?.statusCode == 401 && error?.responseData == Data("who are you?".utf8)
            }
        }
    }
}
