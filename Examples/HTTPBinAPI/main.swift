import Conveyor
import ConveyorTesting
import Foundation

// httpbin-api-example: the HTTPBinAPI client at work.
//
//   swift run HTTPBinAPIExample                         # against an embedded LocalHTTPServer
//   swift run HTTPBinAPIExample --base-url http://127.0.0.1:8080/   # against a local httpbin

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(
        """
        USAGE: HTTPBinAPIExample [--base-url URL]

        A per-API HTTPClient subclass exposed as a singleton, with typed async and callback
        endpoints, run against an embedded server, or the httpbin at URL (or $HTTPBIN_URL).
        It uses /get, /json, /post and /basic-auth/{user}/{password}.
        """)
    exit(0)
}

var embedded: LocalHTTPServer?
let arguments = CommandLine.arguments
if let index = arguments.firstIndex(of: "--base-url"), index + 1 < arguments.count {
    setenv("HTTPBIN_URL", arguments[index + 1], 1)
} else if ProcessInfo.processInfo.environment["HTTPBIN_URL"] == nil {
    let server = try LocalHTTPServer.started()
    embedded = server
    setenv("HTTPBIN_URL", server.baseURL.absoluteString, 1)
}

let api = HTTPBinAPI.shared
print("HTTPBinAPI at \(api.baseURL?.absoluteString ?? "?")")
do {
    let echo = try await api.echo(["q": "conveyor"])
    print("echo: q=\(echo.args["q"] ?? "?")")

    let callbackEcho = await withCheckedContinuation { continuation in
        api.echo(["style": "callback"]) { continuation.resume(returning: $0) }
    }
    print("callback echo: style=\((try? callbackEcho.get())?.args["style"] ?? "failed")")

    let show = try await api.slideshow()
    print("slideshow: \"\(show.slideshow.title)\" by \(show.slideshow.author), \(show.slideshow.slides.count) slides")

    let pet = try await api.create(.init(name: "Zoë", age: 3))
    print("created pet: \(pet.name), \(pet.age)")

    let login = try await api.login(user: "ada", password: "lovelace")
    print("login: authenticated=\(login.authenticated) as \(login.user)")

    do {
        _ = try await api.login(user: "ada", password: "wrong-password") as HTTPBinAPI.Authenticated
        print("wrong password: unexpectedly accepted")
        exit(1)
    } catch let error as ConveyorError {
        print("wrong password: \(error.statusCode.map { "HTTP \($0)" } ?? "\(error)")")
    }
    print("all calls succeeded")
} catch {
    print("failed: \(error)")
    exit(1)
}
embedded?.stop()
