import Conveyor
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `cache-read <directory> <url> <disk-capacity>`: opens an `HTTPCache` on <directory>, looks
/// <url> up, and prints `found <true|false> peak-kb <maximum resident set size>`. The caching
/// tests put a huge damaged entry file there: it must be refused without being read whole.
func cacheReadChild(arguments: [String]) -> Never {
    guard arguments.count == 3, let url = URL(string: arguments[1]), let capacity = Int(arguments[2]) else {
        say("usage: cache-read <directory> <url> <disk-capacity>")
        exit(2)
    }
    let cache = HTTPCache(memoryCapacity: 4_000_000, diskCapacity: capacity, directory: URL(fileURLWithPath: arguments[0]))
    let found = cache.cachedResponse(for: URLRequest(url: url)) != nil
    // VmHWM, the peak resident size of this program's memory: not `getrusage`'s `ru_maxrss`,
    // which Linux carries over from the parent across fork and exec (a test runner's 700 MB).
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    let peak = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "unknown"
    say("found \(found) peak-kb \(peak)")
    exit(0)
}
