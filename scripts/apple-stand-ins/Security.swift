// swift-format-ignore-file
// (the SDK's own names, C functions and constants, are kept as documented)

// Stand-in for the parts of the Security framework (and the Foundation API that names its
// types) Conveyor uses, from Apple's documentation of SecTrust, SecCertificate and
// URLProtectionSpace.serverTrust. Type-checking only: no behaviour.
//
// On Apple platforms CFData, CFArray and CFError are Core Foundation types toll-free bridged to
// NSData, NSArray and NSError (`data as CFData`, `array as? [SecCertificate]`); corelibs
// Foundation cannot bridge to its own CF types with `as`, so here they are the NS classes.
@_exported import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

public typealias CFData = NSData
public typealias CFArray = NSArray
public typealias CFError = NSError
public typealias CFAllocator = NSObject
/// `typealias OSStatus = Int32`
public typealias OSStatus = Int32
/// `var errSecSuccess: OSStatus { get }`
public let errSecSuccess: OSStatus = 0

/// `class SecTrust` (a Core Foundation type; not Sendable)
public final class SecTrust {}
/// `class SecCertificate` (a Core Foundation type; not Sendable)
public final class SecCertificate {}

/// `func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate?`
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? { nil }
/// `func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData`
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData { NSData() }
/// `func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray) -> OSStatus`
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray) -> OSStatus { errSecSuccess }
/// `func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus`
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus { errSecSuccess }
/// `func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool`
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool { false }
/// `func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray?` (macOS 12, iOS 15)
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? { nil }

/// `let NSURLAuthenticationMethodServerTrust: String` (corelibs marks its own unavailable)
public let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"

extension URLProtectionSpace {
    /// `var serverTrust: SecTrust? { get }`
    public var serverTrust: SecTrust? { nil }
}

extension URLCredential {
    /// `init(trust: SecTrust)`
    public convenience init(trust: SecTrust) { self.init(user: "", password: "", persistence: .none) }
}
