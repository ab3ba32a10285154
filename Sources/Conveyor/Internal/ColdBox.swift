/// A value kept on the heap behind one pointer, for state that is large and rarely set.
///
/// An operation waiting in a queue carries its whole `MutableState`; fields that are only set
/// at the end (metrics, the error) or rarely changed from their default (the retry policy)
/// cost 8 bytes there instead of their size (metrics alone are 160). Immutable: a write
/// replaces the box.
final class ColdBox<Value: Sendable>: Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }
}
