import Foundation

/// The headers every client starts with.
enum DefaultHeaderValues {
    static func make() -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers["Accept-Language"] = acceptLanguage
        headers["User-Agent"] = userAgent
        return headers
    }

    /// `en-GB, en;q=0.9, fr;q=0.8`: the user's first six preferred languages with falling
    /// q-values, as AFNetworking sent.
    static let acceptLanguage: String = {
        let languages = Locale.preferredLanguages.prefix(6)
        guard !languages.isEmpty else { return "en" }
        return languages.enumerated().map { index, language in
            index == 0 ? language : "\(language);q=\(String(format: "%.1f", 1.0 - Double(index) * 0.1))"
        }.joined(separator: ", ")
    }()

    /// `tool/1.0 Conveyor/0.1.0 (Linux; 6.8.0)`: the program, the library, the platform.
    static let userAgent: String = {
        let info = ProcessInfo.processInfo
        let bundle = Bundle.main.infoDictionary
        let program = (bundle?["CFBundleExecutable"] as? String) ?? info.processName
        let version = (bundle?["CFBundleShortVersionString"] as? String).map { "/\($0)" } ?? ""
        #if os(Linux)
            let platform = "Linux"
        #elseif os(macOS)
            let platform = "macOS"
        #elseif os(iOS)
            let platform = "iOS"
        #elseif os(tvOS)
            let platform = "tvOS"
        #elseif os(watchOS)
            let platform = "watchOS"
        #elseif os(visionOS)
            let platform = "visionOS"
        #else
            let platform = "Unknown"
        #endif
        let os = info.operatingSystemVersion
        let text =
            "\(program)\(version) Conveyor/\(ConveyorLibrary.version) (\(platform) \(os.majorVersion).\(os.minorVersion).\(os.patchVersion))"
        // Header values must be ASCII: keep a program name with other characters readable.
        return String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" })
    }()
}
