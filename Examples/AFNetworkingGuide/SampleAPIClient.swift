import Conveyor
import Foundation

/// The AFNetworking 1.x guide's `SampleAPIClient`, ported line for line: one subclass per API,
/// a singleton, JSON operations registered, default headers, and a typed call that merges
/// default parameters with the caller's.
final class SampleAPIClient: HTTPClient, @unchecked Sendable {
    // @unchecked Sendable: no stored state of its own; HTTPClient keeps its state behind a Mutex.

    /// `+sharedClient` with `dispatch_once`: a `static let` is initialised once, thread-safely.
    static let shared = SampleAPIClient(baseURL: URL(string: ProcessInfo.processInfo.environment["SAMPLE_API_URL"] ?? "http://127.0.0.1/")!)

    /// `-initWithBaseURL:`
    override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
        super.init(baseURL: baseURL, configuration: configuration)
        // Handle JSON responses: [self registerHTTPOperationClass:AFJSONRequestOperation.class];
        register(JSONRequestOperation.self)
        // Accept JSON on every request: [self setDefaultHeader:@"Accept" value:@"application/json"];
        setDefaultHeader("Accept", value: "application/json")
        // A User-Agent on every request: [self setDefaultHeader:@"User-Agent" value:@"sample"];
        setDefaultHeader("User-Agent", value: "sample")
    }

    /// What `+[SampleModel parseResponse:]` made of the JSON.
    struct SampleModel: Sendable {
        let parameters: [String: String]
        let userAgent: String
    }

    /// The parameters every call sends (`static NSDictionary * const defaultParameters`).
    static let defaultParameters: SendableParameters = ["key1": "value1", "key2": "value2"]

    /// `-getSampleDataWithPath:parameters:success:failure:`: GETs JSON from `sample/data` with the
    /// default parameters and the caller's merged, and hands the parsed model to `success`.
    @discardableResult
    func getSampleData(
        parameters: SendableParameters, success: @escaping @Sendable (SampleModel) -> Void,
        failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        let composed = Self.defaultParameters.merging(parameters) { _, given in given }
        return get(
            "sample/data", parameters: composed,
            success: { _, json in
                let object = json as? [String: Any] ?? [:]
                let arguments = object["args"] as? [String: String] ?? [:]
                let headers = object["headers"] as? [String: Any] ?? [:]
                success(SampleModel(parameters: arguments, userAgent: headers["User-Agent"] as? String ?? ""))
            }, failure: failure)
    }
}
