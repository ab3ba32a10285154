import Foundation

/// The headers every client starts with.
enum DefaultHeaderValues {
    static func make() -> HTTPHeaders {
        var headers = HTTPHeaders()
        if let acceptLanguage { headers["Accept-Language"] = acceptLanguage }
        headers["User-Agent"] = userAgent
        return headers
    }

    /// `en-GB, en;q=0.9, fr;q=0.8`: the user's first six preferred languages with falling
    /// q-values, as AFNetworking sent; nil (no header) when the user has none.
    static let acceptLanguage: String? = {
        #if os(Linux)
            // corelibs' `Locale.preferredLanguages` is `en-001` ("English (world)") whatever the
            // user set: read the POSIX locale variables instead.
            return acceptLanguage(for: languages(environment: ProcessInfo.processInfo.environment))
        #else
            return acceptLanguage(for: Array(Locale.preferredLanguages))
        #endif
    }()

    /// The header value for `languages`, most preferred first; nil for none.
    static func acceptLanguage(for languages: [String]) -> String? {
        let languages = languages.prefix(6)
        guard !languages.isEmpty else { return nil }
        return languages.enumerated().map { index, language in
            index == 0 ? language : "\(language);q=\(String(format: "%.1f", 1.0 - Double(index) * 0.1))"
        }.joined(separator: ", ")
    }

    /// The user's languages from the POSIX locale variables, as language tags: `LANGUAGE` (GNU's
    /// priority list, `fr_CA:fr:en`) when the locale is not C/POSIX, else the locale of
    /// `LC_ALL`, `LC_MESSAGES` or `LANG`, the first set (`en_GB.UTF-8` is `en-GB`). None for the
    /// C or POSIX locale, or nothing set.
    static func languages(environment: [String: String]) -> [String] {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        guard let locale, let primary = tag(locale) else { return [] }
        var result: [String] = []
        for entry in (environment["LANGUAGE"] ?? "").split(separator: ":") {
            if let tag = tag(String(entry)), !result.contains(tag) { result.append(tag) }
        }
        if !result.contains(primary) { result.append(primary) }
        return result
    }

    /// `en_GB.UTF-8@euro` → `en-GB`; nil for `C`, `POSIX` and what is not a language.
    static func tag(_ locale: String) -> String? {
        let base = locale.split(separator: ".").first.map(String.init) ?? locale
        let name = base.split(separator: "@").first.map(String.init) ?? base
        guard name != "C", name != "POSIX", !name.isEmpty,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "_" || $0 == "-") })
        else { return nil }
        return name.replacingOccurrences(of: "_", with: "-")
    }

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
