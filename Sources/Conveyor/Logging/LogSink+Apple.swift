#if canImport(os)
    import Foundation
    import os

    // The unified log's sink (Apple platforms): the only Apple-only part of logging.

    /// Writes entries to the unified log with `os.Logger` (Apple platforms).
    @available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *)
    public struct OSLogSink: LogSink {
        private let logger: os.Logger

        /// Creates the sink.
        /// - Parameters:
        ///   - subsystem: The subsystem, usually your bundle identifier.
        ///   - category: The category; default `network`.
        public init(subsystem: String, category: String = "network") {
            logger = os.Logger(subsystem: subsystem, category: category)
        }

        /// Logs the entry at the matching `OSLogType`; entries are already redacted, so public.
        public func write(_ entry: String, level: NetworkLogger.Level) {
            let type: OSLogType =
                switch level {
                case .debug: .debug
                case .info: .info
                case .warn: .default
                case .error, .off: .error
                }
            logger.log(level: type, "\(entry, privacy: .public)")
        }
    }

    @available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *)
    extension LogSink where Self == OSLogSink {
        /// The unified log (Apple platforms).
        /// - Parameters:
        ///   - subsystem: The subsystem, usually your bundle identifier.
        ///   - category: The category; default `network`.
        /// - Returns: The sink.
        public static func osLog(subsystem: String, category: String = "network") -> OSLogSink {
            OSLogSink(subsystem: subsystem, category: category)
        }
    }
#endif
