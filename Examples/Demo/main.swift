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

        Runs each step against an embedded local server (or the httpbin-compatible server at URL).

        STEPS:
        \(DemoSteps.all.map { "  \($0.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \($0.summary)" }.joined(separator: "\n"))
        """)
    exit(0)
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
for step in steps {
    print("▸ \(step.name): \(step.summary)")
    do {
        print("  ✓ \(try await step.run(client))")
    } catch {
        print("  ✗ \(error)")
        failed.append(step.name)
    }
}
server?.stop()
if failed.isEmpty {
    print("\nAll \(steps.count) steps succeeded.")
} else {
    print("\nFailed steps: \(failed.joined(separator: ", "))")
    exit(1)
}
