#if canImport(Security)
    import Foundation
    import Security

    // The Security framework's part of ServerTrustPolicy: evaluating the chain with the custom
    // anchors, and reading the leaf certificate's bytes. Everything else is decided in
    // ServerTrustPolicy.swift, which Linux tests.
    extension ServerTrustPolicy {
        /// Decides a server-trust challenge for `trust` (see ``answer(evaluationFailure:leafCertificate:)``).
        func answer(for trust: SecTrust) -> Answer {
            answer(
                evaluationFailure: { evaluationFailure(of: trust) },
                leafCertificate: {
                    // The chain's first certificate is the server's own (macOS 12, iOS 15).
                    guard let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate], let leaf = chain.first else {
                        return nil
                    }
                    return SecCertificateCopyData(leaf) as Data
                })
        }

        /// Evaluates `trust`, with ``anchors`` when ``replacesAnchors``.
        /// - Returns: Why the chain is not trusted, nil when it is.
        private func evaluationFailure(of trust: SecTrust) -> String? {
            if replacesAnchors {
                let certificates = anchors.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
                guard certificates.count == anchors.count else { return "a custom certificate authority is not a valid certificate" }
                guard SecTrustSetAnchorCertificates(trust, certificates as CFArray) == errSecSuccess,
                    SecTrustSetAnchorCertificatesOnly(trust, !trustsSystemCertificateAuthorities) == errSecSuccess
                else { return "the custom certificate authorities could not be set" }
            }
            var error: CFError?
            if SecTrustEvaluateWithError(trust, &error) { return nil }
            return error.map { ($0 as any Error).localizedDescription } ?? "the system refused the certificate chain"
        }
    }
#endif
