import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// The executor of the operation's transfer: its transport's serial context (see
    /// ``TransferExecutor``). The transport is settled before the operation starts.
    var executor: any TransferExecutor { read(\.transport).executor }

    /// Runs `event` on the transfer's executor: at once when called there, else after a hop.
    /// Every event that does not come from the transport (which calls from the executor
    /// already) enters the transfer through this.
    func onExecutor(urgent: Bool = false, _ event: @escaping @Sendable () -> Void) {
        executor.run(urgent: urgent, event)
    }

    /// Stops a debug build when called off the transfer's executor; a release build does not
    /// even read the executor (`assert` skips its condition).
    func assertOnExecutor(file: StaticString = #fileID, line: UInt = #line) {
        assert(executor.isCurrent, "a transfer event ran off its executor", file: file, line: line)
    }
}
