import Conveyor
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

/// The examples are real programs: each is built with the tests and run here to its end,
/// so they never rot.
@Suite("Examples run to completion")
struct ExamplesTests {
    @Test("HTTPBinAPIExample against its embedded server: every typed call answers")
    func httpBinAPI() async throws {
        let result = try await ExampleProcess.run("HTTPBinAPIExample", arguments: [])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        for line in [
            "echo: q=conveyor", "callback echo: style=callback", "created pet: Zoë, 3",
            "login: authenticated=true as ada", "wrong password: HTTP 401", "all calls succeeded",
        ] {
            #expect(result.output.contains(line), "missing \"\(line)\" in: \(Excerpt.of(result.output))")
        }
    }

    @Test("QuickStartExample, the README's quick start, against the embedded server's routes: every part answers")
    func quickStart() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let result = try await ExampleProcess.run("QuickStartExample", arguments: [server.baseURL.absoluteString])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        for line in [
            "async: q=swift", "blocks: HTTP 200", "JSON body: name=Ada", "multipart: album=2026 caption=A caption",
            "JSON operation: JSONRequestOperation", "image: png 3x2", "download: saved as big.bin", "batch: all 3 finished",
            "cache: network, then cache", "avatar: jpeg 3x2", "quick start: done",
        ] {
            #expect(result.output.contains(line), "missing \"\(line)\" in: \(Excerpt.of(result.output))")
        }
        #expect(
            result.errors.contains("token=%3Credacted%3E") && !result.errors.contains("s3cr3t"),
            "\(Excerpt.of(result.errors, showing: ["token=", "s3cr3t"]))")
    }

    @Test("FileTransferExample: uploads three files, downloads them back through an interruption, identical")
    func fileTransfer() async throws {
        let result = try await ExampleProcess.run("FileTransferExample", arguments: [])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        // It says what it does before making its files (it was silent for 25-40 s, issue 58).
        #expect(result.output.hasPrefix("making 3 files (1.8 MB of random bytes)"), "\(Excerpt.of(result.output))")
        #expect(result.output.contains("uploaded 3 files"))
        #expect(result.output.components(separatedBy: "identical after 2 attempts").count == 4, "\(Excerpt.of(result.output))")
        #expect(result.output.contains("all files round-tripped"))
    }

    @Test("AFNetworkingGuideExample: every sample of the AFNetworking 1.x guide, ported, runs to its end")
    func afNetworkingGuide() async throws {
        let result = try await ExampleProcess.run("AFNetworkingGuideExample", arguments: [])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        for line in [
            "sample data: key1=value1 key2=override key3=value3, User-Agent sample", "reachability: reachable (loopback)",
            "multipart upload: HTTP 200", "image: placeholder gif, then png 3x2",
            "download: 200000 bytes through outputStream, progress reached 1.00", "activity indicator: shown",
            "the guide ran to its end", "logger: ← 200 GET",
        ] {
            #expect(result.output.contains(line), "missing \"\(line)\" in: \(Excerpt.of(result.output))")
        }
    }

    @Test("ServerSentEventsExample follows events through a dropped connection and stops on 204")
    func serverSentEvents() async throws {
        let result = try await ExampleProcess.run("ServerSentEventsExample", arguments: [])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        for line in [
            "event 1 [tick]: tick 1", "event 3 [tick]: tick 3", "event 4 [message]: resumed after 3 / on two lines",
            "4 events over 3 connections; the server said 204",
        ] {
            #expect(result.output.contains(line), "missing \"\(line)\" in: \(Excerpt.of(result.output))")
        }
    }

    @Test("OutboxExample keeps comments across a restart and delivers them in order through a 503 window, once each")
    func outbox() async throws {
        let directory = TemporaryDirectory.base.appendingPathComponent("conveyor-outbox-example-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await ExampleProcess.run("OutboxExample", arguments: ["--directory", directory.path])
        #expect(result.status == 0, "\(Excerpt.of(result.output + result.errors))")
        for line in [
            "the app stops with 3 comments waiting on disk; the server has seen 0 requests", "restarted: 3 comments waiting",
            "server applied 3 comments in order: \"On the train\", \"Tunnel ahead\", \"Back online?\"",
            "5 requests for 3 comments; files left in the outbox: 0",
        ] {
            #expect(result.output.contains(line), "missing \"\(line)\" in: \(Excerpt.of(result.output))")
        }
        #expect(result.output.contains(": 201 after 2 failed attempts"), "\(Excerpt.of(result.output))")
    }

    @Test("conveyor-demo --serve 0 serves the httpbin-like routes at the address it prints, until stopped")
    func demoServe() async throws {
        let output = Pipe()
        let process = try ChildProcess(ExampleProcess.executable("conveyor-demo").path, ["--serve", "0"], standardOutput: .pipe(output))
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        // The first line names the address; read it off the cooperative pool (a blocking read).
        let firstLine = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var bytes = Data()
                while !bytes.contains(UInt8(ascii: "\n")) {
                    let chunk = PipeIO.readChunk(from: output.fileHandleForReading)  // retries EINTR
                    if chunk.isEmpty { break }
                    bytes.append(chunk)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self).components(separatedBy: "\n")[0])
            }
        }
        let address = try #require(firstLine.components(separatedBy: " ").first { $0.hasPrefix("http://127.0.0.1:") })
        let client = HTTPClient(baseURL: try #require(URL(string: address)))
        let echo = try JSONSerialization.jsonObject(with: try await client.get("get", parameters: ["q": "snippet"])) as? [String: Any]
        #expect((echo?["args"] as? [String: String])?["q"] == "snippet")
    }
}
