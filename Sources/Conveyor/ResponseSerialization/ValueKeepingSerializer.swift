import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The async API's serializer: runs `wrapped` and keeps the value it made, typed, for the call
/// that awaits it — so the value reaches ``HTTPResponse`` without a round trip through the
/// operation's `Any?` (``HTTPRequestOperation/responseObject`` and the completion blocks still
/// get it erased). Everything else is `wrapped`'s: its content types, its empty-body rule, and
/// whether it is cheap enough to run on the transfer's executor.
struct ValueKeepingSerializer<Wrapped: ResponseSerializer>: ResponseSerializer where Wrapped.Output: Sendable {
    // Sendable, checked by the compiler: `wrapped` is Sendable and `kept` is a Sendable box.
    let wrapped: Wrapped
    /// The last value `wrapped` made (an operation serializes once, for its final response).
    let kept = KeptValue<Wrapped.Output>()

    var acceptableContentTypes: Set<String>? { wrapped.acceptableContentTypes }

    func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Wrapped.Output {
        kept.keep(try wrapped.emptyResponseValue(request: request, response: response))
    }

    func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Wrapped.Output {
        kept.keep(try wrapped.serialize(request: request, response: response, data: data))
    }
}

extension ValueKeepingSerializer: CheapSerialization where Wrapped: CheapSerialization {}

/// One value, set by the serializer (on the executor or the processing queue) and taken by the
/// completion (on the async resume queue).
final class KeptValue<Value: Sendable>: Sendable {
    // Sendable, checked by the compiler: the value sits behind one Lock.
    private let value = Lock<Value?>(nil)

    /// Keeps `value` and returns it.
    func keep(_ new: Value) -> Value {
        value.withLock { $0 = new }
        return new
    }

    /// The value kept, if the serializer made one.
    var current: Value? { value.withLock { $0 } }
}
