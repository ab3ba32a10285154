import Conveyor
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
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
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    say("found \(found) peak-kb \(usage.ru_maxrss)")
    exit(0)
}
