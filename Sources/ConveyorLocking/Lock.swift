import Synchronization

/// A `Synchronization.Mutex` that ThreadSanitizer can see. Every lock in Conveyor is one.
///
/// On Linux, `Mutex` takes and releases its lock inside the precompiled Synchronization
/// library, which ThreadSanitizer does not instrument, so every access a `Mutex` guards is
/// reported as a race (measured: a program with four threads updating a dictionary under a
/// `Mutex` gets five reports). Built with `-D CONVEYOR_TSAN` (as `.ci/run` does for its
/// `--sanitize=thread` run), `Lock` tells the sanitizer about each acquire and release;
/// otherwise it is exactly the `Mutex` it wraps, inlined.
@frozen
public struct Lock<Value: ~Copyable>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>
    #if CONVEYOR_TSAN
        @usableFromInline let identity = LockIdentity()
    #endif

    /// Creates a lock around `initialValue`.
    /// - Parameter initialValue: The guarded value.
    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the guarded value.
    /// - Parameter body: Reads or changes the value; must not take this lock again.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if CONVEYOR_TSAN
            let address = identity.address
            return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
                tsanAcquire(address)
                defer { tsanRelease(address) }
                return try body(&value)
            }
        #else
            return try mutex.withLock(body)
        #endif
    }
}

extension Lock: @unchecked Sendable where Value: ~Copyable {}
// @unchecked Sendable: as `Mutex` itself — the value is only reached through `withLock`.

#if CONVEYOR_TSAN
    /// A unique address per lock, for the sanitizer's happens-before bookkeeping.
    @usableFromInline
    final class LockIdentity: Sendable {
        @usableFromInline init() {}
        @usableFromInline var address: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
    }

    /// ThreadSanitizer's annotation entry points (present in sanitized builds only).
    @usableFromInline @_silgen_name("__tsan_acquire") func tsanAcquire(_ address: UnsafeMutableRawPointer)
    @usableFromInline @_silgen_name("__tsan_release") func tsanRelease(_ address: UnsafeMutableRawPointer)
#endif
