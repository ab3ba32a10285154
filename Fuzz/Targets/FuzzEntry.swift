// libFuzzer entry point for Conveyor. Fuzz/run compiles the library's sources and these files
// into one module (so internal parsers are reachable) with `-sanitize=fuzzer,address`, and
// picks the target with CONVEYOR_FUZZ_TARGET.
import Foundation

/// The targets by name.
let fuzzTargets: [String: @Sendable (Data) -> Void] = [
    "query-string": FuzzTargets.queryStringRoundTrip,
    "multipart": FuzzTargets.multipartRoundTrip,
    "charset": FuzzTargets.charsetDecoding,
    "cache-entry": FuzzTargets.cacheEntryDecoding,
    "image-header": FuzzTargets.imageHeaderSniffing,
    "request-parser": FuzzTargets.serverRequestParsing,
]

let selectedTarget: @Sendable (Data) -> Void = {
    let name = ProcessInfo.processInfo.environment["CONVEYOR_FUZZ_TARGET"] ?? ""
    guard let target = fuzzTargets[name] else {
        fatalError("set CONVEYOR_FUZZ_TARGET to one of: \(fuzzTargets.keys.sorted().joined(separator: ", "))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    selectedTarget(data)
    return 0
}
