import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// A display target that records every image it was given, like a table cell's image view.
final class Cell: ImageDisplaying, @unchecked Sendable {
    // @unchecked Sendable: `shown` is the only state and sits behind one Mutex.
    private let shown = Lock<[EncodedImage?]>([])
    var image: EncodedImage? {
        get { shown.withLock { $0.last ?? nil } }
        set { shown.withLock { $0.append(newValue) } }
    }
    var history: [EncodedImage?] { shown.withLock { $0 } }
}

/// Collects completions and lets the test await a number of them.
final class Results: Sendable {
    private let stream = AsyncStream.makeStream(of: Result<EncodedImage, ConveyorError>.self)
    var completion: ImageDownloader.Completion { { [stream] in stream.continuation.yield($0) } }
    func next(_ count: Int) async -> [Result<EncodedImage, ConveyorError>] {
        var collected: [Result<EncodedImage, ConveyorError>] = []
        for await result in stream.stream {
            collected.append(result)
            if collected.count == count { break }
        }
        return collected
    }
}

@Suite("Image downloader and ImageDisplaying")
struct ImageDownloaderTests {
    let server: LocalHTTPServer
    let queue = DispatchQueue(label: "test.image-callbacks")
    let downloader: ImageDownloader
    let png: EncodedImage
    let gif: EncodedImage

    init() throws {
        server = try LocalHTTPServer.started()
        downloader = ImageDownloader(imageCache: ImageCache(), httpCache: nil, callbackQueue: queue)
        png = try EncodedImage(data: SampleImages.png)
        gif = try EncodedImage(data: SampleImages.gif)
    }

    func url(_ path: String) -> URL { server.baseURL.appendingPathComponent(path) }

    func heldImage(_ path: String, _ data: Data, _ type: String) -> HeldRoute {
        // 30 s: the cancellation test needs the answer held until both callers left; a loaded
        // parallel run once took more than the usual 10 s to deliver the first cancellation.
        HeldRoute(server, path: "/" + path, response: .init(headers: ["Content-Type": type], body: .data(data)), fallback: 30)
    }

    @Test("Five concurrent callers of one URL share one download; all five completions run")
    func deduplication() async throws {
        defer { server.stop() }
        let held = heldImage("a.png", SampleImages.png, "image/png")
        let results = Results()
        for _ in 0..<5 { downloader.download(url("a.png"), completion: results.completion) }
        await held.arrived()
        #expect(downloader.activeDownloadCount == 1)
        held.release()
        let outcomes = await results.next(5)
        #expect(outcomes.allSatisfy { (try? $0.get()) == png })
        #expect(server.requestCount(path: "/a.png") == 1)
        #expect(server.receivedRequests.first?.headers["Accept"] == "image/*")
    }

    @Test("A cached image completes synchronously, before download returns, and returns no receipt")
    func synchronousCacheHit() async throws {
        defer { server.stop() }
        server.route("/b.gif") { _ in .init(headers: ["Content-Type": "image/gif"], body: .data(SampleImages.gif)) }
        let results = Results()
        downloader.download(url("b.gif"), completion: results.completion)
        let first = await results.next(1)
        #expect(first.allSatisfy { (try? $0.get()) != nil }, "\(first)")
        let ran = Lock(false)
        let receipt = downloader.download(url("b.gif")) { result in ran.withLock { $0 = (try? result.get()) != nil } }
        #expect(receipt == nil && ran.withLock { $0 })
        #expect(server.requestCount(path: "/b.gif") == 1)
    }

    @Test("Cancelling one caller fails only that caller; cancelling the last stops the download")
    func cancellation() async throws {
        defer { server.stop() }
        let held = heldImage("c.png", SampleImages.png, "image/png")
        let first = Results()
        let second = Results()
        let firstReceipt = try #require(downloader.download(url("c.png"), completion: first.completion))
        let secondReceipt = try #require(downloader.download(url("c.png"), completion: second.completion))
        await held.arrived()
        downloader.cancel(firstReceipt)
        guard case .failure(.cancelled) = await first.next(1)[0] else {
            Issue.record("first caller not cancelled")
            return
        }
        downloader.cancel(secondReceipt)
        guard case .failure(.cancelled) = await second.next(1)[0] else {
            Issue.record("second caller not cancelled")
            return
        }
        #expect(downloader.activeDownloadCount == 0)
        held.release()
    }

    @Test("A reused cell never shows the old URL's image; the old image is still cached")
    func cellReuse() async throws {
        defer { server.stop() }
        let placeholder = try EncodedImage(data: SampleImages.bmp)
        let held = heldImage("old.png", SampleImages.png, "image/png")
        server.route("/new.gif") { _ in .init(headers: ["Content-Type": "image/gif"], body: .data(SampleImages.gif)) }
        let cell = Cell()
        let oldRow = Results()
        let newRow = Results()
        let other = Results()
        cell.setImage(with: url("old.png"), placeholder: placeholder, downloader: downloader, completion: oldRow.completion)
        downloader.download(url("old.png"), completion: other.completion)  // someone else still wants it
        await held.arrived()
        #expect(cell.history == [placeholder] && cell.pendingImageURL == url("old.png"))
        cell.setImage(with: url("new.gif"), placeholder: placeholder, downloader: downloader, completion: newRow.completion)
        guard case .failure(.cancelled) = await oldRow.next(1)[0] else {
            Issue.record("old row not cancelled")
            return
        }
        #expect(try await newRow.next(1)[0].get() == gif)
        held.release()
        #expect(try await other.next(1)[0].get() == png)
        queue.sync {}
        #expect(cell.image == gif && cell.history == [placeholder, placeholder, gif])
        #expect(downloader.imageCache?.image(for: url("old.png")) == png)
    }

    @Test("On a cache hit the placeholder is never shown and the image is set synchronously")
    func placeholderOnlyOnMiss() async throws {
        defer { server.stop() }
        let placeholder = try EncodedImage(data: SampleImages.bmp)
        downloader.imageCache?.setImage(png, for: url("cached.png"))
        let cell = Cell()
        let ran = Lock(false)
        cell.setImage(with: url("cached.png"), placeholder: placeholder, downloader: downloader) { _ in ran.withLock { $0 = true } }
        #expect(cell.history == [png] && ran.withLock { $0 } && cell.pendingImageURL == nil)
        #expect(server.receivedRequests.isEmpty)
    }

    @Test("A failed download reports the error and leaves the placeholder; cancelImageRequest keeps the image")
    func failureAndCancel() async throws {
        defer { server.stop() }
        let placeholder = try EncodedImage(data: SampleImages.bmp)
        server.route("/missing.png") { _ in .text("nope", status: 404) }
        let cell = Cell()
        let results = Results()
        cell.setImage(with: url("missing.png"), placeholder: placeholder, downloader: downloader, completion: results.completion)
        guard case .failure(.unacceptableStatusCode(404, _, _)) = await results.next(1)[0] else {
            Issue.record("no 404")
            return
        }
        #expect(cell.image == placeholder)
        let held = heldImage("slow.png", SampleImages.png, "image/png")
        let slow = Results()
        cell.setImage(with: url("slow.png"), downloader: downloader, completion: slow.completion)
        await held.arrived()
        cell.cancelImageRequest()
        guard case .failure(.cancelled) = await slow.next(1)[0] else {
            Issue.record("not cancelled")
            return
        }
        #expect(cell.image == placeholder && cell.pendingImageURL == nil)
        held.release()
    }
}
