import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("File downloads stream to disk")
struct FileDownloadTests {
    final class Scratch: Sendable {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-downloads-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: url) }
        var contents: [String] { (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.sorted() ?? [] }
    }

    static func pattern(_ count: Int) -> Data {
        // Shared with other suites: a 64 kB block repeated, first byte varied per block.
        let block = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        var data = Data(capacity: count)
        var index = 0
        while data.count < count {
            var next = block.prefix(count - data.count)
            next[next.startIndex] = UInt8(truncatingIfNeeded: index)
            data.append(next)
            index += 1
        }
        return data
    }

    @Test("A 50 MB download arrives byte for byte, with progress, and no partial file remains")
    func large() async throws {
        let scratch = try Scratch()
        let body = Self.pattern(50_000_000)
        try await withServer { server, client in
            server.route("/big.bin") { _ in .init(headers: ["Content-Type": "application/octet-stream"], body: .data(body)) }
            let last = LastValue()
            let file = try await client.download(
                "big.bin", to: .directory(scratch.url), progress: { _, total, expected in last.set(total, expected) })
            #expect(file == scratch.url.appendingPathComponent("big.bin"))
            #expect(try Data(contentsOf: file) == body)
            #expect(last.value == (Int64(body.count), Int64(body.count)))
            #expect(scratch.contents == ["big.bin"])
        }
    }

    @Test("The file name comes from Content-Disposition, reduced to one safe component")
    func suggestedNames() async throws {
        let scratch = try Scratch()
        try await withServer { server, client in
            let cases = [
                ("attachment; filename=\"report.pdf\"", "report.pdf"),
                ("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt; filename=\"resume.txt\"", "résumé.txt"),
                ("attachment; filename=\"../../etc/passwd\"", "passwd"),
                ("attachment; filename=\"..\"", "download"),
            ]
            for (index, (disposition, expected)) in cases.enumerated() {
                server.route("/d\(index)") { _ in .init(headers: ["Content-Disposition": disposition], body: .data(Data("x".utf8))) }
                let file = try await client.download("d\(index)", to: .directory(scratch.url))
                #expect(file.lastPathComponent == expected)
                #expect(
                    file.deletingLastPathComponent().path(percentEncoded: false).trimmingSuffix("/")
                        == scratch.url.path(percentEncoded: false).trimmingSuffix("/"))
            }
        }
    }

    @Test("An existing file is kept unless removePreviousFile; intermediate directories are created")
    func destinations() async throws {
        let scratch = try Scratch()
        try await withServer { _, client in
            let target = scratch.url.appendingPathComponent("a/b/c.bin")
            let file = try await client.download("bytes/100", to: .file(target))
            let written = try Data(contentsOf: target)
            #expect(file == target && written.count == 100)
            await #expect {
                try await client.download("bytes/200", to: .file(target), options: [])
            } throws: { error in
                if case .downloadFailed(.destinationExists(target)) = error as? ConveyorError { true } else { false }
            }
            _ = try await client.download("bytes/200", to: .file(target), options: [.removePreviousFile])
            #expect(try Data(contentsOf: target).count == 200)
            let custom = try await client.download(
                "bytes/10",
                to: .custom { response, name in
                    scratch.url.appendingPathComponent("\(response.statusCode)-\(name)")
                })
            #expect(custom.lastPathComponent == "200-10")
        }
    }

    @Test("One set of defaults: every initializer and client.download create directories and replace nothing")
    func sharedDefaults() async throws {
        let scratch = try Scratch()
        try await withServer { server, client in
            let request = try client.request(method: .get, path: "bytes/64")
            let direct = FileDownloadOperation(request: request)
            let withDestination = FileDownloadOperation(request: request, destination: .directory(scratch.url))
            #expect(direct.options == .default && withDestination.options == .default)
            #expect(FileDownloadOperation.Options.default == [.createIntermediateDirectories])
            // init(request:) writes into a directory of its own: two downloads of one name never collide.
            let probes = [CompletionProbe(), CompletionProbe()]
            let operations = [direct, FileDownloadOperation(request: request)]
            for (operation, probe) in zip(operations, probes) {
                probe.attach(to: operation)
                client.enqueue(operation)
            }
            for probe in probes { #expect(await probe.outcome().error == nil) }
            let files = operations.compactMap(\.destinationURL)
            #expect(files.count == 2 && files[0] != files[1] && files.allSatisfy { $0.lastPathComponent == "64" })
            for file in files {
                #expect(try Data(contentsOf: file).count == 64)
                try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
            }
        }
    }

    @Test(
        "removePreviousFile replaces a regular file but never a directory or a symbolic link",
        arguments: HTTPClient.TransportKind.testedKinds)
    func neverReplacesDirectoriesOrLinks(transport: HTTPClient.TransportKind) async throws {
        let scratch = try Scratch()
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        try await withServer(configuration: configuration) { _, client in
            let directory = scratch.url.appendingPathComponent("64")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("precious"), withIntermediateDirectories: true)
            await #expect {
                try await client.download("bytes/64", to: .directory(scratch.url), options: [.removePreviousFile])
            } throws: { error in
                // corelibs adds a trailing "/" to a URL naming an existing directory: compare paths.
                if case .downloadFailed(.destinationExists(let url)) = error as? ConveyorError {
                    url.path.trimmingSuffix("/") == directory.path
                } else {
                    false
                }
            }
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("precious").path))

            let kept = scratch.url.appendingPathComponent("kept.txt")
            try Data("keep".utf8).write(to: kept)
            let link = scratch.url.appendingPathComponent("link.bin")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: kept)
            await #expect {
                try await client.download("bytes/64", to: .file(link), options: [.removePreviousFile])
            } throws: { error in
                if case .downloadFailed(.destinationExists(link)) = error as? ConveyorError { true } else { false }
            }
            #expect(try Data(contentsOf: kept) == Data("keep".utf8))
            #expect((try FileManager.default.attributesOfItem(atPath: link.path))[.type] as? FileAttributeType == .typeSymbolicLink)
        }
    }

    @Test("An error status keeps the body in memory for the error and writes no file")
    func errorStatus() async throws {
        let scratch = try Scratch()
        try await withServer { server, client in
            server.route("/missing") { _ in .text("no such file", status: 404) }
            await #expect {
                try await client.download("missing", to: .directory(scratch.url))
            } throws: { error in
                (error as? ConveyorError)?.statusCode == 404 && (error as? ConveyorError)?.responseData == Data("no such file".utf8)
            }
            #expect(scratch.contents.isEmpty)
        }
    }

    @Test("A directory that refuses files fails cleanly, naming the path")
    func unwritableDirectory() async throws {
        let disk = try SmallDisk(kilobytes: 64, readOnly: true)
        try await withServer { _, client in
            await #expect {
                try await client.download("bytes/100", to: .directory(disk.url))
            } throws: { error in
                guard case .downloadFailed(.cannotCreateFile(let url, _)) = error as? ConveyorError else { return false }
                return url.path.hasPrefix(disk.url.path) && (error as? ConveyorError)?.description.contains(disk.url.path) == true
            }
        }
    }

    @Test("A full disk fails the download with the path and removes the partial file")
    func fullDisk() async throws {
        let disk = try SmallDisk(kilobytes: 256)
        try await withServer { _, client in
            await #expect {
                try await client.download("bytes/2000000", to: .directory(disk.url))
            } throws: { error in
                guard case .downloadFailed(.writeFailed(let url, _)) = error as? ConveyorError else { return false }
                return url.path.hasPrefix(disk.url.path)
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: disk.url.path)
            #expect(left.isEmpty)
        }
    }

    @Test("Cancelling mid-download removes the partial file")
    func cancel() async throws {
        let scratch = try Scratch()
        try await withServer { server, client in
            let started = AsyncStream.makeStream(of: Void.self)
            server.route("/slow") { _ in
                .init(
                    headers: ["Content-Length": "1000000"],
                    body: .stream(chunked: false) { writer in
                        try writer.write(Data(count: 1000))
                        started.continuation.yield()
                        writer.pause(10)
                    })
            }
            // Progress is reported after the bytes are written to the partial file: waiting for
            // the first 1000 bytes, not for the server's write, means the file is there to remove.
            let written = AsyncStream.makeStream(of: Void.self)
            let probe = CompletionProbe()
            let operation = client.download(
                "slow", to: .directory(scratch.url), progress: { _, total, _ in if total >= 1000 { written.continuation.yield() } },
                success: probe.success, failure: probe.failure)
            for await _ in started.stream { break }
            for await _ in written.stream { break }
            let partial = scratch.contents
            #expect(partial.count == 1 && partial.first?.hasPrefix(".slow.conveyor-partial-") == true, "\(partial)")
            operation.cancel()
            #expect(await probe.outcome().error?.isCancelled == true)
            #expect(scratch.contents.isEmpty)
        }
    }
}
