import Foundation

extension Notification.Name {
    /// Posted when an ``Outbox`` cannot rename, remove or sync one of its own files (a directory
    /// made read-only, a disk error); `object` is the outbox and `userInfo["error"]` the
    /// ``ConveyorError/outboxFailed(reason:)`` with ``ConveyorError/OutboxFailureReason/writeFailed(_:_:)``
    /// naming the file. What the outbox does about it is in <doc:SendingWhileOffline>: a result
    /// whose record cannot be marked is held, not handed over, and tried again.
    public static let conveyorOutboxFileOperationFailed = Notification.Name("org.conveyor.outbox.fileOperationFailed")
}
