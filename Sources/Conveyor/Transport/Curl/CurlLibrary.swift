#if os(Linux)
    import Foundation
    import CConveyorCurl
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// libcurl's functions, resolved at run time with `dlopen`/`dlsym`.
    ///
    /// libcurl.so.4 is the library FoundationNetworking itself loads on Linux, so it is present
    /// wherever URLSession works; resolving it at run time needs no headers, no link flags and no
    /// package. The variadic functions (`curl_easy_setopt`, `curl_easy_getinfo`,
    /// `curl_multi_setopt`) are kept as raw pointers and called through the typed variadic
    /// wrappers of the `CConveyorCurl` target, never through a non-variadic cast.
    final class CurlLibrary: Sendable {
        typealias Handle = UnsafeMutableRawPointer

        /// The library, loaded and initialised on first use; nil when it could not be loaded.
        static let shared: Result<CurlLibrary, LoadError> = load(names: ["libcurl.so.4", "libcurl.so"])

        /// Why libcurl could not be used.
        struct LoadError: Error, CustomStringConvertible {
            let description: String
        }

        let version: String
        let easyInit: @convention(c) () -> Handle?
        let easyCleanup: @convention(c) (Handle?) -> Void
        let easyReset: @convention(c) (Handle?) -> Void
        let slistAppend: @convention(c) (Handle?, UnsafePointer<CChar>?) -> Handle?
        let slistFreeAll: @convention(c) (Handle?) -> Void
        let multiInit: @convention(c) () -> Handle?
        let multiCleanup: @convention(c) (Handle?) -> Int32
        let multiAddHandle: @convention(c) (Handle?, Handle?) -> Int32
        let multiRemoveHandle: @convention(c) (Handle?, Handle?) -> Int32
        let multiPerform: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32
        let multiPoll: @convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
        let multiWakeup: @convention(c) (Handle?) -> Int32
        /// `curl_multi_info_read`: the message is libcurl's `CURLMsg`, mirrored in the C shim.
        let multiInfoRead: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutablePointer<conveyor_curl_message>?
        let easyStrerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
        /// `curl_easy_pause`: only the thread driving the multi handle may call it.
        let easyPause: @convention(c) (Handle?, Int32) -> Int32
        // The variadic ones, only ever called through CConveyorCurl.
        private nonisolated(unsafe) let easySetopt: UnsafeMutableRawPointer
        private nonisolated(unsafe) let easyGetinfo: UnsafeMutableRawPointer
        private nonisolated(unsafe) let multiSetopt: UnsafeMutableRawPointer

        /// Loads the first of `names` that `dlopen` finds and resolves every function Conveyor uses.
        static func load(names: [String]) -> Result<CurlLibrary, LoadError> {
            var reasons: [String] = []
            for name in names {
                guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                    reasons.append(dlerror().map { String(cString: $0) } ?? "\(name): not found")
                    continue
                }
                do {
                    return .success(try CurlLibrary(library: library))
                } catch {
                    reasons.append(error.description)
                }
            }
            return .failure(LoadError(description: reasons.joined(separator: "; ")))
        }

        private init(library: UnsafeMutableRawPointer) throws(LoadError) {
            func symbol(_ name: String) throws(LoadError) -> UnsafeMutableRawPointer {
                guard let pointer = dlsym(library, name) else { throw LoadError(description: "libcurl has no \(name) (too old?)") }
                return pointer
            }
            func function<F>(_ name: String, as type: F.Type) throws(LoadError) -> F {
                unsafeBitCast(try symbol(name), to: type)
            }
            // curl_multi_poll and curl_multi_wakeup are the newest functions used (libcurl 7.68).
            let globalInit = try function("curl_global_init", as: (@convention(c) (Int) -> Int32).self)
            let versionString = try function("curl_version", as: (@convention(c) () -> UnsafePointer<CChar>?).self)
            easyInit = try function("curl_easy_init", as: (@convention(c) () -> Handle?).self)
            easyCleanup = try function("curl_easy_cleanup", as: (@convention(c) (Handle?) -> Void).self)
            easyReset = try function("curl_easy_reset", as: (@convention(c) (Handle?) -> Void).self)
            slistAppend = try function("curl_slist_append", as: (@convention(c) (Handle?, UnsafePointer<CChar>?) -> Handle?).self)
            slistFreeAll = try function("curl_slist_free_all", as: (@convention(c) (Handle?) -> Void).self)
            multiInit = try function("curl_multi_init", as: (@convention(c) () -> Handle?).self)
            multiCleanup = try function("curl_multi_cleanup", as: (@convention(c) (Handle?) -> Int32).self)
            multiAddHandle = try function("curl_multi_add_handle", as: (@convention(c) (Handle?, Handle?) -> Int32).self)
            multiRemoveHandle = try function("curl_multi_remove_handle", as: (@convention(c) (Handle?, Handle?) -> Int32).self)
            multiPerform = try function("curl_multi_perform", as: (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32).self)
            multiPoll = try function(
                "curl_multi_poll",
                as: (@convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32).self)
            multiWakeup = try function("curl_multi_wakeup", as: (@convention(c) (Handle?) -> Int32).self)
            multiInfoRead = try function(
                "curl_multi_info_read",
                as: (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutablePointer<conveyor_curl_message>?).self)
            easyStrerror = try function("curl_easy_strerror", as: (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
            easyPause = try function("curl_easy_pause", as: (@convention(c) (Handle?, Int32) -> Int32).self)
            easySetopt = try symbol("curl_easy_setopt")
            easyGetinfo = try symbol("curl_easy_getinfo")
            multiSetopt = try symbol("curl_multi_setopt")
            // Thread-safe since libcurl 7.84 and a no-op after the first call; FoundationNetworking
            // makes the same call.
            guard globalInit(CurlConstant.globalAll) == 0 else { throw LoadError(description: "curl_global_init failed") }
            version = versionString().map { String(cString: $0) } ?? "libcurl"
        }

        // MARK: - Variadic calls

        @discardableResult
        func setOption(_ handle: Handle, _ option: CurlOption, _ value: Int) -> Int32 {
            conveyor_curl_setopt_long(easySetopt, handle, option.rawValue, value)
        }

        @discardableResult
        func setOption(_ handle: Handle, _ option: CurlOption, _ value: Int64) -> Int32 {
            conveyor_curl_setopt_off_t(easySetopt, handle, option.rawValue, value)
        }

        @discardableResult
        func setOption(_ handle: Handle, _ option: CurlOption, pointer: UnsafeRawPointer?) -> Int32 {
            conveyor_curl_setopt_pointer(easySetopt, handle, option.rawValue, pointer)
        }

        /// Sets a string option; libcurl copies strings, so `value` need not outlive the call.
        @discardableResult
        func setOption(_ handle: Handle, _ option: CurlOption, _ value: String?) -> Int32 {
            guard let value else { return setOption(handle, option, pointer: nil) }
            return value.withCString { setOption(handle, option, pointer: $0) }
        }

        @discardableResult
        func setOption(_ handle: Handle, _ option: CurlOption, function: UnsafeRawPointer) -> Int32 {
            conveyor_curl_setopt_function(
                easySetopt, handle, option.rawValue, unsafeBitCast(function, to: (@convention(c) () -> Void).self))
        }

        @discardableResult
        func setMultiOption(_ handle: Handle, _ option: CurlMultiOption, _ value: Int) -> Int32 {
            conveyor_curl_setopt_long(multiSetopt, handle, option.rawValue, value)
        }

        func info(_ handle: Handle, long info: CurlInfo) -> Int? {
            var value = 0
            return conveyor_curl_getinfo_long(easyGetinfo, handle, info.rawValue, &value) == 0 ? value : nil
        }

        func info(_ handle: Handle, offset info: CurlInfo) -> Int64? {
            var value: Int64 = 0
            return conveyor_curl_getinfo_off_t(easyGetinfo, handle, info.rawValue, &value) == 0 ? value : nil
        }

        func info(_ handle: Handle, string info: CurlInfo) -> String? {
            var value: UnsafePointer<CChar>?
            guard conveyor_curl_getinfo_pointer(easyGetinfo, handle, info.rawValue, &value) == 0, let value else { return nil }
            return String(cString: value)
        }

        /// libcurl's description of a result code.
        func describe(_ code: Int32) -> String {
            easyStrerror(code).map { String(cString: $0) } ?? "libcurl error \(code)"
        }
    }
#endif
