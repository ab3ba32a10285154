import ConveyorTestSupport
import Foundation
import Testing

@Suite("The HTTPBinAPI example against a real httpbin")
struct HTTPBinExampleTests {
    @Test("Every typed call of HTTPBinAPIExample succeeds against httpbin")
    func runsAgainstHTTPBin() async throws {
        let base = try await HTTPBin.baseURL()
        let result = try await ExampleProcess.run("HTTPBinAPIExample", arguments: ["--base-url", base.absoluteString])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        #expect(result.output.contains("slideshow: \"Sample Slide Show\""), "\(Excerpt.of(result.output))")
        #expect(result.output.contains("wrong password: HTTP 401") && result.output.contains("all calls succeeded"))
    }

    @Test("The demo against httpbin claims only what it did: capped or missing routes are skipped, and counted")
    func demoIsHonestAgainstHTTPBin() async throws {
        let base = try await HTTPBin.baseURL()
        for step in ["download", "retry"] {
            let result = try await ExampleProcess.run("conveyor-demo", arguments: ["--base-url", base.absoluteString, "--step", step])
            #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
            #expect(result.output.contains("– skipped:") && !result.output.contains("✓"), "\(Excerpt.of(result.output))")
            #expect(result.output.contains("0 of 1 step succeeded; skipped"), "\(Excerpt.of(result.output))")
        }
        let passing = try await ExampleProcess.run("conveyor-demo", arguments: ["--base-url", base.absoluteString, "--step", "get"])
        #expect(passing.status == 0 && passing.output.contains("The step succeeded."), "\(passing.output)")
    }
}
