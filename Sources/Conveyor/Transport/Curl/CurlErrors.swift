#if os(Linux)
    import Foundation
    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// libcurl's result codes as the errors URLSession reports for the same failures, so
    /// operations, retry policies and callers see one vocabulary whichever transport ran.
    enum CurlErrors {
        /// - Parameters:
        ///   - code: The `CURLcode`.
        ///   - text: libcurl's own description (its error buffer), kept as the description.
        ///   - url: The request's URL.
        static func error(for code: Int32, text: String, url: URL) -> any Error {
            let host = url.host ?? "the server"
            switch CurlCode(rawValue: code) {
            case .sslPinnedPublicKeyNotMatch:
                return ConveyorError.serverTrustFailed(
                    host: host, reason: "the server's public key matches none of the pinned keys (\(text))")
            case .sslCACertBadFile:
                return ConveyorError.serverTrustFailed(host: host, reason: "the certificate authorities could not be loaded (\(text))")
            default:
                break
            }
            let userInfo: [String: Any] = [
                NSLocalizedDescriptionKey: text, NSURLErrorFailingURLErrorKey: url,
                "CURLcode": Int(code),
            ]
            var urlCode = urlErrorCode(for: code)
            // A malformed chunked body is reported as a receive error; it is the server's fault.
            let lowered = text.lowercased()
            if lowered.contains("chunked-encoding") || (lowered.contains("chunk") && code == CurlCode.recvError.rawValue) {
                urlCode = .badServerResponse
            }
            // A code that says too little (HTTP/0.9 arrives as "unsupported protocol") is read
            // from the text, by the same rules as the URLSession transport's.
            if LibcurlErrorText.genericCodes.contains(urlCode), let fromText = LibcurlErrorText.code(for: text) { urlCode = fromText }
            // A refused certificate is a trust decision, reported as one: peer verification, or
            // a TLS failure whose text names the certificate.
            if urlCode == .serverCertificateUntrusted
                || ((urlCode == .unknown || urlCode == .secureConnectionFailed) && LibcurlErrorText.isCertificateFailure(text))
            {
                return ConveyorError.serverTrustFailed(host: host, reason: text)
            }
            return URLError(urlCode, userInfo: userInfo)
        }

        static func urlErrorCode(for code: Int32) -> URLError.Code {
            switch CurlCode(rawValue: code) {
            case .unsupportedProtocol: return .unsupportedURL
            case .urlMalformat: return .badURL
            case .couldntResolveHost, .couldntResolveProxy: return .cannotFindHost
            case .couldntConnect: return .cannotConnectToHost
            case .operationTimedOut: return .timedOut
            case .gotNothing, .sendError, .recvError, .partialFile, .http2, .http2Stream, .sendFailRewind: return .networkConnectionLost
            case .weirdServerReply, .outOfMemory: return .badServerResponse
            case .badContentEncoding: return .cannotDecodeContentData
            case .peerFailedVerification: return .serverCertificateUntrusted
            case .sslConnectError, .sslCertProblem: return .secureConnectionFailed
            case .readError: return .requestBodyStreamExhausted
            case .abortedByCallback, .writeError: return .cancelled
            default: return .unknown
            }
        }
    }
#endif
