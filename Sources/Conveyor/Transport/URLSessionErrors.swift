import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The errors a `URLSession` task ends with, as the codes a caller, a retry policy, the cache
/// and the outbox act on: the URLSession transport's half of the one error vocabulary (the
/// curl transport's is `CurlErrors`). Decided here, once, before any delegate sees the error.
enum URLSessionErrors {
    /// corelibs reports many libcurl failures as code -1 (`unknown`), or under a code that
    /// does not fit, with only curl's text: a failed connect whose `errno` is neither
    /// `ECONNREFUSED` nor `ETIMEDOUT` (a server restarting, no route) is -1 "Failed to connect
    /// to …", an empty reply is `badServerResponse`, a non-HTTP answer `unsupportedURL`. Each
    /// gets the code `LibcurlErrorText` reads from the text, the original kept as
    /// `NSUnderlyingErrorKey`.
    static func normalized(_ error: any Error) -> any Error {
        guard let error = error as? URLError else { return error }
        return normalized(error)
    }

    static func normalized(_ error: URLError) -> URLError {
        guard LibcurlErrorText.genericCodes.contains(error.code), let code = LibcurlErrorText.code(for: error.localizedDescription),
            code != error.code
        else { return error }
        var userInfo = error.userInfo
        userInfo[NSUnderlyingErrorKey] = error as NSError
        return URLError(code, userInfo: userInfo)
    }
}
