import ConveyorTestSupport
import Foundation
import Testing

@Suite("The HTTPBinAPI example against a real httpbin")
struct HTTPBinExampleTests {
    @Test("Every typed call of HTTPBinAPIExample succeeds against httpbin")
    func runsAgainstHTTPBin() async throws {
        let base = try await HTTPBin.baseURL()
        let result = try await ExampleProcess.run("HTTPBinAPIExample", arguments: ["--base-url", base.absoluteString])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(result.output.contains("slideshow: \"Sample Slide Show\""), "\(result.output)")
        #expect(result.output.contains("wrong password: HTTP 401") && result.output.contains("all calls succeeded"))
    }
}
