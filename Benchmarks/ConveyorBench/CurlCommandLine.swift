import Foundation

/// The `curl` command line fetching the same URL N times from one config file
/// (`curl -s -K urls.cfg`): one process, one connection reused, libcurl with no framework
/// around it — the ceiling the curl transport is measured against. Nil when `curl` is absent.
struct CurlCommandLine {
    let executable: String
    let config: URL

    init?(url: URL, requests: Int) {
        guard let executable = ["/usr/bin/curl", "/usr/local/bin/curl", "/bin/curl"].first(where: FileManager.default.isExecutableFile)
        else {
            return nil
        }
        self.executable = executable
        config = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-urls-\(UUID().uuidString).cfg")
        let lines = String(repeating: "url = \"\(url.absoluteString)\"\noutput = \"/dev/null\"\n", count: requests)
        guard (try? Data(lines.utf8).write(to: config)) != nil else { return nil }
    }

    /// Seconds for the whole run, `inFlight` transfers at a time (`--parallel` above 1).
    func seconds(inFlight: Int) -> Double? {
        var arguments = ["-s", "--no-progress-meter", "-K", config.path]
        if inFlight > 1 { arguments.insert(contentsOf: ["--parallel", "--parallel-max", String(inFlight)], at: 0) }
        let start = ContinuousClock.now
        guard (try? ChildProcess.spawn(executable, arguments)) == 0 else { return nil }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
