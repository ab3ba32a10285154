/// Carries a value that Swift cannot prove `Sendable` (a `JSONSerialization` result is `Any`)
/// across a queue hop. Only used where the value is created once and never mutated afterwards.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
}
