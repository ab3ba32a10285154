// conveyor-demo: walks through what Conveyor does, against an embedded LocalHTTPServer by
// default or any httpbin-compatible server with --base-url.
import Conveyor
import ConveyorTesting
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())

func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

if arguments.contains("--help") || arguments.contains("-h") {
    print(
        """
        USAGE: conveyor-demo [--base-url URL] [--step NAME]
               conveyor-demo --serve PORT

        Runs each step against an embedded local server (or the httpbin-compatible server at URL).
        --serve runs only the embedded server, on 127.0.0.1:PORT, until you stop it (Ctrl-C):
        a server to try the README's snippets against.

        STEPS:
        \(DemoSteps.all.map { "  \($0.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \($0.summary)" }.joined(separator: "\n"))
        """)
    exit(0)
}

if let text = value(after: "--serve") {
    guard let port = Int(text), (0...65535).contains(port) else {
        FileHandle.standardError.write(Data("--serve takes a port number, 0 to 65535 (0: any free one)\n".utf8))
        exit(2)
    }
    do {
        let server = try LocalHTTPServer.started(port: port)
        // Written unbuffered: a program reading the first line (a test, a script) sees it at once.
        FileHandle.standardOutput.write(
            Data(
                """
                Serving on \(server.baseURL.absoluteString) (Ctrl-C to stop). Routes, named as httpbin's:
                  /get /post /put /patch /delete /anything  echo the request as JSON (args, form, json, headers)
                  /status/{code} /delay/{seconds} /bytes/{n} /drip /range/{n} (at most 102,400 bytes)
                  /redirect/{n} /basic-auth/{user}/{password} /bearer /response-headers?Name=value
                  /cache /cache/{seconds} /etag/{etag} /json /html /xml /text /image/{png|jpeg|gif}
                  /fault/{name}  reset, close-mid-body, stall-after-headers, malformed-status-line, ...
                Request bodies over \(server.maximumStoredBodySize) bytes are read but not echoed.

                """.utf8))
        dispatchMain()
    } catch {
        FileHandle.standardError.write(Data("cannot serve on port \(port): \(error)\n".utf8))
        exit(1)
    }
}

var steps = DemoSteps.all
if let name = value(after: "--step") {
    steps = steps.filter { $0.name == name }
    guard !steps.isEmpty else {
        FileHandle.standardError.write(Data("unknown step \"\(name)\"; see --help\n".utf8))
        exit(2)
    }
}

var server: LocalHTTPServer?
let baseURL: URL
if let text = value(after: "--base-url") {
    guard let url = URL(string: text) else {
        FileHandle.standardError.write(Data("not a URL: \(text)\n".utf8))
        exit(2)
    }
    baseURL = url
} else {
    let embedded = try LocalHTTPServer.started()
    server = embedded
    baseURL = embedded.baseURL
}

print("Conveyor \(ConveyorLibrary.version) demo against \(baseURL.absoluteString)\n")
let client = DemoClient(baseURL: baseURL, embeddedServer: server)
var failed: [String] = []
var skipped: [String] = []
for step in steps {
    print("▸ \(step.name): \(step.summary)")
    do {
        print("  ✓ \(try await step.run(client))")
    } catch let skip as DemoSkip {
        print("  – skipped: \(skip)")
        skipped.append(step.name)
    } catch {
        print("  ✗ \(error)")
        failed.append(step.name)
    }
}
server?.stop()
let succeeded = steps.count - failed.count - skipped.count
if failed.isEmpty, skipped.isEmpty {
    print(steps.count == 1 ? "\nThe step succeeded." : "\nAll \(steps.count) steps succeeded.")
} else {
    var summary = "\n\(succeeded) of \(DemoFormat.count(steps.count, "step")) succeeded"
    if !skipped.isEmpty { summary += "; skipped (this server lacks what they need): \(skipped.joined(separator: ", "))" }
    if !failed.isEmpty { summary += "; failed: \(failed.joined(separator: ", "))" }
    print(summary + ".")
    if !failed.isEmpty { exit(1) }
}
