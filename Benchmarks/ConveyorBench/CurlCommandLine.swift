import ConveyorTestSupport
import Foundation

/// The `curl` command line running one config file (`curl -s -K run.cfg`): one process, its
/// connections reused, libcurl with no framework around it — the ceiling the curl transport is
/// measured against. Nil when `curl` is absent.
struct CurlCommandLine {
    let executable: String
    let config: URL

    /// `requests` GETs of `url`, bodies discarded.
    init?(url: URL, requests: Int) {
        self.init(config: String(repeating: "url = \"\(url.absoluteString)\"\noutput = \"/dev/null\"\n", count: requests))
    }

    /// `requests` GETs of the HTTPS `url` over HTTP/2, trusting `authority`, bodies discarded.
    init?(http2 url: URL, authority: URL, requests: Int) {
        self.init(
            config: "http2\ncacert = \"\(authority.path)\"\n"
                + String(repeating: "url = \"\(url.absoluteString)\"\noutput = \"/dev/null\"\n", count: requests))
    }

    /// `requests` POSTs of the file at `body` to `url` (`--upload-file`, no `Expect: 100-continue`
    /// wait, as the clients compared with it send none), answers discarded.
    init?(uploading body: URL, to url: URL, requests: Int) {
        let transfer = "url = \"\(url.absoluteString)\"\nupload-file = \"\(body.path)\"\noutput = \"/dev/null\"\n"
        self.init(config: "request = \"POST\"\nheader = \"Expect:\"\n" + String(repeating: transfer, count: requests))
    }

    /// One GET of `url` written to `output` (`/dev/null` for "into memory").
    init?(downloading url: URL, to output: String) {
        self.init(config: "url = \"\(url.absoluteString)\"\noutput = \"\(output)\"\n")
    }

    private init?(config text: String) {
        guard let executable = ["/usr/bin/curl", "/usr/local/bin/curl", "/bin/curl"].first(where: FileManager.default.isExecutableFile)
        else {
            return nil
        }
        self.executable = executable
        config = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-curl-\(UUID().uuidString).cfg")
        guard (try? Data(text.utf8).write(to: config)) != nil else { return nil }
    }

    /// Seconds for the whole run, `inFlight` transfers at a time (`--parallel` above 1), the
    /// process's start included.
    func seconds(inFlight: Int = 1) -> Double? {
        var arguments = ["-s", "--no-progress-meter", "-K", config.path]
        if inFlight > 1 { arguments.insert(contentsOf: ["--parallel", "--parallel-max", String(inFlight)], at: 0) }
        let start = ContinuousClock.now
        guard (try? ChildProcess.spawn(executable, arguments)) == 0 else { return nil }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
