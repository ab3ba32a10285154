/// Hands a value that Swift cannot prove `Sendable` from one isolation domain to another,
/// once: the sender made it (or is done with it) and never touches it after the hand-over.
///
/// The contract the compiler cannot check, so every use keeps it by construction:
/// - The value crosses in one direction. The code that boxes it does not read or change it
///   afterwards; the receiver is its only user from then on.
/// - A value with several receivers (a response object every completion block and reader of
///   ``HTTPRequestOperation/responseObject`` sees) is immutable once boxed: what a
///   `JSONSerialization` or `PropertyListSerialization` result (`Any`) is.
///
/// Not for a reference kept in a lock's state and used from several threads: that is a
/// ``LockedReference``.
struct OneWayTransfer<Value>: @unchecked Sendable {
    // @unchecked Sendable: no lock; the one-way hand-over above is the guarantee.

    /// The value handed over.
    let value: Value

    /// Boxes `value` for the hand-over.
    /// - Parameter value: The value; the caller does not use it after.
    init(_ value: Value) {
        self.value = value
    }
}
