/// A reference that Swift cannot prove `Sendable` (an object, or a C pointer) kept in the
/// state behind a `ConveyorLocking.Lock`, and shared by the threads that take that lock.
///
/// The lock guards the slot: the reference is stored, replaced and taken out only inside the
/// lock's `withLock`. What is referenced is used only in one of three ways, each named where
/// the reference is declared:
/// - inside that same `withLock` (an `OutputStream`, a `FileHandle` a sink writes to);
/// - outside it, because the object synchronizes itself or is immutable (a `URLCredential`,
///   a `Progress`, a dispatch source, a notification observer token: Foundation and Dispatch do
///   not mark all of them `Sendable` on every platform);
/// - outside it, by the one thread that owns it (a curl handle: the loop thread), or by the
///   one caller that removed it from the state (which frees or closes it).
///
/// A slot that is never replaced (a `let` set in an initialiser, a `@Sendable` closure's
/// capture) needs no lock, and holds here alone an object that synchronizes itself: an
/// `OperationQueue` or a `Progress`, which corelibs marks `Sendable` and Apple's SDK need not.
///
/// Not for a value handed from one domain to another and forgotten by the sender: that is a
/// ``OneWayTransfer``.
struct LockedReference<Value>: @unchecked Sendable {
    // @unchecked Sendable: the enclosing state's Lock guards the slot; the rules above cover
    // the referenced object.

    /// The reference.
    let value: Value

    /// Wraps `value` for storing in a lock's state.
    /// - Parameter value: The reference.
    init(_ value: Value) {
        self.value = value
    }
}
